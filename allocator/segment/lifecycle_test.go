package segment

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

// TestSetTableStepAndForget: ALTER ... STEP makes the
// next fetch start from the new step (then grow as the dynamic step does);
// DROP forgets the tag: its buffered IDs are not handed out, and the next
// request asks the store again.
func TestSetTableStepAndForget(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	store := newMemStore(map[string]int64{"t": 10})
	a := New(store, Options{Clock: clock.Now, WatchEvery: -1})
	defer a.Close()
	if id, err := a.Next(ctx, "t"); err != nil || id != 1 {
		t.Fatalf("first: %d %v", id, err)
	}
	store.get(func(s *memStore) { s.rows["t"].step = 500 }) // the UPDATE of ALTER ... STEP
	a.SetTableStep("t", 500)
	clock.Advance(20 * time.Minute) // the segment lasted long enough to keep the step
	if _, err := a.NextN(ctx, "t", 9, nil); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "the next segment", func() bool { st, _ := a.Stats("t"); return st.NextReady })
	var steps []int64
	store.get(func(s *memStore) { steps = slices.Clone(s.steps) })
	if len(steps) != 2 || steps[1] != 500 {
		t.Fatalf("fetch steps %v, want the second to be 500", steps)
	}
	if st, _ := a.Stats("t"); st.TableStep != 500 || st.Step != 500 {
		t.Fatalf("after the fetch: %+v", st)
	}

	a.Forget("t")
	if _, ok := a.Stats("t"); ok {
		t.Fatal("forgotten tag still listed")
	}
	store.get(func(s *memStore) { delete(s.rows, "t") }) // the DELETE of DROP
	var unknown *UnknownTagError
	if _, err := a.Next(ctx, "t"); !errors.As(err, &unknown) {
		t.Fatalf("Next after Forget and DELETE: %v, want UnknownTagError", err)
	}
}
