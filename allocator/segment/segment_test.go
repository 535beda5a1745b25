package segment

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

func TestNextStep(t *testing.T) {
	const maxStep = 1_000_000
	for _, tc := range []struct {
		name                string
		cur, table, maxStep int64
		lasted              time.Duration
		want                int64
	}{
		{"fast segment doubles", 1000, 1000, maxStep, time.Minute, 2000},
		{"just under 15 min doubles", 1000, 1000, maxStep, 15*time.Minute - time.Nanosecond, 2000},
		{"15 min keeps", 4000, 1000, maxStep, 15 * time.Minute, 4000},
		{"between 15 and 30 keeps", 4000, 1000, maxStep, 29 * time.Minute, 4000},
		{"30 min halves", 4000, 1000, maxStep, 30 * time.Minute, 2000},
		{"slow segment halves", 4000, 1000, maxStep, 2 * time.Hour, 2000},
		{"never below table step", 1000, 1000, maxStep, 2 * time.Hour, 1000},
		{"halving stops at table step", 1500, 1000, maxStep, 2 * time.Hour, 1000},
		{"doubling capped at max", 600_000, 1000, maxStep, time.Second, maxStep},
		{"at max stays", maxStep, 1000, maxStep, time.Second, maxStep},
		{"table step above max wins", 2_000_000, 2_000_000, maxStep, time.Second, 2_000_000},
		{"table step raised by operator", 1000, 5000, maxStep, 20 * time.Minute, 5000},
		{"clock went back counts as fast", 1000, 1000, maxStep, -time.Hour, 2000},
		{"step 1 halves to 1", 1, 1, maxStep, time.Hour, 1},
		{"custom max", 100, 100, 100, time.Second, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nextStep(tc.cur, tc.table, tc.maxStep, tc.lasted); got != tc.want {
				t.Errorf("nextStep(%d, table %d, max %d, %v) = %d, want %d", tc.cur, tc.table, tc.maxStep, tc.lasted, got, tc.want)
			}
		})
	}
}

// TestDynamicStepWithClock drives segment switches with an injected clock
// and checks the step of every fetch the allocator makes.
func TestDynamicStepWithClock(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	store := newMemStore(map[string]int64{"t": 10})
	a := New(store, Options{Clock: clock.Now, MaxStep: 80})
	defer a.Close()

	if id, err := a.Next(ctx, "t"); err != nil || id != 1 {
		t.Fatalf("first Next = %d, %v; want 1", id, err)
	}
	steps := []struct {
		lasted time.Duration
		want   int64
	}{
		{time.Minute, 20}, {time.Minute, 40}, {time.Minute, 80}, {time.Minute, 80}, // doubling, capped
		{31 * time.Minute, 40}, {31 * time.Minute, 20}, {31 * time.Minute, 10}, {31 * time.Minute, 10}, // halving, floored
		{20 * time.Minute, 10}, {time.Minute, 20}, {16 * time.Minute, 20}, {time.Second, 40},
	}
	var last int64 = 1
	for i, s := range steps {
		clock.Advance(s.lasted)
		st, _ := a.Stats("t")
		// Take IDs up to and including the 10% mark of the segment after
		// the current one (or of the current one, the first time), which
		// starts exactly one fetch at the advanced clock.
		n := st.Current.Start + (st.Current.End-st.Current.Start)/10 - st.NextID + 1
		if st.NextReady {
			n = st.Remaining + (st.Next.End-st.Next.Start)/10 + 1
		}
		ids, err := a.NextN(ctx, "t", int(n), nil)
		if err != nil {
			t.Fatalf("step %d: NextN(%d): %v", i, n, err)
		}
		for _, id := range ids {
			if id != last+1 {
				t.Fatalf("step %d: got %d after %d: one allocator over a private store must be gapless", i, id, last)
			}
			last = id
		}
		testwait.For(t, "prefetch", func() bool { st, _ := a.Stats("t"); return st.NextReady })
		var got []int64
		store.get(func(s *memStore) { got = slices.Clone(s.steps) })
		if len(got) != i+2 {
			t.Fatalf("step %d: %d fetches, want %d (steps %v)", i, len(got), i+2, got)
		}
		if got[i+1] != s.want {
			t.Errorf("step %d: segment lasted %v: fetched step %d, want %d (all %v)", i, s.lasted, got[i+1], s.want, got)
		}
	}
	if st, _ := a.Stats("t"); st.TableStep != 10 {
		t.Errorf("TableStep = %d, want 10", st.TableStep)
	}
}

// TestNoBlockWhileBuffered: with the next fetch hanging, every ID left in
// the current segment is still served; only then does a request wait, and it
// gets an ExhaustedError within the timeout.
func TestNoBlockWhileBuffered(t *testing.T) {
	ctx := context.Background()
	store := newMemStore(map[string]int64{"t": 100})
	a := New(store, Options{MaxStep: 100, WaitTimeout: 200 * time.Millisecond})
	defer a.Close()
	gate := make(chan struct{})
	store.set(func(s *memStore) { s.gate = gate })
	go func() { gate <- struct{}{} }() // let the first fetch through only

	done := make(chan error, 1)
	go func() {
		for want := int64(1); want <= 100; want++ {
			id, err := a.Next(ctx, "t")
			if err != nil || id != want {
				done <- errors.Join(err, errors.New("wrong id"))
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serving the buffered segment: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Next blocked while the current segment still had IDs")
	}
	if st, _ := a.Stats("t"); !st.Loading || st.NextReady {
		t.Fatalf("want the prefetch hanging, stats %+v", st)
	}
	start := time.Now()
	_, err := a.Next(ctx, "t")
	var ex *ExhaustedError
	if !errors.As(err, &ex) {
		t.Fatalf("Next with both buffers empty: %v, want ExhaustedError", err)
	}
	if waited := time.Since(start); waited < 200*time.Millisecond || waited > 10*time.Second {
		t.Errorf("waited %v for a 200ms timeout", waited)
	}
	if ex.Tag != "t" || ex.LastErr != nil || !strings.Contains(ex.Error(), `"t"`) {
		t.Errorf("ExhaustedError %+v: %v", ex, ex)
	}
	gate <- struct{}{}
	if id, err := a.Next(ctx, "t"); err != nil || id != 101 {
		t.Fatalf("after the fetch completes: %d, %v; want 101", id, err)
	}
}

func TestWaitRespectsContext(t *testing.T) {
	store := newMemStore(map[string]int64{"t": 100})
	store.set(func(s *memStore) { s.gate = make(chan struct{}) }) // never released
	a := New(store, Options{WaitTimeout: time.Hour})
	defer a.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := a.Next(ctx, "t")
		done <- err
	}()
	// Cancel once Next has started the fetch the gate holds and waits for it.
	testwait.For(t, "the fetch to start", func() bool {
		var n int
		store.get(func(s *memStore) { n = s.inflight })
		return n > 0
	})
	cancel()
	err := <-done
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Next with a cancelled context: %v, want context.Canceled", err)
	}
}

// TestStoreFailure: the ExhaustedError carries the store's error, nothing
// is lost or reused across failed fetches, and the allocator recovers.
func TestStoreFailure(t *testing.T) {
	ctx := context.Background()
	store := newMemStore(map[string]int64{"t": 10})
	a := New(store, Options{MaxStep: 10, WaitTimeout: 150 * time.Millisecond})
	defer a.Close()
	ids, err := a.NextN(ctx, "t", 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "prefetch", func() bool { st, _ := a.Stats("t"); return st.NextReady })
	store.set(func(s *memStore) { s.fail = errStoreDown })
	// 5 left in the current segment, 10 in the next: all served.
	ids, err = a.NextN(ctx, "t", 15, ids)
	if err != nil {
		t.Fatalf("buffered IDs with the store down: %v", err)
	}
	_, err = a.Next(ctx, "t")
	var ex *ExhaustedError
	if !errors.As(err, &ex) || !errors.Is(err, errStoreDown) {
		t.Fatalf("got %v, want ExhaustedError wrapping the store error", err)
	}
	if !strings.Contains(err.Error(), `"t"`) || !strings.Contains(err.Error(), errStoreDown.Error()) {
		t.Errorf("message %q should name the tag and the store error", err)
	}
	if st, _ := a.Stats("t"); st.FetchErrors == 0 || !errors.Is(st.LastErr, errStoreDown) {
		t.Errorf("stats after failures: %+v", st)
	}
	store.set(func(s *memStore) { s.fail = nil })
	var more []int64
	testwait.For(t, "recovery", func() bool {
		id, err := a.Next(ctx, "t")
		if err == nil {
			more = append(more, id)
		}
		return err == nil
	})
	more, err = a.NextN(ctx, "t", 30, more)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range more {
		if id <= ids[len(ids)-1] {
			t.Fatalf("after recovery got %d, not above %d served before", id, ids[len(ids)-1])
		}
	}
	all := append(ids, more...)
	if !slices.IsSorted(all) || len(slices.Compact(slices.Clone(all))) != len(all) {
		t.Fatalf("IDs not strictly increasing: %v", all)
	}
}

func TestUnknownTagCachedBriefly(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	store := newMemStore(nil)
	a := New(store, Options{Clock: clock.Now})
	defer a.Close()
	for i := 0; i < 50; i++ {
		_, err := a.Next(ctx, "nope")
		var unk *UnknownTagError
		if !errors.As(err, &unk) {
			t.Fatalf("call %d: %v, want UnknownTagError", i, err)
		}
		if err.Error() != "Unknown SEQUENCE: 'nope'" || unk.Code() != 4091 || unk.SQLState() != "42S02" {
			t.Fatalf("error %q code %d state %s", err, unk.Code(), unk.SQLState())
		}
	}
	var fetches int
	store.get(func(s *memStore) { fetches = s.fetches })
	if fetches != 1 {
		t.Errorf("%d store fetches for 50 calls within the miss TTL, want 1", fetches)
	}
	if err := store.Create(ctx, "nope", 10); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Next(ctx, "nope"); err == nil {
		t.Fatal("miss should still be cached")
	}
	clock.Advance(time.Second)
	if id, err := a.Next(ctx, "nope"); err != nil || id != 1 {
		t.Fatalf("after the TTL: %d, %v; want 1", id, err)
	}
	// Names that cannot be in leaf_alloc never reach the store.
	for _, bad := range []string{"", strings.Repeat("x", 129)} {
		if _, err := a.Next(ctx, bad); !errors.As(err, new(*UnknownTagError)) {
			t.Errorf("tag %q: %v", bad, err)
		}
	}
}

func TestUnknownTagsDoNotAccumulate(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	a := New(newMemStore(nil), Options{Clock: clock.Now})
	defer a.Close()
	for i := 0; i < 2000; i++ {
		a.Next(ctx, fmt.Sprintf("ghost%d", i))
		clock.Advance(100 * time.Millisecond)
	}
	if n := len(*a.tags.Load()); n > 200 {
		t.Errorf("%d tag entries kept after 2000 distinct unknown tags", n)
	}
}

// TestConcurrentMonotonic hammers one allocator over a tiny step from many
// goroutines: each goroutine's IDs increase, and all are distinct.
func TestConcurrentMonotonic(t *testing.T) {
	ctx := context.Background()
	store := newMemStore(map[string]int64{"t": 7})
	a := New(store, Options{MaxStep: 7, WaitTimeout: 10 * time.Second})
	defer a.Close()
	const workers, per = 8, 5000
	out := make([][]int64, workers)
	var wg sync.WaitGroup
	for w := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids := make([]int64, 0, per)
			for len(ids) < per {
				if len(ids)%3 == 0 {
					var err error
					if ids, err = a.NextN(ctx, "t", 4, ids); err != nil {
						t.Error(err)
						return
					}
					continue
				}
				id, err := a.Next(ctx, "t")
				if err != nil {
					t.Error(err)
					return
				}
				ids = append(ids, id)
			}
			out[w] = ids
		}()
	}
	wg.Wait()
	var all []int64
	for w, ids := range out {
		if !slices.IsSorted(ids) {
			t.Fatalf("worker %d: IDs not increasing", w)
		}
		all = append(all, ids...)
	}
	slices.Sort(all)
	if len(slices.Compact(all)) != len(all) || all[0] <= 0 {
		t.Fatal("duplicate or non-positive IDs")
	}
}
