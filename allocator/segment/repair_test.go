package segment

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
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
	served, err := a.NextN(ctx, "t", 150, nil)
	if err != nil {
		t.Fatal(err)
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
	waitFor(t, "recovery", func() bool {
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
	served, err := a.NextN(ctx, "t", 150, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "prefetch", func() bool { st, _ := a.Stats("t"); return st.NextReady })
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
	waitFor(t, "prefetch", func() bool { st, _ := a.Stats("t"); return st.NextReady })
	bIDs, err := b.NextN(ctx, "t", 700, nil) // b takes [201, 1001) and more
	if err != nil {
		t.Fatal(err)
	}
	var top int64
	store.get(func(s *memStore) { top = s.rows["t"].maxID })
	waitFor(t, "read-back", func() bool {
		var n int
		store.get(func(s *memStore) { n = s.peeks })
		return n >= 3
	})
	store.set(func(s *memStore) { s.rows["t"].maxID = 301 }) // above a's mark (201), inside b's ranges
	waitFor(t, "repair", func() bool { st, _ := a.Stats("t"); return st.Repairs == 1 })
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
