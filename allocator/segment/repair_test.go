package segment

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

// A store that moves back (a failover to a stale replica): refused,
// repaired, and seen by the watch (repair.go).

// TestStaleSegmentRefused: a store that moved back is refused, reported,
// never served; the allocator resumes once the store is ahead again.
func TestStaleSegmentRefused(t *testing.T) {
	ctx := context.Background()
	store := newMemStore(map[string]int64{"t": 100})
	a := New(store, Options{MaxStep: 100, WaitTimeout: 300 * time.Millisecond})
	defer a.Close()
	var served []int64
	// 105 IDs: into the second segment [101, 201) but short of its
	// trigger (111), so no fetch of a third is under way when the store
	// moves back and the high-water mark is 201 for certain. (At 150 the
	// prefetch of [201, 301) raced the move; a loaded -race run once won
	// it and served 300.)
	for range 105 {
		id, err := a.Next(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		served = append(served, id)
	}
	if st, _ := a.Stats("t"); st.HighWater != 201 || st.Loading {
		t.Fatalf("before the move: high water %d, loading %v; want 201 and no load", st.HighWater, st.Loading)
	}
	store.set(func(s *memStore) { s.stale = &Range{Start: 1, End: 101, TableStep: 100} })
	for {
		id, err := a.Next(ctx, "t")
		if err != nil {
			var ex *ExhaustedError
			var stale *StaleSegmentError
			if !errors.As(err, &ex) || !errors.As(err, &stale) {
				t.Fatalf("got %v, want ExhaustedError with a StaleSegmentError", err)
			}
			if stale.HighWater != 201 || stale.Got.Start != 1 {
				t.Errorf("stale error %+v", stale)
			}
			break
		}
		served = append(served, id)
		if len(served) > 1000 {
			t.Fatal("kept serving IDs from a stale store")
		}
	}
	if len(served) != 200 {
		t.Errorf("served %d IDs, want exactly the 200 fetched before the store moved back", len(served))
	}
	st, _ := a.Stats("t")
	var stale *StaleSegmentError
	if st.Refused == 0 || !errors.As(st.LastErr, &stale) || st.HighWater != 201 {
		t.Errorf("stats do not report the refusal: %+v", st)
	}
	store.set(func(s *memStore) { s.stale = nil })
	testwait.For(t, "recovery", func() bool {
		id, err := a.Next(ctx, "t")
		if err == nil {
			served = append(served, id)
		}
		return err == nil
	})
	if last := served[len(served)-1]; last < 201 {
		t.Fatalf("after recovery served %d, below the high-water mark", last)
	}
	if !slices.IsSorted(served) || len(slices.Compact(slices.Clone(served))) != len(served) {
		t.Fatal("IDs not strictly increasing")
	}
}

// TestStoreMovedBackRepaired: the store's max_id moves
// back below what this allocator already issued (a failover to a stale
// replica). The allocator refuses the stale segment, raises max_id past
// its high-water mark plus the margin in one conditional update, fetches
// again and goes on without a single failed request; other allocators on
// the same store then receive ranges above the floor too.
func TestStoreMovedBackRepaired(t *testing.T) {
	ctx := context.Background()
	store := newMemStore(map[string]int64{"t": 100})
	a := New(store, Options{MaxStep: 100, RepairMargin: 5000, WaitTimeout: time.Second})
	defer a.Close()
	var served []int64
	for range 150 { // across two segments: the high-water mark is 201
		id, err := a.Next(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		served = append(served, id)
	}
	testwait.For(t, "prefetch", func() bool { st, _ := a.Stats("t"); return st.NextReady })
	st, _ := a.Stats("t")
	hwm := st.HighWater
	store.set(func(s *memStore) { s.rows["t"].maxID -= 1000 })
	for range 1000 {
		id, err := a.Next(ctx, "t")
		if err != nil {
			t.Fatalf("request failed while the allocator repaired the store: %v", err)
		}
		served = append(served, id)
	}
	st, _ = a.Stats("t")
	if st.Repairs != 1 || st.Refused != 1 {
		t.Fatalf("repairs %d refused %d, want 1 and 1", st.Repairs, st.Refused)
	}
	store.get(func(s *memStore) {
		if len(s.raises) != 1 || s.raises[0] != hwm+5000 {
			t.Errorf("raises %v, want [%d]", s.raises, hwm+5000)
		}
	})
	if !slices.IsSorted(served) || len(slices.Compact(slices.Clone(served))) != len(served) {
		t.Fatal("IDs not strictly increasing")
	}
	if served[len(served)-1] < hwm+5000 {
		t.Fatalf("last id %d below the repaired floor %d", served[len(served)-1], hwm+5000)
	}
	// Another allocator that never saw the move gets ranges above the floor.
	b := New(store, Options{MaxStep: 100})
	defer b.Close()
	if id, err := b.Next(ctx, "t"); err != nil || id < hwm+5000 {
		t.Fatalf("second allocator: %d, %v", id, err)
	}
}

// TestWatchSeesMoveBackOthersWereGiven: the store moves back to a value
// above this allocator's own high-water mark but below ranges another
// allocator was given. The high-water mark alone cannot see that; the
// read-back of max_id can: it repairs the store before this allocator
// fetches the re-issued range.
func TestWatchSeesMoveBackOthersWereGiven(t *testing.T) {
	ctx := context.Background()
	store := newMemStore(map[string]int64{"t": 100})
	a := New(store, Options{MaxStep: 100, RepairMargin: 5000, WatchEvery: 10 * time.Millisecond})
	defer a.Close()
	b := New(store, Options{MaxStep: 100, WatchEvery: -1})
	defer b.Close()
	if _, err := a.NextN(ctx, "t", 20, nil); err != nil { // [1,101) and the prefetched [101,201)
		t.Fatal(err)
	}
	testwait.For(t, "prefetch", func() bool { st, _ := a.Stats("t"); return st.NextReady })
	bIDs, err := b.NextN(ctx, "t", 700, nil) // b takes [201, 1001) and more
	if err != nil {
		t.Fatal(err)
	}
	var top int64
	store.get(func(s *memStore) { top = s.rows["t"].maxID })
	testwait.For(t, "read-back", func() bool {
		var n int
		store.get(func(s *memStore) { n = s.peeks })
		return n >= 3
	})
	store.set(func(s *memStore) { s.rows["t"].maxID = 301 }) // above a's mark (201), inside b's ranges
	testwait.For(t, "repair", func() bool { st, _ := a.Stats("t"); return st.Repairs == 1 })
	store.get(func(s *memStore) {
		if s.rows["t"].maxID < top+5000 {
			t.Errorf("max_id %d after repair, want at least %d (last read back + margin)", s.rows["t"].maxID, top+5000)
		}
	})
	aIDs, err := a.NextN(ctx, "t", 500, nil)
	if err != nil {
		t.Fatal(err)
	}
	all := append(slices.Clone(bIDs), aIDs...)
	slices.Sort(all)
	if len(slices.Compact(all)) != len(bIDs)+len(aIDs) {
		t.Fatal("a re-issued IDs b was given")
	}
}

// TestRefusedFetchTakesNothing: two allocators, the store moved back
// below both their high-water marks. b's fetch comes first and is refused;
// before b has repaired the store, a fetches. A refused fetch that still
// advanced max_id would have lifted the stale max_id past a's mark, into
// the segment b is serving, and a would have accepted it (duplicates with
// b). The fetch is conditional on the caller's mark: b's refused fetch
// leaves max_id where it was, a's is refused too, and no ID is issued
// twice.
func TestRefusedFetchTakesNothing(t *testing.T) {
	ctx := context.Background()
	store := newMemStore(map[string]int64{"t": 100})
	clock := newFakeClock()
	opts := Options{MaxStep: 100, RepairMargin: 5000, WatchEvery: -1, Clock: clock.Now}
	a := New(store, opts)
	defer a.Close()
	b := New(store, opts)
	defer b.Close()
	aIDs, err := a.NextN(ctx, "t", 1, nil) // a: [1, 101), mark 101
	if err != nil {
		t.Fatal(err)
	}
	bIDs, err := b.NextN(ctx, "t", 1, nil) // b: [101, 201), mark 201
	if err != nil {
		t.Fatal(err)
	}

	// b's prefetch waits at the gate until the store has moved back.
	store.set(func(s *memStore) { s.gate = make(chan struct{}) })
	if bIDs, err = b.NextN(ctx, "t", 99, bIDs); err != nil { // the rest of [101, 201): past 10%, b prefetches
		t.Fatal(err)
	}
	testwait.For(t, "b's prefetch at the gate", func() bool {
		var n int
		store.get(func(s *memStore) { n = s.inflight })
		return n == 1
	})
	bFetched, release := make(chan struct{}), make(chan struct{})
	var gate chan struct{}
	store.set(func(s *memStore) {
		s.rows["t"].maxID = 51 // a replica that lags behind both allocators' last fetches
		gate = s.gate
		first := true
		s.after = func(int64) {
			if first { // b's fetch: held after the store answered, before b repairs
				first = false
				close(bFetched)
				<-release
			}
		}
	})
	gate <- struct{}{}
	<-bFetched
	store.set(func(s *memStore) { s.gate = nil })
	var stale int64
	store.get(func(s *memStore) { stale = s.rows["t"].maxID })
	if stale != 51 {
		t.Errorf("max_id %d after b's refused fetch, want 51: a refused fetch must take nothing", stale)
	}

	// a fetches while b has not repaired yet.
	if aIDs, err = a.NextN(ctx, "t", 100, aIDs); err != nil {
		t.Fatal(err)
	}
	close(release)
	if bIDs, err = b.NextN(ctx, "t", 100, bIDs); err != nil {
		t.Fatal(err)
	}
	if last := aIDs[len(aIDs)-1]; last < 201 {
		t.Errorf("a's first segment after the move starts at %d, inside b's [101, 201)", last)
	}
	all := append(slices.Clone(aIDs), bIDs...)
	slices.Sort(all)
	if n := len(all) - len(slices.Compact(slices.Clone(all))); n != 0 {
		t.Errorf("%d IDs issued twice (a: ..%v, b: ..%v)", n, aIDs[len(aIDs)-3:], bIDs[len(bIDs)-3:])
	}
	for name, al := range map[string]*Allocator{"a": a, "b": b} {
		if st, _ := al.Stats("t"); st.Refused == 0 || st.Repairs == 0 {
			t.Errorf("%s: refused %d, repairs %d: want the move seen by both", name, st.Refused, st.Repairs)
		}
	}
}
