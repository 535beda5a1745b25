package engine

import (
	"context"
	"errors"
	"testing"

	"github.com/leafproxy/leafproxy/proxy"
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
	if st.plannings != 1 || st.handed == nil {
		t.Fatalf("%d plannings, kept %v", st.plannings, st.handed)
	}
	copy(buf, "SELECT NEXTVAL('xxxxx'), LASTVAL('xxxxx')") // the loop's buffer serves another session
	// The goroutine runs the command from its own copy.
	if handled, err := e.queryText(context.Background(), s, []byte("SELECT NEXTVAL('order'), LASTVAL('order')")); err != nil || !handled {
		t.Fatalf("on the goroutine: handled=%v err=%v", handled, err)
	}
	if st.plannings != 1 {
		t.Fatalf("%d plannings: the goroutine planned again", st.plannings)
	}
	if len(s.wrote) != 1 || *s.wrote[0][0][0] != 1001 || *s.wrote[0][0][1] != 1001 {
		t.Fatalf("answered %v", s.wrote)
	}
	if _, ok := st.last["order"]; !ok || st.handed != nil {
		t.Fatalf("LASTVAL %v, kept %v", st.last, st.handed)
	}
	// Once only, and for the same text only.
	if _, err := e.queryText(context.Background(), s, []byte("SELECT NEXTVAL('order'), LASTVAL('order')")); err != nil || st.plannings != 2 {
		t.Fatalf("second run: %v, %d plannings", err, st.plannings)
	}
	ids.cold = map[string]bool{"cold": true}
	if _, err := onLoop(t, s, ids, false, func(ctx context.Context) (bool, error) { return e.queryText(ctx, s, []byte("SELECT NEXTVAL('cold')")) }); !errors.Is(err, proxy.ErrWouldBlock) {
		t.Fatal(err)
	}
	if _, err := e.queryText(context.Background(), s, []byte("SELECT NEXTVAL('order')")); err != nil || st.plannings != 4 {
		t.Fatalf("another text after a hand-over: %v, %d plannings", err, st.plannings)
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
	if handled, err := e.queryText(context.Background(), s, sql); err != nil || !handled || st.plannings != 1 {
		t.Fatalf("on the goroutine: handled=%v err=%v, %d plannings", handled, err, st.plannings)
	}
}
