package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/leafproxy/leafproxy/internal/nonblock"
	"github.com/leafproxy/leafproxy/proxy"
)

// loopCheck holds a fakeSession to an event loop's rules while the engine
// runs a command there (onLoop): the proxy's lane refuses everything that
// would wait. Its methods are no-ops on a nil *loopCheck (the goroutine).
type loopCheck struct {
	t testing.TB
	// cold: the session's database and sql_mode must be re-read from
	// the backend, which the proxy refuses on a loop (ErrWouldBlock).
	cold    bool
	refused []string // what was refused with ErrWouldBlock during the call
}

// reread is CurrentDB's and SQLMode's check: only a cached value is
// answered on a loop.
func (l *loopCheck) reread(ctx context.Context, what string) error {
	if l == nil {
		if nonblock.Requested(ctx) {
			panic(what + " with a nonblock context outside onLoop: run loop-path tests through onLoop")
		}
		return nil
	}
	if l.cold {
		l.refused = append(l.refused, what)
		return proxy.ErrWouldBlock
	}
	return nil
}

// refuse is Blocking's check: on a loop the waiting calls are out of reach.
func (l *loopCheck) refuse(ctx context.Context) error {
	if l == nil {
		if nonblock.Requested(ctx) {
			panic("Blocking with a nonblock context outside onLoop: run loop-path tests through onLoop")
		}
		return nil
	}
	l.refused = append(l.refused, "Blocking")
	return proxy.ErrWouldBlock
}

// waited fails the test: a call that waits for the backend was made on a
// loop (through a proxy.BlockingSession kept from elsewhere, or a type
// assertion past Blocking).
func (l *loopCheck) waited(what string) {
	if l != nil {
		l.t.Helper()
		l.t.Errorf("%s called on an event loop: it waits for the backend", what)
	}
}

// loopIDs is a counter that keeps an allocator's loop rules: a draw on a
// loop must carry the loop's nonblock context (else the allocator would
// wait on the runner), and a cold tag (nothing buffered) is ErrWouldBlock.
type loopIDs struct {
	counter
	t      testing.TB
	cold   map[string]bool
	onLoop bool
	draws  int
}

func (l *loopIDs) NextN(ctx context.Context, tag string, n int, dst []int64) ([]int64, error) {
	if l.onLoop {
		if !nonblock.Requested(ctx) {
			l.t.Errorf("NextN(%q) on an event loop without its nonblock context: the allocator would wait", tag)
		}
		if l.cold[tag] {
			return dst, proxy.ErrWouldBlock
		}
	}
	l.draws++
	return l.counter.NextN(ctx, tag, n, dst)
}

func (l *loopIDs) Block(ctx context.Context, tag string, n int64) (first, run, stride int64, err error) {
	ids, err := l.NextN(ctx, tag, 1, nil)
	if err != nil {
		return 0, 0, 0, err
	}
	l.next += n - 1
	return ids[0], 0, 0, nil
}

// onLoop runs one engine call as the proxy's lane runs it: with a context
// marked nonblock and s refusing whatever would wait. A waiting call fails
// the test (loopCheck.waited); a call handed back (ErrWouldBlock) must have
// answered, relayed and drawn nothing (the lane closes a session whose
// interceptor hands back after writing); a refusal must not be swallowed
// (the engine returns ErrWouldBlock, not an answer made without what it
// could not read). ids may be nil.
func onLoop(t testing.TB, s *fakeSession, ids *loopIDs, cold bool, call func(ctx context.Context) (bool, error)) (bool, error) {
	t.Helper()
	l := &loopCheck{t: t, cold: cold}
	s.loop = l
	effects := func() int {
		return len(s.relayed) + len(s.wrote) + len(s.typed) + len(s.prepared) + len(s.backend) + s.answers
	}
	before, draws := effects(), 0
	if ids != nil {
		ids.onLoop, ids.t, draws = true, t, ids.draws
	}
	handled, err := call(nonblock.Context(context.Background()))
	s.loop = nil
	if ids != nil {
		ids.onLoop = false
	}
	if errors.Is(err, proxy.ErrWouldBlock) {
		if handled {
			t.Errorf("handed back with handled=true")
		}
		if n := effects() - before; n != 0 {
			t.Errorf("handed back after %d answers or relays: the lane would close the session", n)
		}
		if ids != nil && ids.draws != draws {
			t.Errorf("handed back after %d draws: the goroutine draws again", ids.draws-draws)
		}
	} else if len(l.refused) > 0 {
		t.Errorf("%v refused on the loop, but the engine went on: handled=%v err=%v", l.refused, handled, err)
	}
	return handled, err
}

// TestLoopStatementKinds runs every kind of statement the engine handles
// on an event loop, with a session that fails the test on any call that
// would wait: each is answered on the loop or handed back to the session's
// goroutine before anything is written or drawn.
func TestLoopStatementKinds(t *testing.T) {
	const (
		ran    = "ran"    // handled on the loop
		passed = "passed" // left to the proxy to relay unchanged, on the loop
		back   = "back"   // ErrWouldBlock: run again on the goroutine
	)
	prepare := func(sql string) func(ctx context.Context, e *Engine, s *fakeSession) (bool, error) {
		return func(ctx context.Context, e *Engine, s *fakeSession) (bool, error) {
			return e.prepareText(ctx, s, []byte(sql))
		}
	}
	query := func(sql string) func(ctx context.Context, e *Engine, s *fakeSession) (bool, error) {
		return func(ctx context.Context, e *Engine, s *fakeSession) (bool, error) {
			return e.queryText(ctx, s, []byte(sql))
		}
	}
	// execute prepares sql on the goroutine, then executes it (no
	// parameters) on the loop.
	execute := func(sql string) (func(*testing.T, *Engine, *fakeSession), func(ctx context.Context, e *Engine, s *fakeSession) (bool, error)) {
		var id uint32
		return func(t *testing.T, e *Engine, s *fakeSession) {
				if handled, err := e.prepareText(context.Background(), s, []byte(sql)); err != nil || !handled {
					t.Fatalf("prepare %s: handled=%v err=%v", sql, handled, err)
				}
				id = uint32(len(s.prepared))
			}, func(ctx context.Context, e *Engine, s *fakeSession) (bool, error) {
				pkt := []byte{0x17, byte(id), byte(id >> 8), byte(id >> 16), byte(id >> 24), 0, 1, 0, 0, 0}
				return e.execute(ctx, s, id, pkt)
			}
	}
	warm := func(t *testing.T, e *Engine, s *fakeSession) {
		if _, err := e.queryText(context.Background(), s, []byte("INSERT INTO orders (item) VALUES ('warm')")); err != nil {
			t.Fatal(err)
		}
	}
	execNext, runNext := execute("SELECT NEXTVAL('order')")
	execFill, runFill := execute("INSERT INTO orders (item) VALUES ('x')")
	execKey, runKey := execute("INSERT INTO orders (id, item) VALUES (7, 'x')")
	for _, tc := range []struct {
		name  string
		setup func(*testing.T, *Engine, *fakeSession) // on the goroutine, before
		call  func(ctx context.Context, e *Engine, s *fakeSession) (bool, error)
		cold  bool // database and sql_mode not cached
		want  string
	}{
		{"NEXTVAL", nil, query("SELECT NEXTVAL('order')"), false, ran},
		{"LASTVAL", nil, query("SELECT LASTVAL('order')"), false, ran},
		{"NEXTVAL and LASTVAL", nil, query("SELECT NEXTVAL('order'), LASTVAL('order')"), false, ran},
		{"NEXTVAL, session facts not cached", nil, query("SELECT NEXTVAL('order')"), true, back},
		{"NEXTVAL of a cold tag", nil, query("SELECT NEXTVAL('cold')"), false, back},
		{"NEXTVAL block", nil, query("SELECT NEXTVAL('order', 10)"), false, ran},
		{"SETVAL", nil, query("SELECT NEXTVAL('order'), SETVAL('order', 5000)"), false, back},
		{"pass-through", nil, query("SELECT 1"), false, passed},
		{"filled INSERT, columns cached", warm, query("INSERT INTO orders (item) VALUES ('book')"), false, ran},
		{"filled INSERT, columns not cached", nil, query("INSERT INTO orders (item) VALUES ('book')"), false, back},
		{"filled INSERT, cold tag", warm, query("INSERT INTO orders (item) VALUES ('book')"), false, back},
		{"explicit key (insert id)", warm, query("INSERT INTO orders (id, item) VALUES (7, 'x')"), false, back},
		{"large INSERT", warm, query("INSERT INTO orders (item) VALUES ('x')" + strings.Repeat(", ('x')", 50_000)), false, back},
		{"numbered INSERT ... SELECT", warm, query("INSERT INTO orders (item) SELECT item FROM orders"), false, back},
		{"LOAD DATA", warm, query("LOAD DATA LOCAL INFILE 'f' INTO TABLE orders (item)"), false, back},
		{"DDL", nil, query("ALTER TABLE orders ADD note TEXT"), false, back},
		{"prepare NEXTVAL", nil, prepare("SELECT NEXTVAL('order')"), false, back},
		{"prepare filled INSERT", warm, prepare("INSERT INTO orders (item) VALUES (?)"), false, back},
		{"execute NEXTVAL", execNext, runNext, false, ran},
		{"execute filled INSERT", execFill, runFill, false, ran},
		{"execute explicit key (insert id)", execKey, runKey, false, back},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rules := fakeEngine(t).rules.Load()
			ids := &loopIDs{counter: counter{next: 1000}, cold: map[string]bool{"cold": true}}
			if strings.Contains(tc.name, "cold tag") {
				ids.cold["order"] = true
			}
			e := New(ids, rules)
			s := &fakeSession{db: "shop", columns: map[string][][2]string{"orders": {{"id", "bigint"}, {"item", "varchar"}}}}
			if tc.setup != nil {
				tc.setup(t, e, s)
			}
			handled, err := onLoop(t, s, ids, tc.cold, func(ctx context.Context) (bool, error) { return tc.call(ctx, e, s) })
			got := ran
			switch {
			case errors.Is(err, proxy.ErrWouldBlock):
				got = back
			case err != nil:
				t.Fatalf("err %v", err)
			case !handled:
				got = passed
			}
			if got != tc.want {
				t.Fatalf("%s on a loop, want %s (handled=%v err=%v)", got, tc.want, handled, err)
			}
			if got == back {
				// The goroutine runs it (to an answer or an error of its own).
				if _, err := tc.call(context.Background(), e, s); errors.Is(err, proxy.ErrWouldBlock) {
					t.Fatalf("on the goroutine: %v", err)
				}
			}
		})
	}
}
