package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/leafproxy/leafproxy/internal/sqltext"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/allocator"
	"github.com/leafproxy/leafproxy/allocator/runway"
	"github.com/leafproxy/leafproxy/allocator/segment"
	"github.com/leafproxy/leafproxy/allocator/snowflake"
	"github.com/leafproxy/leafproxy/internal/nonblock"
	"github.com/leafproxy/leafproxy/internal/testkit/fakestore"
	"github.com/leafproxy/leafproxy/proxy"
)

// Unit tests of the admin statements over a real allocator on the
// in-memory store of internal/testkit/fakestore and a fake session: no MariaDB,
// no network (the integration tests run them through the proxy).

// fakeSession records what a statement answered and logged.
type fakeSession struct {
	admin        bool
	user, remote string
	log          *slog.Logger
	logs         *bytes.Buffer

	mu       sync.Mutex
	oks      [][3]uint64 // affected, insert id, warnings
	cols     []string
	rows     [][]*string
	execs    []string
	queries  []string
	backend  func(sql string) ([][]*string, error) // answers BackendQuery
	wroteSet bool
}

func newSession(admin bool) *fakeSession {
	var b bytes.Buffer
	return &fakeSession{admin: admin, user: "bob", remote: "10.0.0.1:5000", logs: &b,
		log: slog.New(slog.NewJSONHandler(&b, &slog.HandlerOptions{Level: slog.LevelDebug}))}
}

func (f *fakeSession) Admin() bool          { return f.admin }
func (f *fakeSession) User() string         { return f.user }
func (f *fakeSession) RemoteAddr() string   { return f.remote }
func (f *fakeSession) Who() string          { return f.user + "@10.0.0.1" }
func (f *fakeSession) Logger() *slog.Logger { return f.log }
func (f *fakeSession) WriteOK(affected, insertID uint64, warnings uint16) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.oks = append(f.oks, [3]uint64{affected, insertID, uint64(warnings)})
	return nil
}
func (f *fakeSession) WriteTextResultSet(cols []string, rows [][]*string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cols, f.rows, f.wroteSet = cols, rows, true
	return nil
}

// Blocking hands out the fake's BackendExec and BackendQuery, off an
// event loop only, as proxy.Session does.
func (f *fakeSession) Blocking(ctx context.Context) (proxy.BlockingSession, error) {
	if proxy.MustNotBlock(ctx) {
		return nil, proxy.ErrWouldBlock
	}
	return fakeBlocking{f: f}, nil
}

// fakeBlocking is the fake's BlockingSession: the two calls admin uses
// (any other panics on the nil interface).
type fakeBlocking struct {
	proxy.BlockingSession
	f *fakeSession
}

func (b fakeBlocking) BackendExec(ctx context.Context, sql string) (uint64, uint64, error) {
	return b.f.BackendExec(ctx, sql)
}
func (b fakeBlocking) BackendQuery(ctx context.Context, sql string) ([][]*string, error) {
	return b.f.BackendQuery(ctx, sql)
}

func (f *fakeSession) BackendExec(ctx context.Context, sql string) (uint64, uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.execs = append(f.execs, sql)
	return 0, 0, nil
}
func (f *fakeSession) BackendQuery(ctx context.Context, sql string) ([][]*string, error) {
	f.mu.Lock()
	f.queries = append(f.queries, sql)
	answer := f.backend
	f.mu.Unlock()
	if answer == nil {
		return nil, errors.New("no backend")
	}
	return answer(sql)
}

// audits are the session's audit log lines.
func (f *fakeSession) audits(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(f.logs.Bytes()), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["msg"] == "audit" {
			out = append(out, m)
		}
	}
	return out
}

// fixture is an admin interceptor over an allocator on a fake store:
// configured segment tag "seg", snowflake tag "snow", a rule filling
// orders.id from "ord".
type fixture struct {
	a   *Interceptor
	seq *allocator.Sequences
	st  *fakestore.Store
	cfg allocator.Config
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	cfg := allocator.Config{
		Owner: "test",
		Tags: map[string]allocator.Tag{
			"seg":  {Generator: allocator.GeneratorSegment, Step: 10},
			"snow": {Generator: allocator.GeneratorSnowflake, Layout: snowflake.DefaultLayout()},
		},
		Rules:     []allocator.Rule{{Table: "orders", Column: "id", Tag: "ord"}},
		Snowflake: allocator.Snowflake{Layout: snowflake.DefaultLayout(), LeaseWorkerID: true},
	}
	st := fakestore.New()
	st.Segments.Put("seg", fakestore.Row{MaxID: 1, Step: 10})
	st.Segments.Put("ord", fakestore.Row{MaxID: 1, Step: 10})
	seq, err := allocator.Open(context.Background(), cfg, nil, st.Options(allocator.KeyServer{Addr: "backend", Keys: &fakestore.Keys{}})...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { seq.Close() })
	a := New(proxy.BaseInterceptor{}, seq, func() *allocator.Config { return &cfg })
	a.now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	return &fixture{a: a, seq: seq, st: st, cfg: cfg}
}

// exec runs one admin statement in s.
func (f *fixture) exec(t *testing.T, s *fakeSession, sql string) error {
	t.Helper()
	st, ok := parseText([]byte(sql))
	if !ok {
		t.Fatalf("%q is not an admin statement", sql)
	}
	_, err := f.a.answer(context.Background(), s, st, []byte(sql))
	return err
}

func cell(row []*string, col string) string {
	i := slices.Index(sequenceColumns, col)
	if row[i] == nil {
		return "NULL"
	}
	return *row[i]
}

func byTag(rows [][]*string) map[string][]*string {
	m := map[string][]*string{}
	for _, r := range rows {
		m[*r[0]] = r
	}
	return m
}

// TestShowSequences: one row per tag this proxy knows (configured, rule,
// the store's leaf_alloc rows and snowflake rows), sorted, with the
// buffers, the store's row, the layout and the runway.
func TestShowSequences(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.st.Segments.Put("legacy", fakestore.Row{MaxID: 500, Step: 7, MaxValue: 900, Description: "imported"})
	f.st.Snowflakes.PutTag("sqlsnow", snowflake.JSSafeLayout(), "created by ann on another proxy")
	if _, err := f.seq.Next(ctx, "seg"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.seq.Next(ctx, "snow"); err != nil {
		t.Fatal(err)
	}
	f.a.SetRunway(func(tag string) (runway.Estimate, bool) {
		if tag != "seg" {
			return runway.Estimate{}, false
		}
		return runway.Estimate{Tag: tag, Generator: "segment", IDsLeft: 42, PerSecond: 1.5, LimitedBy: "db.t.id int", Level: runway.LevelLow}, true
	})
	s := newSession(true)
	if err := f.exec(t, s, "SHOW LEAFPROXY SEQUENCES"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.cols, sequenceColumns) {
		t.Fatalf("columns %v", s.cols)
	}
	var tags []string
	for _, r := range s.rows {
		tags = append(tags, *r[0])
	}
	if !slices.Equal(tags, []string{"legacy", "ord", "seg", "snow", "sqlsnow"}) {
		t.Fatalf("tags %v", tags)
	}
	rows := byTag(s.rows)
	for tag, want := range map[string]map[string]string{
		"seg": {"generator": "segment", "last_value": "1", "next_value": "2", "step": "10", "store_max_id": "11", "fetches": "1",
			"ids_left": "42", "ids_per_second": "1.500", "limited_by": "db.t.id int", "end": "near end: under 10% left", "max_value": "NULL"},
		"legacy": {"generator": "segment", "store_max_id": "500", "step": "7", "max_value": "900", "description": "imported", "last_value": "NULL"},
		"ord":    {"generator": "segment", "store_max_id": "1", "fetches": "NULL"},
		"snow":   {"generator": "snowflake", "worker_id": "0", "fenced": "NO", "lease_lost": "NO", "layout": LayoutText(snowflake.DefaultLayout()), "step": "NULL"},
		"sqlsnow": {"generator": "snowflake", "layout": LayoutText(snowflake.JSSafeLayout()), "description": "created by ann on another proxy",
			"worker_id": "NULL"},
	} {
		for col, v := range want {
			if got := cell(rows[tag], col); got != v {
				t.Errorf("%s %s: %q, want %q", tag, col, got, v)
			}
		}
	}
	if a := s.audits(t); len(a) != 1 || a[0]["action"] != "SHOW LEAFPROXY SEQUENCES" || a[0]["result"] != "ok" || a[0]["who"] != "bob@10.0.0.1" {
		t.Errorf("audit %v", a)
	}

	// The store down: the rows this proxy knows, the store's error on them.
	f.st.Segments.SetFail(errors.New("store down"))
	s = newSession(true)
	if err := f.exec(t, s, "SHOW LEAFPROXY SEQUENCES"); err != nil {
		t.Fatal(err)
	}
	if r := byTag(s.rows)["ord"]; r == nil || !strings.Contains(cell(r, "last_error"), "read leaf_alloc: store down") {
		t.Errorf("ord with the store down: %v", r)
	}
}

// TestShowSequencesFilter: LIKE and WHERE are sent to the backend over
// the rows as literals, and the rows it picks are answered.
func TestShowSequencesFilter(t *testing.T) {
	f := newFixture(t)
	s := newSession(true)
	s.backend = func(sql string) ([][]*string, error) { one := "1"; return [][]*string{{&one}}, nil }
	if err := f.exec(t, s, "SHOW LEAFPROXY SEQUENCES WHERE generator = 'segment' AND step > 5"); err != nil {
		t.Fatal(err)
	}
	if len(s.rows) != 1 || *s.rows[0][0] != "seg" {
		t.Errorf("rows %v", s.rows)
	}
	q := s.queries[0]
	for _, want := range []string{"WHERE (generator = 'segment' AND step > 5)", "SELECT 0 AS `__leafproxy_row`, _utf8mb4 X'6f7264' AS `tag`",
		"SELECT 1, _utf8mb4 X'736567', ", "SELECT 2, _utf8mb4 X'736e6f77', ", "AS `max_value`"} {
		if !strings.Contains(q, want) {
			t.Errorf("backend query lacks %q: %s", want, q)
		}
	}
	s = newSession(true)
	s.backend = func(sql string) ([][]*string, error) { bad := "99"; return [][]*string{{&bad}}, nil }
	if err := f.exec(t, s, "SHOW LEAFPROXY SEQUENCES LIKE 'se%'"); err == nil || s.wroteSet {
		t.Errorf("a row index the rows do not have: %v", err)
	}
	if !strings.Contains(s.queries[0], "WHERE (`tag` LIKE 'se%')") {
		t.Errorf("LIKE: %s", s.queries[0])
	}
}

// TestShowSessions: the proxy's sessions by id, a session without a
// database NULL there.
func TestShowSessions(t *testing.T) {
	f := newFixture(t)
	f.a.SetSessions(func() []proxy.SessionInfo {
		return []proxy.SessionInfo{{ID: 9, ThreadID: 90, User: "b", DB: "shop", Since: time.Now()}, {ID: 2, ThreadID: 20, User: "a"}}
	})
	s := newSession(true)
	if err := f.exec(t, s, "SHOW LEAFPROXY SESSIONS"); err != nil {
		t.Fatal(err)
	}
	if len(s.rows) != 2 || *s.rows[0][0] != "2" || *s.rows[0][1] != "20" || s.rows[0][4] != nil || *s.rows[1][4] != "shop" {
		t.Errorf("rows %v", s.rows)
	}
}

// TestCreateAlterDrop: the lifecycle statements change the store as they
// say, refuse what the configuration uses, answer IF [NOT] EXISTS with a
// warning left for SHOW WARNINGS, and are each audited.
func TestCreateAlterDrop(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s := newSession(true)
	mustOK := func(sql string) {
		t.Helper()
		if err := f.exec(t, s, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	fails := func(sql string, code uint16, text string) {
		t.Helper()
		err := f.exec(t, s, sql)
		if errCode(err) != code || !strings.Contains(err.Error(), text) {
			t.Errorf("%s: %v, want %d with %q", sql, err, code, text)
		}
	}
	mustOK("CREATE LEAFPROXY SEQUENCE t1 START WITH 100 STEP 5")
	r, ok := f.st.Segments.Get("t1")
	if !ok || r.MaxID != 100 || r.Step != 5 || r.Description != "created by bob@10.0.0.1 with CREATE LEAFPROXY SEQUENCE at 2026-01-02 03:04:05 UTC" {
		t.Fatalf("t1: %+v %v", r, ok)
	}
	if v, err := f.seq.Next(ctx, "t1"); v != 100 || err != nil {
		t.Errorf("t1 first ID: %d %v", v, err)
	}
	fails("CREATE LEAFPROXY SEQUENCE t1", mysql.ER_TABLE_EXISTS_ERROR, "a segment sequence")
	mustOK("CREATE LEAFPROXY SEQUENCE IF NOT EXISTS t1 STEP 9")
	if last := s.oks[len(s.oks)-1]; last[2] != 1 || len(s.execs) != 1 || !strings.Contains(s.execs[0], "SIGNAL SQLSTATE '01000' SET MYSQL_ERRNO = 1050") {
		t.Errorf("IF NOT EXISTS: OK %v, backend %v", last, s.execs)
	}
	if r, _ := f.st.Segments.Get("t1"); r.Step != 5 {
		t.Errorf("IF NOT EXISTS changed the row: %+v", r)
	}

	mustOK("CREATE LEAFPROXY SEQUENCE sf SNOWFLAKE LAYOUT js_safe")
	recs, _ := f.st.Snowflakes.TagLayouts(ctx)
	if rec, ok := recs["sf"]; !ok || !snowflake.SameLayout(rec.Layout, snowflake.JSSafeLayout()) || !strings.Contains(rec.Description, "... SNOWFLAKE") {
		t.Fatalf("sf: %+v %v", rec, ok)
	}
	if f.seq.Generator("sf") != "snowflake" {
		t.Errorf("sf not served as snowflake")
	}
	fails("CREATE LEAFPROXY SEQUENCE sf2 SNOWFLAKE LAYOUT (41, 99, 12)", mysql.ER_WRONG_ARGUMENTS, "bits are 0 to 63")
	fails("CREATE LEAFPROXY SEQUENCE seg SNOWFLAKE", mysql.ER_TABLE_EXISTS_ERROR, "a segment sequence in this proxy's configuration")
	fails("CREATE LEAFPROXY SEQUENCE snow", mysql.ER_NOT_SUPPORTED_YET, "sequences.tags.snow")

	mustOK("ALTER LEAFPROXY SEQUENCE t1 STEP 50")
	if r, _ := f.st.Segments.Get("t1"); r.Step != 50 {
		t.Errorf("ALTER STEP: %+v", r)
	}
	mustOK("ALTER LEAFPROXY SEQUENCE t1 MAXVALUE 5000")
	if r, _ := f.st.Segments.Get("t1"); r.MaxValue != 5000 {
		t.Errorf("ALTER MAXVALUE: %+v", r)
	}
	fails("ALTER LEAFPROXY SEQUENCE sf STEP 5", 1235, "snowflake")
	fails("ALTER LEAFPROXY SEQUENCE snow STEP 5", mysql.ER_NOT_SUPPORTED_YET, "sequences.tags.snow")
	fails("ALTER LEAFPROXY SEQUENCE nope STEP 5", segment.ErrCodeUnknownSequence, "nope")

	fails("DROP LEAFPROXY SEQUENCE ord", mysql.ER_NOT_SUPPORTED_YET, "tables[0] (orders, column id)")
	fails("DROP LEAFPROXY SEQUENCE seg", mysql.ER_NOT_SUPPORTED_YET, "sequences.tags.seg")
	if _, ok := f.st.Segments.Get("ord"); !ok {
		t.Fatalf("a rule's tag dropped")
	}
	mustOK("DROP LEAFPROXY SEQUENCE t1")
	mustOK("DROP LEAFPROXY SEQUENCE sf")
	if _, ok := f.st.Segments.Get("t1"); ok {
		t.Errorf("t1 still in leaf_alloc")
	}
	if recs, _ := f.st.Snowflakes.TagLayouts(ctx); len(recs) != 1 || recs["snow"].Name != "snow" {
		t.Errorf("snowflake rows: %v, want the configured snow's alone", recs)
	}
	if _, err := f.seq.Next(ctx, "t1"); errCode(err) != segment.ErrCodeUnknownSequence {
		t.Errorf("t1 after DROP: %v", err)
	}
	fails("DROP LEAFPROXY SEQUENCE t1", segment.ErrCodeUnknownSequence, "t1")
	mustOK("DROP LEAFPROXY SEQUENCE IF EXISTS t1")

	f.st.Segments.SetFail(errors.New("store down"))
	err := f.exec(t, s, "CREATE LEAFPROXY SEQUENCE t2")
	if err == nil || !strings.HasPrefix(err.Error(), "create sequence 't2': ") || !strings.Contains(err.Error(), "store down") {
		t.Errorf("CREATE with the store down: %v", err)
	}
	f.st.Segments.SetFail(nil)

	var results []string
	for _, a := range s.audits(t) {
		results = append(results, a["action"].(string)+" "+a["tag"].(string)+" "+a["result"].(string))
	}
	want := []string{
		"CREATE LEAFPROXY SEQUENCE t1 created", "CREATE LEAFPROXY SEQUENCE t1 failed", "CREATE LEAFPROXY SEQUENCE t1 unchanged",
		"CREATE LEAFPROXY SEQUENCE sf created", "CREATE LEAFPROXY SEQUENCE sf2 failed", "CREATE LEAFPROXY SEQUENCE seg failed",
		"CREATE LEAFPROXY SEQUENCE snow failed",
		"ALTER LEAFPROXY SEQUENCE t1 altered", "ALTER LEAFPROXY SEQUENCE t1 altered", "ALTER LEAFPROXY SEQUENCE sf failed",
		"ALTER LEAFPROXY SEQUENCE snow failed", "ALTER LEAFPROXY SEQUENCE nope failed",
		"DROP LEAFPROXY SEQUENCE ord failed", "DROP LEAFPROXY SEQUENCE seg failed", "DROP LEAFPROXY SEQUENCE t1 dropped",
		"DROP LEAFPROXY SEQUENCE sf dropped", "DROP LEAFPROXY SEQUENCE t1 failed", "DROP LEAFPROXY SEQUENCE t1 unchanged",
		"CREATE LEAFPROXY SEQUENCE t2 failed",
	}
	if !slices.Equal(results, want) {
		t.Errorf("audit:\n%s\nwant:\n%s", strings.Join(results, "\n"), strings.Join(want, "\n"))
	}
}

// TestNotAdminAndNonBlocking: an account without admin: true is refused
// (1227, audited as denied) and nothing changes; on an event loop an
// admin statement hands the session back before doing anything; other
// statements go to the wrapped interceptor.
func TestNotAdminAndNonBlocking(t *testing.T) {
	f := newFixture(t)
	s := newSession(false)
	err := f.exec(t, s, "CREATE LEAFPROXY SEQUENCE t1")
	if errCode(err) != mysql.ER_SPECIFIC_ACCESS_DENIED_ERROR {
		t.Errorf("not admin: %v", err)
	}
	if _, ok := f.st.Segments.Get("t1"); ok {
		t.Errorf("created by an account without admin")
	}
	if a := s.audits(t); len(a) != 1 || a[0]["result"] != "denied" || a[0]["level"] != "WARN" {
		t.Errorf("audit %v", a)
	}
	if err := f.exec(t, s, "SHOW LEAFPROXY SEQUENCES"); errCode(err) != mysql.ER_SPECIFIC_ACCESS_DENIED_ERROR || s.wroteSet {
		t.Errorf("SHOW not admin: %v", err)
	}

	admin := newSession(true)
	st, _ := parseText([]byte("CREATE LEAFPROXY SEQUENCE t1"))
	if _, err := f.a.answer(nonblock.Context(context.Background()), admin, st, []byte("x")); !errors.Is(err, proxy.ErrWouldBlock) {
		t.Errorf("on an event loop: %v", err)
	}
	if _, ok := f.st.Segments.Get("t1"); ok || len(admin.audits(t)) != 0 {
		t.Errorf("done on an event loop")
	}
	if err := f.exec(t, admin, "CREATE LEAFPROXY SEQUENCE x STEP 0"); errCode(err) != mysql.ER_WRONG_ARGUMENTS {
		t.Errorf("STEP 0: %v", err)
	}

	next := &recorder{}
	f.a.Interceptor = next
	if handled, err := f.a.query(context.Background(), nil, []byte("SELECT 1"), sqltext.ClassifyString("SELECT 1")); !handled || err != nil || next.got != "SELECT 1" {
		t.Errorf("SELECT 1 not passed on: %v %v %q", handled, err, next.got)
	}
}

type recorder struct {
	proxy.BaseInterceptor
	got string
}

func (r *recorder) Query(_ context.Context, _ *proxy.Session, sql []byte) (bool, error) {
	r.got = string(sql)
	return true, nil
}
