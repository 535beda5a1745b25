package engine

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/leafproxy/leafproxy/proxy"
	"github.com/leafproxy/leafproxy/rewriter"
)

// A NEXTVAL a loop planned and then handed to the session's goroutine (its
// tag had nothing buffered) is not planned again there: the goroutine runs
// the loop's plan, whose names do not borrow the loop's packet buffer.
// Another text, or a second run, is planned.
func TestHandoffKeepsPlan(t *testing.T) {
	ids := &loopIDs{counter: counter{next: 1000}, cold: map[string]bool{"order": true}}
	e := New(ids, fakeEngine(t).rules.Load())
	s := &fakeSession{db: "shop"}
	st := e.state(s)
	buf := []byte("SELECT NEXTVAL('order'), LASTVAL('order')")
	if _, err := onLoop(t, s, ids, false, func(ctx context.Context) (bool, error) { return e.queryText(ctx, s, buf) }); !errors.Is(err, proxy.ErrWouldBlock) {
		t.Fatalf("cold tag on a loop: %v, want ErrWouldBlock", err)
	}
	if st.plannings.Load() != 1 || st.handed == nil {
		t.Fatalf("%d plannings, kept %v", st.plannings.Load(), st.handed)
	}
	copy(buf, "SELECT NEXTVAL('xxxxx'), LASTVAL('xxxxx')") // the loop's buffer serves another session
	// The goroutine runs the command from its own copy.
	if handled, err := e.queryText(context.Background(), s, []byte("SELECT NEXTVAL('order'), LASTVAL('order')")); err != nil || !handled {
		t.Fatalf("on the goroutine: handled=%v err=%v", handled, err)
	}
	if st.plannings.Load() != 1 {
		t.Fatalf("%d plannings: the goroutine planned again", st.plannings.Load())
	}
	if len(s.wrote) != 1 || *s.wrote[0][0][0] != 1001 || *s.wrote[0][0][1] != 1001 {
		t.Fatalf("answered %v", s.wrote)
	}
	if _, ok := st.last["order"]; !ok || st.handed != nil {
		t.Fatalf("LASTVAL %v, kept %v", st.last, st.handed)
	}
	// Once only, and for the same text only.
	if _, err := e.queryText(context.Background(), s, []byte("SELECT NEXTVAL('order'), LASTVAL('order')")); err != nil || st.plannings.Load() != 2 {
		t.Fatalf("second run: %v, %d plannings", err, st.plannings.Load())
	}
	ids.cold = map[string]bool{"cold": true}
	if _, err := onLoop(t, s, ids, false, func(ctx context.Context) (bool, error) { return e.queryText(ctx, s, []byte("SELECT NEXTVAL('cold')")) }); !errors.Is(err, proxy.ErrWouldBlock) {
		t.Fatal(err)
	}
	if _, err := e.queryText(context.Background(), s, []byte("SELECT NEXTVAL('order')")); err != nil || st.plannings.Load() != 4 {
		t.Fatalf("another text after a hand-over: %v, %d plannings", err, st.plannings.Load())
	}
}

// BenchmarkHandedNextval is a session's first NEXTVAL of a tag with
// nothing buffered on a loop: planned on the loop, handed over, run on the
// goroutine; "kept" reuses the loop's plan there, "again" plans twice (as
// before handedPlan).
func BenchmarkHandedNextval(b *testing.B) {
	for _, keep := range []bool{true, false} {
		name := "kept"
		if !keep {
			name = "again"
		}
		b.Run(name, func(b *testing.B) {
			ids := &loopIDs{counter: counter{next: 1000}, cold: map[string]bool{"order": true}}
			e := New(ids, nil)
			sql := []byte("SELECT NEXTVAL('order'), LASTVAL('order')")
			b.ReportAllocs()
			for range b.N {
				s := &fakeSession{db: "shop"}
				_, err := onLoop(b, s, ids, false, func(ctx context.Context) (bool, error) { return e.queryText(ctx, s, sql) })
				if !errors.Is(err, proxy.ErrWouldBlock) {
					b.Fatal(err)
				}
				if !keep {
					s.Value().(*state).handed = nil
				}
				if _, err := e.queryText(context.Background(), s, sql); err != nil {
					b.Fatal(err)
				}
				e.sessionClosed(s)
			}
		})
	}
}

// A session's first NEXTVAL on a loop, before the proxy has read its
// sql_mode, is handed over before it is planned: the goroutine plans it
// once.
func TestFirstNextvalPlannedOnce(t *testing.T) {
	e := fakeEngine(t)
	s := &fakeSession{db: "shop"}
	st := e.state(s)
	sql := []byte("SELECT NEXTVAL('order')")
	if _, err := onLoop(t, s, nil, true, func(ctx context.Context) (bool, error) { return e.queryText(ctx, s, sql) }); !errors.Is(err, proxy.ErrWouldBlock) {
		t.Fatalf("session facts not cached, on a loop: %v, want ErrWouldBlock", err)
	}
	if handled, err := e.queryText(context.Background(), s, sql); err != nil || !handled || st.plannings.Load() != 1 {
		t.Fatalf("on the goroutine: handled=%v err=%v, %d plannings", handled, err, st.plannings.Load())
	}
}

// Every kind of plan a loop makes and then hands over is kept: the
// goroutine plans nothing and does exactly what a session that never was
// on a loop does, though the loop's packet buffer was overwritten in
// between (the kept plan borrows none of it).
func TestHandoffKeepsEveryKind(t *testing.T) {
	warm := "INSERT INTO orders (item) VALUES ('warm')"
	for _, tc := range []struct {
		name string
		warm bool     // columns cached first (warm, on the goroutine)
		cold []string // tags with nothing buffered on the loop
		sql  string
		// unplanned: the loop hands the command over before it has a
		// plan (planning reads the table's key column, not cached: issue
		// 39), and the goroutine plans it.
		unplanned bool
	}{
		{"NEXTVAL of a cold tag", false, []string{"order"}, "SELECT NEXTVAL('order') AS n, LASTVAL('order')", false},
		{"SETVAL", false, nil, "SELECT NEXTVAL('order'), SETVAL('order', 5000)", false},
		{"filled INSERT, cold tag", true, []string{"order"}, "INSERT INTO orders (item) VALUES ('book')", false},
		{"filled INSERT rows, cold tag", true, []string{"order"}, "INSERT INTO orders (item) VALUES ('a'), ('b'), ('c')", false},
		{"filled INSERT, columns not cached", false, nil, "INSERT INTO orders (item) VALUES ('book'), ('pen')", true},
		{"filled INSERT and NEXTVAL, cold tag", true, []string{"cold", "order"}, "INSERT INTO orders (item) VALUES (NEXTVAL('cold')), ('x')", false},
		{"explicit keys among filled, cold tag", true, []string{"order"}, "INSERT INTO orders (id, item) VALUES (NULL, 'a'), (5000, 'b'), (NULL, 'c')", false},
		{"explicit key (insert id)", true, nil, "INSERT INTO orders (id, item) VALUES (7, 'x')", false},
		{"statements with insert ids", true, nil, "INSERT INTO orders (item) VALUES ('a'); INSERT INTO orders (id, item) VALUES (9, 'b')", false},
		{"numbered INSERT ... SELECT", true, nil, "INSERT INTO orders (item) SELECT item FROM orders WHERE item = 'warm'", false},
		{"LOAD DATA", true, nil, "LOAD DATA LOCAL INFILE 'f' INTO TABLE orders (item)", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rules := fakeEngine(t).rules.Load()
			// The fake session answers some statements with an error (SETVAL
			// needs an admin account; no count row, no character set): the
			// same error either way.
			run := func(handed bool) (*fakeSession, *state, string) {
				ids := &loopIDs{counter: counter{next: 1000}, cold: map[string]bool{}}
				e := New(ids, rules)
				s := &fakeSession{db: "shop", columns: map[string][][2]string{"orders": {{"id", "bigint"}, {"item", "varchar"}}}}
				st := e.state(s)
				if tc.warm {
					if _, err := e.queryText(context.Background(), s, []byte(warm)); err != nil {
						t.Fatal(err)
					}
				}
				before := st.plannings.Load()
				if handed {
					for _, tag := range tc.cold {
						ids.cold[tag] = true
					}
					buf := []byte(tc.sql)
					if _, err := onLoop(t, s, ids, false, func(ctx context.Context) (bool, error) { return e.queryText(ctx, s, buf) }); !errors.Is(err, proxy.ErrWouldBlock) {
						t.Fatalf("on a loop: %v, want ErrWouldBlock", err)
					}
					if tc.unplanned {
						if st.handed != nil {
							t.Fatalf("on a loop: kept %v before the key column was read", st.handed)
						}
						before++ // the goroutine plans it
					} else if st.handed == nil || st.plannings.Load() != before+1 {
						t.Fatalf("on a loop: %d plannings, kept %v", st.plannings.Load()-before, st.handed)
					}
					copy(buf, strings.Repeat("x", len(buf))) // the loop's buffer serves another session
				}
				_, err := e.queryText(context.Background(), s, []byte(tc.sql))
				if errors.Is(err, proxy.ErrWouldBlock) {
					t.Fatalf("on the goroutine: %v", err)
				}
				if st.plannings.Load() != before+1 || st.handed != nil {
					t.Fatalf("%d plannings, kept %v: want the statement planned once", st.plannings.Load()-before, st.handed)
				}
				return s, st, fmt.Sprint(err)
			}
			ref, refSt, refErr := run(false)
			got, gotSt, gotErr := run(true)
			if gotErr != refErr {
				t.Fatalf("handed over: %s; never on a loop: %s", gotErr, refErr)
			}
			if !reflect.DeepEqual(got.relayed, ref.relayed) || !reflect.DeepEqual(got.backend, ref.backend) || !reflect.DeepEqual(got.wrote, ref.wrote) {
				t.Fatalf("handed over:\n relayed %q\n backend %q\n wrote %v\nnever on a loop:\n relayed %q\n backend %q\n wrote %v",
					got.relayed, got.backend, got.wrote, ref.relayed, ref.backend, ref.wrote)
			}
			if !reflect.DeepEqual(gotSt.last, refSt.last) {
				t.Fatalf("LASTVAL %v, never on a loop %v", gotSt.last, refSt.last)
			}
		})
	}
}

// BenchmarkHandedInsert is a filled INSERT of a tag with nothing buffered
// on a loop: planned there, handed over, run on the goroutine; "kept"
// takes the loop's plan (cloned at the hand-over), "again" plans twice.
func BenchmarkHandedInsert(b *testing.B) {
	for _, keep := range []bool{true, false} {
		name := "kept"
		if !keep {
			name = "again"
		}
		b.Run(name, func(b *testing.B) {
			ids := &loopIDs{counter: counter{next: 1000}, cold: map[string]bool{}}
			rules, err := rewriter.NewRules([]rewriter.Rule{{Table: "orders", Column: "id", Tag: "order"}})
			if err != nil {
				b.Fatal(err)
			}
			e := New(ids, rules)
			s := &fakeSession{db: "shop", columns: map[string][][2]string{"orders": {{"id", "bigint"}, {"item", "varchar"}}}}
			sql := []byte("INSERT INTO orders (item, note) VALUES ('book', 'first'), ('pen', 'second'), ('ink', 'third')")
			if _, err := e.queryText(context.Background(), s, sql); err != nil { // columns cached
				b.Fatal(err)
			}
			st := s.Value().(*state)
			b.ReportAllocs()
			for range b.N {
				ids.cold["order"] = true
				_, err := onLoop(b, s, ids, false, func(ctx context.Context) (bool, error) { return e.queryText(ctx, s, sql) })
				if !errors.Is(err, proxy.ErrWouldBlock) {
					b.Fatal(err)
				}
				if !keep {
					st.handed = nil
				}
				ids.cold["order"] = false
				if _, err := e.queryText(context.Background(), s, sql); err != nil {
					b.Fatal(err)
				}
				s.relayed = s.relayed[:0]
			}
		})
	}
}
