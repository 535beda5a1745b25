package integration

import (
	"bufio"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

// logLines decodes a JSON log (slog.NewJSONHandler) into one map per line.
func logLines(t *testing.T, b *testdb.LockedBuffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(b.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := map[string]any{}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// matching are the lines whose attributes include every one of want.
func matching(lines []map[string]any, want map[string]string) []map[string]any {
	var out []map[string]any
next:
	for _, l := range lines {
		for k, v := range want {
			if fmt.Sprint(l[k]) != v {
				continue next
			}
		}
		out = append(out, l)
	}
	return out
}

func jsonLogger(b *testdb.LockedBuffer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(b, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// TestAuditLog: every admin statement and every SETVAL is logged once,
// after it ran, with who asked (account@host, session id, address), what
// (the statement, its tag) and how it ended: created, altered, dropped,
// unchanged when IF [NOT] EXISTS had nothing to do, denied for an account
// without admin: true, failed with the error code.
func TestAuditLog(t *testing.T) {
	backend := testdb.Start(t)
	cfg := leafConfig(t, backend, nil)
	cfg.Users = append(cfg.Users, config.User{Name: "ops", Password: "opspw", Admin: true})
	cfg.Sequences.Tags = map[string]config.Tag{"order": {Generator: "segment", Step: 100}}
	var logs testdb.LockedBuffer
	lf := startLeafLog(t, cfg, jsonLogger(&logs))
	app := lf.open(t, "", nil)
	ops, _ := sql.Open("mysql", "ops:opspw@tcp("+lf.addr+")/")
	t.Cleanup(func() { ops.Close() })

	type step struct {
		db        *sql.DB
		sql       string
		errCode   string // the error the client gets ("" none)
		action    string
		tag       string
		result    string
		level     string
		auditCode string // the code attribute ("" none)
	}
	steps := []step{
		{ops, "SELECT SETVAL('order', 5000)", "", "SETVAL", "order", "ok", "INFO", ""},
		{app, "SELECT SETVAL('order', 6000)", "1227", "SETVAL", "order", "denied", "WARN", "1227"},
		{ops, "CREATE LEAFPROXY SEQUENCE inv STEP 50", "", "CREATE LEAFPROXY SEQUENCE", "inv", "created", "INFO", ""},
		{ops, "CREATE LEAFPROXY SEQUENCE IF NOT EXISTS inv", "", "CREATE LEAFPROXY SEQUENCE", "inv", "unchanged", "INFO", ""},
		{ops, "CREATE LEAFPROXY SEQUENCE  inv", "1050", "CREATE LEAFPROXY SEQUENCE", "inv", "failed", "WARN", "1050"},
		{ops, "ALTER LEAFPROXY SEQUENCE inv STEP 70", "", "ALTER LEAFPROXY SEQUENCE", "inv", "altered", "INFO", ""},
		{ops, "DROP LEAFPROXY SEQUENCE inv", "", "DROP LEAFPROXY SEQUENCE", "inv", "dropped", "INFO", ""},
		{ops, "DROP LEAFPROXY SEQUENCE IF EXISTS inv", "", "DROP LEAFPROXY SEQUENCE", "inv", "unchanged", "INFO", ""},
		{ops, "DROP LEAFPROXY SEQUENCE  inv", "4091", "DROP LEAFPROXY SEQUENCE", "inv", "failed", "WARN", "4091"},
		{ops, "DROP LEAFPROXY SEQUENCE order", "1235", "DROP LEAFPROXY SEQUENCE", "order", "failed", "WARN", "1235"},
		{app, "CREATE LEAFPROXY SEQUENCE y", "1227", "CREATE LEAFPROXY SEQUENCE", "y", "denied", "WARN", "1227"},
		{ops, "SHOW LEAFPROXY SEQUENCES", "", "SHOW LEAFPROXY SEQUENCES", "", "ok", "INFO", ""},
	}
	for _, s := range steps {
		rows, err := s.db.Query(s.sql)
		if err == nil {
			rows.Close()
		}
		if got := myCodeOf(err); got != s.errCode {
			t.Fatalf("%s: error %v, want code %q", s.sql, err, s.errCode)
		}
	}
	var v int64
	if err := app.QueryRow("SELECT NEXTVAL('order')").Scan(&v); err != nil || v != 5001 {
		t.Fatalf("NEXTVAL after SETVAL(order, 5000): %d, %v", v, err)
	}

	lines := logLines(t, &logs)
	for _, s := range steps {
		who := "ops@127.0.0.1"
		user := "ops"
		if s.db == app {
			who, user = "app@127.0.0.1", "app"
		}
		want := map[string]string{"msg": "audit", "action": s.action, "result": s.result, "who": who, "user": user, "level": s.level}
		if s.tag != "" {
			want["tag"] = s.tag
		}
		if s.action != "SETVAL" {
			want["statement"] = s.sql // also tells apart the steps that look alike
		} else {
			want["value"] = strings.TrimSuffix(strings.Fields(s.sql)[2], ")")
		}
		if s.auditCode != "" {
			want["code"] = s.auditCode
		}
		got := matching(lines, want)
		if len(got) != 1 {
			t.Errorf("%s: %d audit lines with %v, want 1\n%s", s.sql, len(got), want, logs.String())
			continue
		}
		if _, ok := got[0]["session"]; !ok || !strings.HasPrefix(fmt.Sprint(got[0]["remote"]), "127.0.0.1:") {
			t.Errorf("%s: audit line %v lacks the session id or the client's address", s.sql, got[0])
		}
	}
	if n := len(matching(lines, map[string]string{"msg": "audit"})); n != len(steps) {
		t.Errorf("%d audit lines for %d statements:\n%s", n, len(steps), logs.String())
	}
}

// myCodeOf is err's MySQL error number as text ("" for none).
func myCodeOf(err error) string {
	if code, _ := myErr(err); code != 0 {
		return fmt.Sprint(code)
	}
	if err != nil {
		return "?" + err.Error()
	}
	return ""
}

// TestStoreOutageLoggedOnce: the allocation store going down and coming
// back is logged once each (error, then info), however many fetches
// fail in between; the failures themselves stay out of the info log.
func TestStoreOutageLoggedOnce(t *testing.T) {
	t.Parallel()
	backend := testdb.Start(t)
	store := testdb.Start(t)
	cfg := leafConfig(t, backend, store)
	cfg.Sequences.Tags = map[string]config.Tag{"order": {Generator: "segment", Step: 10}}
	cfg.Sequences.WaitTimeout = config.Duration(200 * time.Millisecond)
	var logs testdb.LockedBuffer
	lf := startLeafLog(t, cfg, jsonLogger(&logs))
	db := lf.open(t, "", nil)
	db.SetMaxOpenConns(1)
	nextval := func() error {
		var v int64
		return db.QueryRow("SELECT NEXTVAL('order')").Scan(&v)
	}
	for range 5 {
		if err := nextval(); err != nil {
			t.Fatal(err)
		}
	}
	count := func(msg string) int {
		return len(matching(logLines(t, &logs), map[string]string{"msg": msg}))
	}
	const down = "allocation store down: segment fetches fail; NEXTVAL and key filling go on from the buffered segments, then wait and fail until it answers"
	const up = "allocation store up: segment fetches succeed again"

	store.Stop(t)
	// Drain the buffers and keep asking: fetches fail, again and again.
	segs := lf.svc.Sequences.Segments()
	testwait.For(t, "fetches to fail with the store stopped", func() bool {
		_ = nextval()
		st, _ := segs.Stats("order")
		return st.FetchErrors >= 4
	}, testwait.Detail(logs.String))
	if n := count(down); n != 1 {
		t.Fatalf("%d 'store down' lines after several failed fetches, want 1:\n%s", n, logs.String())
	}
	if n := count(up); n != 0 {
		t.Fatalf("'store up' logged while it is down:\n%s", logs.String())
	}
	if n := count("segment fetch failed"); n != 0 {
		t.Errorf("%d fetch failures at info level or above, want them at debug level", n)
	}

	store.Restart(t)
	testwait.For(t, "NEXTVAL to recover after the store came back", func() bool { return nextval() == nil }, testwait.Detail(logs.String))
	for range 30 { // more fetches, all good
		if err := nextval(); err != nil {
			t.Fatal(err)
		}
	}
	lines := logLines(t, &logs)
	downs, ups := matching(lines, map[string]string{"msg": down}), matching(lines, map[string]string{"msg": up})
	if len(downs) != 1 || len(ups) != 1 {
		t.Fatalf("%d 'store down' and %d 'store up' lines, want 1 each:\n%s", len(downs), len(ups), logs.String())
	}
	if downs[0]["level"] != "ERROR" || ups[0]["level"] != "INFO" || downs[0]["tag"] != "order" || ups[0]["down_for"] == nil {
		t.Errorf("down %v, up %v: want ERROR with the tag, INFO with how long it lasted", downs[0], ups[0])
	}
}
