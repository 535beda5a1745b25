package integration

import (
	"bufio"
	"database/sql"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

// Issue 9, item 7: tag names outside latin1, names that cannot be tags,
// and what they do to /metrics.

// storeUpdates is the store server's count of UPDATE statements so far.
func storeUpdates(t *testing.T, db *sql.DB) int64 {
	t.Helper()
	var name string
	var n int64
	if err := db.QueryRow("SHOW GLOBAL STATUS LIKE 'Com_update'").Scan(&name, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestTagNamesUTF8: on a server whose default charset is latin1 (the test
// servers', and many installations'), a tag '订单' used to cost
// wait_timeout and ~7 failing store UPDATEs per request, then 1105.
// Now: unknown non-latin1 tags answer 4091 at once with at most one UPDATE,
// configured and auto-created ones work, and bad names get a clear error.
func TestTagNamesUTF8(t *testing.T) {
	backend := testdb.Start(t)
	cfg := leafConfig(t, backend, nil)
	cfg.Users[0].Admin = true // for the SETVAL cases
	// Long, so that "waited for wait_timeout" stays apart from a slow
	// answer on a loaded machine.
	cfg.Sequences.WaitTimeout = config.Duration(30 * time.Second)
	cfg.Sequences.Tags = map[string]config.Tag{"订单": {Generator: "segment", Step: 10}}
	cfg.Metrics.Listen = "127.0.0.1:0"
	lf := startLeaf(t, cfg)
	db := lf.open(t, "", map[string]string{"interpolateParams": "true"})
	db.SetMaxOpenConns(1)
	direct := backend.Open(t, "")

	// A configured tag made by init.
	for want := int64(1); want <= 25; want++ {
		var id int64
		if err := db.QueryRow("SELECT NEXTVAL('订单')").Scan(&id); err != nil {
			t.Fatalf("NEXTVAL('订单'): %v", err)
		}
		if id != want {
			t.Fatalf("NEXTVAL('订单') = %d, want %d", id, want)
		}
	}

	// An unknown one: 4091 at once, not after wait_timeout. First let the
	// prefetch of 订单's next segment finish: its UPDATE is not the one
	// counted here.
	testwait.For(t, "the prefetch of 订单's next segment", func() bool {
		st, ok := lf.svc.Sequences.Segments().Stats("订单")
		return ok && st.NextReady && !st.Loading
	})
	before := storeUpdates(t, direct)
	start := time.Now()
	_, err := db.Exec("SELECT NEXTVAL('用户')")
	took := time.Since(start)
	if code, state := myErr(err); code != 4091 || state != "42S02" || !strings.Contains(err.Error(), "'用户'") {
		t.Errorf("NEXTVAL of an unknown non-latin1 tag: %v, want 4091 42S02 Unknown SEQUENCE: '用户'", err)
	}
	if took >= cfg.Sequences.WaitTimeout.D() {
		t.Errorf("unknown tag answered after %v: it waited for wait_timeout instead of answering at once", took)
	}
	if n := storeUpdates(t, direct) - before; n > 1 {
		t.Errorf("unknown tag cost %d store UPDATEs, want at most 1", n)
	}

	// Names that cannot be tags: refused before the store, each with its error.
	long := strings.Repeat("标", 129)
	for _, tc := range []struct {
		sql   string
		code  uint16
		state string
		say   string
	}{
		{"SELECT NEXTVAL('')", 1103, "42000", "must not be empty"},
		{"SELECT NEXTVAL('" + long + "')", 1059, "42000", "at most 128 characters"},
		{"SELECT NEXTVAL('ab\xff\xfe')", 1300, "HY000", `ab\xFF\xFE`},
		{"SELECT SETVAL('\xc3', 5)", 1300, "HY000", `\xC3`},
		{"SELECT SETVAL('', 5)", 1103, "42000", "must not be empty"},
	} {
		before := storeUpdates(t, direct)
		_, err := db.Exec(tc.sql)
		if code, state := myErr(err); code != tc.code || state != tc.state || !strings.Contains(err.Error(), tc.say) {
			t.Errorf("%q: %v (%d %s), want %d %s saying %q", tc.sql, err, code, state, tc.code, tc.state, tc.say)
		}
		if n := storeUpdates(t, direct) - before; n != 0 {
			t.Errorf("%q cost %d store UPDATEs, want none", tc.sql, n)
		}
	}

	scrapeTags(t, lf, "订单")
}

// TestMetricsAfterBadTagNames: SELECT NEXTVAL('<invalid UTF-8>') used to
// make /metrics answer HTTP 500 until restart (the name became a label).
// Names never created do not enter metrics at all.
func TestMetricsAfterBadTagNames(t *testing.T) {
	backend := testdb.Start(t)
	cfg := leafConfig(t, backend, nil)
	cfg.Sequences.Tags = map[string]config.Tag{"order": {Generator: "segment"}}
	cfg.Metrics.Listen = "127.0.0.1:0"
	lf := startLeaf(t, cfg)
	db := lf.open(t, "", map[string]string{"interpolateParams": "true"})
	var id int64
	if err := db.QueryRow("SELECT NEXTVAL('order')").Scan(&id); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"SELECT NEXTVAL('ab\xff\xfe')", "SELECT NEXTVAL('\xc3')", "SELECT NEXTVAL('用户')", "SELECT NEXTVAL('nosuch')"} {
		if _, err := db.Exec(q); err == nil {
			t.Errorf("%q: no error", q)
		}
	}
	scrapeTags(t, lf, "order")
}

// scrapeTags checks that /metrics answers 200 with a fetches series for
// the tag want and none for the names the tests made up.
func scrapeTags(t *testing.T, lf *leaf, want string) {
	t.Helper()
	resp, err := http.Get("http://" + lf.svc.MetricsAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics after bad tag names: %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	saw := false
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, `tag="用户"`) || strings.Contains(line, `tag="ab`) || strings.Contains(line, "标标") || strings.Contains(line, "nosuch") {
			t.Errorf("metrics series for a tag that was never created: %s", line)
		}
		if strings.HasPrefix(line, `leafproxy_segment_fetches_total{tag="`+want+`"}`) {
			saw = true
		}
	}
	if !saw {
		t.Errorf("no fetches series for the configured tag %s", want)
	}
}

// TestTagNamesAutoCreate: with auto_create, a non-latin1 tag of 128
// characters (384 bytes) is created on first use.
func TestTagNamesAutoCreate(t *testing.T) {
	backend := testdb.Start(t)
	cfg := leafConfig(t, backend, nil)
	cfg.Sequences.AutoCreate = true
	lf := startLeaf(t, cfg)
	db := lf.open(t, "", nil)
	tag := strings.Repeat("标", 128)
	for _, q := range []string{"SELECT NEXTVAL('订单')", "SELECT NEXTVAL('" + tag + "')", "SELECT NEXTVAL('😀')"} {
		var a, b int64
		if err := db.QueryRow(q).Scan(&a); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if err := db.QueryRow(q).Scan(&b); err != nil || b != a+1 {
			t.Fatalf("%s twice: %d then %d, %v", q, a, b, err)
		}
	}
	var n int
	if err := backend.Open(t, "leafproxy").QueryRow("SELECT COUNT(*) FROM leaf_alloc WHERE biz_tag IN ('订单', ?, '😀')", tag).Scan(&n); err != nil || n != 3 {
		t.Errorf("leaf_alloc rows for the new tags: %d, %v; want 3", n, err)
	}
}

// TestStoreMigratedToUTF8: a store created by Leaf's own DDL (no charset:
// latin1 here) is converted on start-up, idempotently, keeping its rows.
func TestStoreMigratedToUTF8(t *testing.T) {
	backend := testdb.Start(t)
	backend.Exec(t, "CREATE DATABASE leafproxy",
		"CREATE TABLE leafproxy.leaf_alloc (biz_tag varchar(128) NOT NULL DEFAULT '', max_id bigint(20) NOT NULL DEFAULT '1', "+
			"step int(11) NOT NULL, description varchar(256) DEFAULT NULL, "+
			"update_time timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP, PRIMARY KEY (biz_tag)) ENGINE=InnoDB",
		"INSERT INTO leafproxy.leaf_alloc (biz_tag, max_id, step) VALUES ('legacy', 777, 100)")
	cfg := leafConfig(t, backend, nil)
	cfg.Sequences.AutoCreate = true
	for round := range 2 { // the second start finds nothing to convert
		lf := startLeaf(t, cfg)
		db := lf.open(t, "", nil)
		var id int64
		if err := db.QueryRow("SELECT NEXTVAL('legacy')").Scan(&id); err != nil || id != 777+int64(round)*100 {
			t.Errorf("start %d: NEXTVAL('legacy') = %d, %v; want %d", round, id, err, 777+round*100)
		}
		if err := db.QueryRow("SELECT NEXTVAL('订单')").Scan(&id); err != nil {
			t.Errorf("start %d: NEXTVAL('订单') after conversion: %v", round, err)
		}
		lf.stop()
	}
	var coll string
	if err := backend.Open(t, "").QueryRow("SELECT TABLE_COLLATION FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'leafproxy' AND TABLE_NAME = 'leaf_alloc'").Scan(&coll); err != nil || coll != "utf8mb4_bin" {
		t.Errorf("leaf_alloc collation %q, %v; want utf8mb4_bin", coll, err)
	}
}
