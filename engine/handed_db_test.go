package engine

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"

	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
	"github.com/leafproxy/leafproxy/proxy"
	"github.com/leafproxy/leafproxy/rewriter"
)

// dryIDs is an ID source whose dry tags have nothing buffered, as the
// segment allocator's before its first load: a draw on an event loop is
// ErrWouldBlock (handed to the session's goroutine), a draw on the
// goroutine loads them. It counts the draws asked for on a loop per tag.
type dryIDs struct {
	mu sync.Mutex
	counter
	dry    map[string]bool
	onLoop map[string]int
	handed map[string]int
	last   map[string][]int64 // the last batch drawn per tag
}

func newDryIDs() *dryIDs {
	return &dryIDs{counter: counter{next: 1000}, dry: map[string]bool{}, onLoop: map[string]int{}, handed: map[string]int{}, last: map[string][]int64{}}
}

func (d *dryIDs) NextN(ctx context.Context, tag string, n int, dst []int64) ([]int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if proxy.MustNotBlock(ctx) {
		d.onLoop[tag]++
		if d.dry[tag] {
			d.handed[tag]++
			return dst, proxy.ErrWouldBlock
		}
	}
	d.dry[tag] = false
	start := len(dst)
	dst, err := d.counter.NextN(ctx, tag, n, dst)
	d.last[tag] = append([]int64(nil), dst[start:]...)
	return dst, err
}

func (d *dryIDs) Block(ctx context.Context, tag string, n int64) (first, run, stride int64, err error) {
	ids, err := d.NextN(ctx, tag, 1, nil)
	if err != nil {
		return 0, 0, 0, err
	}
	d.mu.Lock()
	d.next += n - 1
	d.mu.Unlock()
	return ids[0], 0, 0, nil
}

// read returns what f reads of d, under its lock.
func (d *dryIDs) read(f func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f()
}

// A filled INSERT an event loop plans and hands to the session's goroutine
// (its tag has nothing buffered) is planned once, through a real proxy,
// client and MariaDB; its rows get the IDs the goroutine drew, and the
// client reads the first as the OK packet's insert id and from
// LAST_INSERT_ID(). So are a numbered INSERT ... SELECT and an explicit
// key's INSERT, which the loop always hands over.
func TestHandedInsertPlannedOnce(t *testing.T) {
	backend := testdb.Start(t)
	backend.Exec(t, "DROP DATABASE IF EXISTS handed", "CREATE DATABASE handed",
		"CREATE TABLE handed.notes (id BIGINT PRIMARY KEY, body VARCHAR(64))")
	rules, err := rewriter.NewRules([]rewriter.Rule{{Table: "notes", Column: "id", Tag: "note"}})
	if err != nil {
		t.Fatal(err)
	}
	ids := newDryIDs()
	e := New(ids, rules)
	db := serveEngine(t, e, backend, 1, "handed")
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	exec := func(q string) sql.Result {
		t.Helper()
		res, err := conn.ExecContext(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return res
	}
	// The session's first statements run on its goroutine (the proxy
	// reads its sql_mode, the engine the table's columns); after a few it
	// moves back to the loop, where a NEXTVAL is drawn with the loop's
	// context.
	exec("INSERT INTO notes (body) VALUES ('warm')")
	probes := 0
	backOnLoop := func() {
		t.Helper()
		testwait.For(t, "the session back on its event loop", func() bool {
			var v int64
			if err := conn.QueryRowContext(ctx, "SELECT NEXTVAL('probe')").Scan(&v); err != nil {
				t.Fatal(err)
			}
			n := 0
			ids.read(func() { n = ids.onLoop["probe"] })
			if n > probes {
				probes = n
				return true
			}
			return false
		})
	}
	// The session's state, read after its answer (the socket orders it).
	var st *state
	e.stats.mu.Lock()
	for s := range e.stats.counting {
		st = s
	}
	sessions := len(e.stats.counting)
	e.stats.mu.Unlock()
	if sessions != 1 {
		t.Fatalf("%d sessions in the engine, want 1", sessions)
	}
	handedOnce := func(q string, tag string) sql.Result {
		t.Helper()
		backOnLoop()
		if tag != "" {
			ids.read(func() { ids.dry[tag] = true })
		}
		before, handed := st.plannings.Load(), 0
		res := exec(q)
		if tag != "" {
			ids.read(func() { handed = ids.handed[tag] })
			if handed == 0 {
				t.Fatalf("%s: not handed over from the loop (tag %q)", q, tag)
			}
		}
		if n := st.plannings.Load() - before; n != 1 {
			t.Fatalf("%s: planned %d times, want once", q, n)
		}
		return res
	}
	lastInsertID := func() int64 {
		t.Helper()
		var v int64
		if err := conn.QueryRowContext(ctx, "SELECT LAST_INSERT_ID()").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	rows := func(where string) []string {
		t.Helper()
		r, err := conn.QueryContext(ctx, "SELECT id, body FROM notes WHERE "+where+" ORDER BY id")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var out []string
		for r.Next() {
			var id int64
			var body string
			if err := r.Scan(&id, &body); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%d %s", id, body))
		}
		return out
	}

	// A filled INSERT of three rows (edits at offsets), its tag dry.
	res := handedOnce("INSERT INTO notes (body) VALUES ('handed'), ('over'), ('once')", "note")
	var drawn []int64
	ids.read(func() { drawn = ids.last["note"] })
	if len(drawn) != 3 {
		t.Fatalf("drew %v for the INSERT, want 3 IDs", drawn)
	}
	want := []string{fmt.Sprintf("%d handed", drawn[0]), fmt.Sprintf("%d over", drawn[1]), fmt.Sprintf("%d once", drawn[2])}
	if got := rows("body IN ('handed', 'over', 'once')"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	if id, err := res.LastInsertId(); err != nil || id != drawn[0] {
		t.Fatalf("insert id %d (%v), want %d", id, err, drawn[0])
	}
	if n, err := res.RowsAffected(); err != nil || n != 3 {
		t.Fatalf("%d rows affected (%v), want 3", n, err)
	}
	if got := lastInsertID(); got != drawn[0] {
		t.Fatalf("LAST_INSERT_ID() %d, want %d", got, drawn[0])
	}

	// A numbered INSERT ... SELECT: the loop plans it, then hands it over
	// to count its rows on the goroutine.
	res = handedOnce("INSERT INTO notes (body) SELECT CONCAT(body, '!') FROM notes WHERE body IN ('handed', 'over')", "")
	got := rows("body LIKE '%!'")
	if len(got) != 2 {
		t.Fatalf("numbered INSERT wrote %v, want 2 rows", got)
	}
	var first int64
	fmt.Sscan(got[0], &first)
	if id, err := res.LastInsertId(); err != nil || id != first || lastInsertID() != first || first <= drawn[2] {
		t.Fatalf("numbered INSERT: insert id %d (%v), rows %v, LAST_INSERT_ID() %d", id, err, got, lastInsertID())
	}

	// An explicit key: MariaDB's insert id is the key, reported on the
	// goroutine.
	res = handedOnce("INSERT INTO notes (id, body) VALUES (5000000, 'explicit')", "")
	if id, err := res.LastInsertId(); err != nil || id != 5000000 {
		t.Fatalf("explicit key: insert id %d (%v), want 5000000", id, err)
	}
	if got := rows("body = 'explicit'"); fmt.Sprint(got) != "[5000000 explicit]" {
		t.Fatalf("explicit key: rows %v", got)
	}
}
