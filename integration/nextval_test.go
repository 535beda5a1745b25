package integration

import (
	"context"
	"database/sql"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

// nextvalEnv: one backend, the allocation store on the backend, tags
// "t" and "u" (segment, step 10 so segments switch often) and "snow"
// (snowflake, fixed worker).
func nextvalEnv(t *testing.T) (*testdb.Server, *leaf) {
	backend := testdb.Start(t)
	backend.Open(t, "app")
	cfg := leafConfig(t, backend, nil)
	cfg.Sequences.Tags = map[string]config.Tag{
		"t":    {Generator: "segment", Step: 10},
		"u":    {Generator: "segment", Step: 10},
		"snow": {Generator: "snowflake"},
	}
	cfg.Snowflake.WorkerID = "7"
	return backend, startLeaf(t, cfg)
}

func queryInt64s(t *testing.T, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, query string, args ...any) ([]string, []sql.NullInt64) {
	t.Helper()
	rows, err := q.QueryContext(context.Background(), query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	vals := make([]sql.NullInt64, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if !rows.Next() {
		t.Fatalf("%s: no row (%v)", query, rows.Err())
	}
	if err := rows.Scan(ptrs...); err != nil {
		t.Fatalf("%s: scan: %v", query, err)
	}
	if rows.Next() {
		t.Fatalf("%s: more than one row", query)
	}
	return cols, vals
}

// TestNextvalSyntaxes runs every accepted spelling through go-sql-driver
// in the text protocol and with server-side prepared statements: each call
// returns a fresh, larger value of the right tag, and the column is named
// as MariaDB would name it.
func TestNextvalSyntaxes(t *testing.T) {
	_, lf := nextvalEnv(t)
	for _, mode := range []struct {
		name   string
		params map[string]string
	}{
		{"text", map[string]string{"interpolateParams": "true"}},
		{"prepared", nil},
	} {
		t.Run(mode.name, func(t *testing.T) {
			db := lf.open(t, "app", mode.params)
			conn, err := db.Conn(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			prep := mode.params == nil
			last := map[string]int64{}
			check := func(q string, wantCols []string, tags []string) {
				t.Helper()
				var cols []string
				var vals []sql.NullInt64
				if prep {
					st, err := conn.PrepareContext(context.Background(), q)
					if err != nil {
						t.Fatalf("prepare %s: %v", q, err)
					}
					for range 2 {
						cols, vals = queryInt64s(t, stmtQuerier{st}, q)
						checkVals(t, q, vals, tags, last)
					}
					st.Close()
				} else {
					cols, vals = queryInt64s(t, conn, q)
					checkVals(t, q, vals, tags, last)
				}
				if strings.Join(cols, "|") != strings.Join(wantCols, "|") {
					t.Errorf("%s: columns %q, want %q", q, cols, wantCols)
				}
			}
			check("SELECT NEXTVAL('t')", []string{"NEXTVAL('t')"}, []string{"t"})
			check("select nextval(t)", []string{"nextval(t)"}, []string{"t"})
			check("SELECT NEXT VALUE FOR t", []string{"NEXT VALUE FOR t"}, []string{"t"})
			check("/* hint */ SELECT NeXtVaL('t') ;", []string{"NeXtVaL('t')"}, []string{"t"})
			check("SELECT NEXTVAL('t') AS id", []string{"id"}, []string{"t"})
			check("SELECT NEXTVAL('t') id", []string{"id"}, []string{"t"})
			check("SELECT NEXTVAL('t'), NEXTVAL('u') AS b", []string{"NEXTVAL('t')", "b"}, []string{"t", "u"})
			check("SELECT NEXTVAL('snow')", []string{"NEXTVAL('snow')"}, []string{"snow"})

			// LASTVAL: the session's last value for the tag, NULL before any.
			for _, q := range []string{"SELECT LASTVAL('t')", "SELECT PREVIOUS VALUE FOR t", "SELECT LASTVAL(t)"} {
				_, v := queryInt64s(t, conn, q)
				if !v[0].Valid || v[0].Int64 != last["t"] {
					t.Errorf("%s = %v, want %d", q, v[0], last["t"])
				}
			}
			if _, v := queryInt64s(t, conn, "SELECT LASTVAL('never_used')"); v[0].Valid {
				t.Errorf("LASTVAL of an unused tag = %v, want NULL", v[0])
			}
		})
	}
}

type stmtQuerier struct{ st *sql.Stmt }

func (s stmtQuerier) QueryContext(ctx context.Context, _ string, args ...any) (*sql.Rows, error) {
	return s.st.QueryContext(ctx, args...)
}

func checkVals(t *testing.T, q string, vals []sql.NullInt64, tags []string, last map[string]int64) {
	t.Helper()
	if len(vals) != len(tags) {
		t.Fatalf("%s: %d values, want %d", q, len(vals), len(tags))
	}
	for i, v := range vals {
		if !v.Valid || v.Int64 <= 0 {
			t.Fatalf("%s: value %d = %v", q, i, v)
		}
		if v.Int64 <= last[tags[i]] {
			t.Fatalf("%s: %s value %d not above the previous %d", q, tags[i], v.Int64, last[tags[i]])
		}
		last[tags[i]] = v.Int64
	}
}

// TestNextvalInStatements: NEXTVAL as a value in INSERT ... VALUES, INSERT
// ... SET and UPDATE ... SET becomes one fresh ID per occurrence per row.
func TestNextvalInStatements(t *testing.T) {
	backend, lf := nextvalEnv(t)
	backend.Exec(t, "CREATE TABLE app.items (id BIGINT PRIMARY KEY, other BIGINT, v VARCHAR(20))")
	for _, params := range []map[string]string{{"interpolateParams": "true"}, nil} {
		db := lf.open(t, "app", params)
		for _, q := range []string{
			"INSERT INTO items (id, other, v) VALUES (NEXTVAL('t'), NEXT VALUE FOR u, 'a'), (NEXTVAL(t), NEXTVAL('u'), 'b')",
			"INSERT INTO items SET id = NEXTVAL('t'), other = 0, v = 'c'",
		} {
			if _, err := db.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if _, err := db.Exec("UPDATE items SET other = NEXTVAL('u') WHERE v = ?", "c"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec("DELETE FROM items"); err != nil {
			t.Fatal(err)
		}
	}
	// Re-run once more and look at what was stored.
	db := lf.open(t, "app", nil)
	if _, err := db.Exec("INSERT INTO items (id, other, v) VALUES (NEXTVAL('t'), NEXTVAL('u'), 'a'), (NEXTVAL('t'), NEXTVAL('u'), 'b')"); err != nil {
		t.Fatal(err)
	}
	rows, err := backend.Open(t, "app").Query("SELECT id, other FROM items ORDER BY v")
	if err != nil {
		t.Fatal(err)
	}
	var ids, others []int64
	for rows.Next() {
		var a, b int64
		rows.Scan(&a, &b)
		ids, others = append(ids, a), append(others, b)
	}
	if len(ids) != 2 || ids[0] >= ids[1] || others[0] >= others[1] || ids[0] <= 0 || others[0] <= 0 {
		t.Fatalf("stored ids %v others %v: want two distinct ascending values per column", ids, others)
	}
}

// TestNextvalTransactionsAndErrors: IDs are not rolled back; errors are
// MySQL errors and leave the session usable.
func TestNextvalTransactionsAndErrors(t *testing.T) {
	backend, lf := nextvalEnv(t)
	backend.Exec(t, "CREATE TABLE app.many (id INT PRIMARY KEY)", "INSERT INTO app.many VALUES (1),(2),(3)")
	db := lf.open(t, "app", nil)
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	next := func() int64 {
		var v int64
		if err := conn.QueryRowContext(context.Background(), "SELECT NEXTVAL('t')").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	mustExec := func(q string) {
		if _, err := conn.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	mustExec("BEGIN")
	a := next()
	mustExec("ROLLBACK")
	if b := next(); b <= a {
		t.Fatalf("after rollback NEXTVAL = %d, want > %d (IDs are not rolled back)", b, a)
	}

	for _, tc := range []struct {
		q     string
		code  uint16
		state string
		msg   string
	}{
		{"SELECT NEXTVAL('nosuch')", 4091, "42S02", "Unknown SEQUENCE: 'nosuch'"},
		{"SELECT NEXT VALUE FOR nosuch", 4091, "42S02", "nosuch"},
		{"SELECT NEXTVAL('t') FROM many", 1235, "42000", "NEXTVAL"},
		{"INSERT INTO many SELECT * FROM many WHERE id = NEXTVAL('t')", 1235, "42000", "NEXTVAL"},
	} {
		_, err := conn.ExecContext(context.Background(), tc.q)
		code, state := myErr(err)
		if code != tc.code || state != tc.state || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: err %v (code %d state %s), want %d/%s mentioning %q", tc.q, err, code, state, tc.code, tc.state, tc.msg)
		}
		next() // the session still works
	}
	var n int
	if err := conn.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM many").Scan(&n); err != nil || n != 3 {
		t.Fatalf("rows in many = %d (%v): a refused statement reached the backend", n, err)
	}
	// A tag given as a parameter cannot be planned: a clear error.
	if _, err := conn.PrepareContext(context.Background(), "SELECT NEXTVAL(?)"); err == nil {
		t.Error("SELECT NEXTVAL(?) prepared without error")
	}
	next()
}

// TestNextvalCLI: the mariadb command-line client gets answers from the proxy.
func TestNextvalCLI(t *testing.T) {
	cli, err := exec.LookPath("mariadb")
	if err != nil {
		t.Skip("mariadb client not installed")
	}
	_, lf := nextvalEnv(t)
	host, port, _ := strings.Cut(lf.addr, ":")
	out, err := exec.Command(cli, "-h", host, "-P", port, "-u", "app", "-psecret", "--batch", "--skip-column-names",
		"-e", "SELECT NEXTVAL('t'); SELECT NEXT VALUE FOR t AS x; SELECT LASTVAL('t')").CombinedOutput()
	if err != nil {
		t.Fatalf("mariadb: %v\n%s", err, out)
	}
	lines := strings.Fields(string(out))
	if len(lines) != 3 {
		t.Fatalf("output %q, want three values", out)
	}
	a, _ := strconv.ParseInt(lines[0], 10, 64)
	b, _ := strconv.ParseInt(lines[1], 10, 64)
	c, _ := strconv.ParseInt(lines[2], 10, 64)
	if a <= 0 || b <= a || c != b {
		t.Fatalf("values %d %d %d: want a>0, b>a, LASTVAL=b", a, b, c)
	}
}

// TestNextvalTwoProxiesUnique: 2 proxies share one leaf_alloc, 64
// connections call NEXTVAL for 10 s: every value is distinct and each
// connection's values strictly increase.
func TestNextvalTwoProxiesUnique(t *testing.T) {
	backend := testdb.Start(t)
	store := testdb.Start(t)
	var leaves []*leaf
	for range 2 {
		cfg := leafConfig(t, backend, store)
		cfg.Sequences.Tags = map[string]config.Tag{"t": {Generator: "segment", Step: 100}}
		leaves = append(leaves, startLeaf(t, cfg))
	}
	dur := 10 * time.Second
	if testing.Short() {
		dur = 2 * time.Second
	}
	const conns = 64
	results := make([][]int64, conns)
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	deadline := time.Now().Add(dur)
	for c := range conns {
		db := leaves[c%2].open(t, "", nil)
		db.SetMaxOpenConns(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				var v int64
				if err := db.QueryRow("SELECT NEXTVAL('t')").Scan(&v); err != nil {
					errs <- fmt.Errorf("conn %d: %w", c, err)
					return
				}
				if n := len(results[c]); n > 0 && v <= results[c][n-1] {
					errs <- fmt.Errorf("conn %d: %d after %d: not increasing", c, v, results[c][n-1])
					return
				}
				results[c] = append(results[c], v)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var all []int64
	for _, r := range results {
		all = append(all, r...)
	}
	assertDistinct(t, all)
	t.Logf("%d values from %d connections on 2 proxies in %v", len(all), conns, dur)
}

func assertDistinct(t *testing.T, ids []int64) {
	t.Helper()
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for i := range ids {
		if ids[i] <= 0 {
			t.Fatalf("non-positive id %d", ids[i])
		}
		if i > 0 && ids[i] == ids[i-1] {
			t.Fatalf("duplicate id %d", ids[i])
		}
	}
	if len(ids) == 0 {
		t.Fatal("no ids")
	}
}

// TestNextvalStoreOutage: the allocation database dies while clients call
// NEXTVAL. Calls succeed while the buffer lasts, then fail with a clear
// error within the wait timeout, then succeed again once it is back; no
// value ever repeats.
func TestNextvalStoreOutage(t *testing.T) {
	backend := testdb.Start(t)
	store := testdb.Start(t)
	cfg := leafConfig(t, backend, store)
	cfg.Sequences.Tags = map[string]config.Tag{"t": {Generator: "segment", Step: 500}}
	lf := startLeaf(t, cfg)
	db := lf.open(t, "", nil)
	db.SetMaxOpenConns(8)

	var mu sync.Mutex
	var seen []int64
	call := func() (int64, error) {
		var v int64
		err := db.QueryRow("SELECT NEXTVAL('t')").Scan(&v)
		if err == nil {
			mu.Lock()
			seen = append(seen, v)
			mu.Unlock()
		}
		return v, err
	}
	for range 50 {
		if _, err := call(); err != nil {
			t.Fatal(err)
		}
	}
	store.Kill(t)
	// The buffer (current segment + the prefetched one) keeps serving.
	okAfterKill := 0
	var failure error
	start := time.Now()
	for time.Since(start) < 30*time.Second {
		t0 := time.Now()
		_, err := call()
		if err != nil {
			failure = err
			if d := time.Since(t0); d > 5*time.Second {
				t.Fatalf("failing call took %v, want about the 1s wait timeout", d)
			}
			break
		}
		okAfterKill++
	}
	if failure == nil {
		t.Fatal("NEXTVAL never failed with the store down")
	}
	if okAfterKill == 0 {
		t.Error("no call succeeded from the buffer after the store died")
	}
	if !strings.Contains(failure.Error(), "t") {
		t.Errorf("error %q does not name the tag", failure)
	}
	t.Logf("%d calls served from the buffer, then: %v", okAfterKill, failure)
	store.Restart(t)
	testwait.For(t, "NEXTVAL to recover after the store came back", func() bool { _, err := call(); return err == nil })
	for range 200 {
		if _, err := call(); err != nil {
			t.Fatal(err)
		}
	}
	assertDistinct(t, seen)
}
