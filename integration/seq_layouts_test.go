package integration

import (
	"database/sql"
	"errors"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/allocator/snowflake"
	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
)

// Issue 20, item 3: per-tag snowflake layouts. A tag with layout js_safe
// issues IDs below 2^53 (JavaScript numbers hold them exactly) that decode
// with that layout, beside a tag of the global layout in the same proxy;
// each layout has its own generator and worker id; the store records each
// tag's layout, and a proxy that gives a tag another one is refused.

// layoutConfig is a proxy in front of backend with an admin account and
// the snowflake tags web (js_safe) and s (the global layout).
func layoutConfig(t *testing.T, backend *testdb.Server) *config.Config {
	cfg := leafConfig(t, backend, nil)
	cfg.Users = append(cfg.Users, config.User{Name: "ops", Password: "opspw", Admin: true})
	cfg.Sequences.Tags = map[string]config.Tag{
		"web": {Generator: "snowflake", TagLayout: config.TagLayout{Layout: "js_safe"}},
		"s":   {Generator: "snowflake"},
	}
	return cfg
}

// opsDB is a go-sql-driver pool through lf as the admin account ops.
func opsDB(t *testing.T, lf *leaf) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", "ops:opspw@tcp("+lf.addr+")/")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// seqRow is tag's row of SHOW LEAFPROXY SEQUENCES.
func seqRow(t *testing.T, ops *sql.DB, tag string) map[string]string {
	t.Helper()
	for _, r := range queryMaps(t, ops, "SHOW LEAFPROXY SEQUENCES") {
		if r["tag"] == tag {
			return r
		}
	}
	return nil
}

// cliQuery runs q with the mariadb CLI through addr as user and returns
// its output: batch mode without column names, unless flags say otherwise
// (skipping the test without the CLI).
func cliQuery(t *testing.T, addr, user, password, q string, flags ...string) string {
	t.Helper()
	cli, err := exec.LookPath("mariadb")
	if err != nil {
		t.Skipf("mariadb CLI not installed: %v", err)
	}
	host, port, _ := net.SplitHostPort(addr)
	if len(flags) == 0 {
		flags = []string{"-N", "-B"}
	}
	args := append([]string{"--no-defaults", "-h" + host, "-P" + port, "-u" + user, "-p" + password}, flags...)
	out, err := exec.Command(cli, append(args, "-e", q)...).CombinedOutput()
	if err != nil {
		t.Fatalf("mariadb -e %q: %v\n%s", q, err, out)
	}
	return string(out)
}

func TestJSSafeTagLayout(t *testing.T) {
	backend := testdb.Start(t)
	backend.Exec(t, "CREATE DATABASE shop")
	backend.Exec(t, "CREATE TABLE shop.web_orders (id BIGINT PRIMARY KEY, item VARCHAR(20))")
	cfg := layoutConfig(t, backend)
	cfg.Tables = []config.Table{{Table: "shop.web_orders", Column: "id", Tag: "web"}}
	lf := startLeaf(t, cfg)
	app := lf.open(t, "", nil)
	js := snowflake.JSSafeLayout()

	start := time.Now()
	var prev int64
	for i := range 3000 {
		var id int64
		if err := app.QueryRow("SELECT NEXTVAL('web')").Scan(&id); err != nil {
			t.Fatal(err)
		}
		if id <= prev || id >= 1<<53 {
			t.Fatalf("id %d: %d after %d, want increasing and below 2^53", i, id, prev)
		}
		prev = id
		p := js.Decode(id)
		if p.Worker != 0 || p.Time.Before(start.Add(-time.Second)) || p.Time.After(time.Now().Add(time.Second)) {
			t.Fatalf("id %d decodes under js_safe to %+v (started %v)", id, p, start)
		}
	}
	var s int64
	if err := app.QueryRow("SELECT NEXTVAL('s')").Scan(&s); err != nil || s < 1<<53 {
		t.Fatalf("global-layout tag: %d, %v; want a 41/10/12 ID above 2^53", s, err)
	}
	if _, err := app.Exec("INSERT INTO shop.web_orders (item) VALUES ('a'), ('b')"); err != nil {
		t.Fatal(err)
	}
	var maxKey int64
	backend.Open(t, "shop").QueryRow("SELECT MAX(id) FROM web_orders").Scan(&maxKey)
	if maxKey <= prev || maxKey >= 1<<53 {
		t.Fatalf("filled key %d: want a js_safe ID above %d", maxKey, prev)
	}

	// LEAFPROXY_DECODE takes a js_safe ID apart under the tag's own
	// layout (41/5/7), a global-layout ID under 41/10/12.
	dec := lf.open(t, "", map[string]string{"parseTime": "true"})
	var created time.Time
	var worker, seq int64
	if err := dec.QueryRow("SELECT LEAFPROXY_DECODE('web', ?)", prev).Scan(new(string), new(string), new(int64), &created, &worker, &seq, new(any), new(any)); err != nil {
		t.Fatal(err)
	}
	if p := js.Decode(prev); worker != p.Worker || seq != p.Sequence || !created.Equal(p.Time) {
		t.Fatalf("LEAFPROXY_DECODE('web', %d): %v worker %d seq %d, want %+v", prev, created, worker, seq, p)
	}
	if err := dec.QueryRow("SELECT LEAFPROXY_DECODE('s', ?)", s).Scan(new(string), new(string), new(int64), &created, &worker, &seq, new(any), new(any)); err != nil {
		t.Fatal(err)
	}
	if p := snowflake.DefaultLayout().Decode(s); worker != p.Worker || seq != p.Sequence {
		t.Fatalf("LEAFPROXY_DECODE('s', %d): worker %d seq %d, want %+v", s, worker, seq, p)
	}

	// The mariadb CLI prints the number as it is.
	out := strings.TrimSpace(cliQuery(t, lf.addr, "app", "secret", "SELECT NEXTVAL('web')"))
	if v, err := strconv.ParseInt(out, 10, 64); err != nil || v <= maxKey || v >= 1<<53 || js.Decode(v).Worker != 0 {
		t.Fatalf("CLI NEXTVAL('web'): %q", out)
	}

	// The store: each tag's layout, and js_safe's worker ids in their own space.
	store := backend.Open(t, "leafproxy")
	for tag, want := range map[string][3]int{"web": {41, 5, 7}, "s": {41, 10, 12}} {
		var tb, wb, sb int
		if err := store.QueryRow("SELECT time_bits, worker_bits, sequence_bits FROM leaf_snowflake_layout WHERE name = ?", "tag:"+tag).Scan(&tb, &wb, &sb); err != nil ||
			[3]int{tb, wb, sb} != want {
			t.Errorf("row tag:%s: %d/%d/%d %v, want %v", tag, tb, wb, sb, err, want)
		}
	}
	var n int
	store.QueryRow("SELECT COUNT(*) FROM leaf_worker_layout WHERE layout = ? AND owner <> ''", snowflake.LayoutKey(js)).Scan(&n)
	if n != 1 {
		t.Errorf("%d live js_safe leases, want this proxy's", n)
	}

	ops := opsDB(t, lf)
	if r := seqRow(t, ops, "web"); r == nil || !strings.HasPrefix(r["layout"], "js_safe 41/5/7 x 1ms, epoch 2020-01-01T00:00:00Z") || r["worker_id"] != "0" {
		t.Errorf("SHOW row of web: %v", r)
	}
	if r := seqRow(t, ops, "s"); r == nil || !strings.HasPrefix(r["layout"], "default 41/10/12 x 1ms") {
		t.Errorf("SHOW row of s: %v", r)
	}
	st := lf.svc.Status(t.Context())
	for _, ts := range st.Tags {
		if ts.Tag == "web" && (!strings.HasPrefix(ts.Layout, "js_safe 41/5/7") || ts.WorkerID == nil || *ts.WorkerID != 0) {
			t.Errorf("status of web: %+v", ts)
		}
	}
	if len(st.SnowflakeLayouts) != 2 {
		t.Errorf("status: %d snowflake layouts, want 2: %+v", len(st.SnowflakeLayouts), st.SnowflakeLayouts)
	}
}

// TestTagLayoutMismatchRefused: a second proxy that gives tag web another
// layout (here the global one) is refused at start, naming the tag, both
// layouts and the proxy that recorded the store's; it takes no worker id,
// and the first keeps serving.
func TestTagLayoutMismatchRefused(t *testing.T) {
	t.Parallel()
	backend := testdb.Start(t)
	a := startLeaf(t, layoutConfig(t, backend))
	var id int64
	if err := a.open(t, "", nil).QueryRow("SELECT NEXTVAL('web')").Scan(&id); err != nil {
		t.Fatal(err)
	}
	cfg := layoutConfig(t, backend)
	cfg.Sequences.Tags["web"] = config.Tag{Generator: "snowflake"}
	_, err := newLeaf(t, cfg)
	if !errors.Is(err, snowflake.ErrLayoutMismatch) {
		t.Fatalf("second proxy with web on 41/10/12: %v", err)
	}
	for _, want := range []string{
		"tag 'web': snowflake layout 41/10/12 x 1ms, epoch 2020-01-01T00:00:00Z (this proxy's snowflake section, which sequences.tags.web uses)",
		"differs from 41/5/7 x 1ms, epoch 2020-01-01T00:00:00Z recorded in the store (leaf_snowflake_layout 'tag:web', by ",
		"worker ids held now: 0 by ",
		"give tag 'web' the recorded layout in sequences.tags.web",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal does not say %q:\n%v", want, err)
		}
	}
	t.Logf("refused: %v", err)
	var n int
	backend.Open(t, "leafproxy").QueryRow("SELECT (SELECT COUNT(*) FROM leaf_worker) + (SELECT COUNT(*) FROM leaf_worker_layout)").Scan(&n)
	if n != 2 {
		t.Errorf("%d lease rows, want the first proxy's two (one per layout)", n)
	}
	var next int64
	if err := a.open(t, "", nil).QueryRow("SELECT NEXTVAL('web')").Scan(&next); err != nil || next <= id {
		t.Errorf("first proxy after the refusal: %d, %v", next, err)
	}
}
