package segment

import (
	"context"
	"slices"
	"sort"
	"sync"
	"testing"

	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
)

// TestBlockFromSegmentAndStore: a block that fits in the current segment
// comes from it (no fetch, the segment's next IDs follow it); a larger one
// is a range of its own from the store, and the IDs after it come from a
// segment above it (what was buffered below it is dropped).
func TestBlockFromSegmentAndStore(t *testing.T) {
	ctx := context.Background()
	st := newMemStore(map[string]int64{"t": 1000}) // prefetch once 101 is handed out
	a := New(st, Options{WatchEvery: -1})
	defer a.Close()
	if id, err := a.Next(ctx, "t"); err != nil || id != 1 {
		t.Fatalf("first ID %d, %v", id, err)
	}
	first, err := a.Block(ctx, "t", 10)
	if err != nil || first != 2 {
		t.Fatalf("small block at %d, %v; want 2 (from the segment)", first, err)
	}
	if id, _ := a.Next(ctx, "t"); id != 12 {
		t.Fatalf("ID after the block %d, want 12", id)
	}
	fetches, _ := st.counts()
	first, err = a.Block(ctx, "t", 5000)
	if err != nil {
		t.Fatal(err)
	}
	// One range of exactly 5000 for the block; the loader it starts for
	// the next segment may already have fetched too (its own step).
	if _, steps := st.counts(); len(slices.DeleteFunc(slices.Clone(steps[fetches:]), func(s int64) bool { return s != 5000 })) != 1 {
		t.Fatalf("large block: fetches since %v, want one of 5000", steps[fetches:])
	}
	if first < 1001 {
		t.Fatalf("large block at %d overlaps the segment [1, 1001)", first)
	}
	if id, _ := a.Next(ctx, "t"); id != first+5000 {
		t.Fatalf("ID after the large block %d, want %d: right above it", id, first+5000)
	}
	if _, err := a.Block(ctx, "nope", 3); err == nil {
		t.Fatal("block of an unknown tag: no error")
	}
	if _, err := a.Block(ctx, "t", 0); err == nil {
		t.Fatal("block of 0: no error")
	}
}

// TestBlocksDisjointOnMariaDB: blocks of every size and single IDs taken
// at once by two allocators on one leaf_alloc never overlap.
func TestBlocksDisjointOnMariaDB(t *testing.T) {
	ctx := context.Background()
	srv := testdb.Start(t)
	db := openStore(t, srv, "leaf", map[string]int64{"t": 50})
	allocs := []*Allocator{New(NewMySQLStore(db), Options{}), New(NewMySQLStore(srv.Open(t, "leaf")), Options{})}
	for _, a := range allocs {
		defer a.Close()
	}
	type span struct{ lo, hi int64 }
	var (
		mu    sync.Mutex
		spans []span
		wg    sync.WaitGroup
	)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := allocs[g%2]
			for i := range 40 {
				n := int64([]int{1, 7, 30, 200}[(g+i)%4])
				var lo int64
				var err error
				if n == 1 {
					lo, err = a.Next(ctx, "t")
				} else {
					lo, err = a.Block(ctx, "t", n)
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				spans = append(spans, span{lo, lo + n})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Slice(spans, func(i, j int) bool { return spans[i].lo < spans[j].lo })
	for i := 1; i < len(spans); i++ {
		if spans[i].lo < spans[i-1].hi {
			t.Fatalf("[%d, %d) overlaps [%d, %d)", spans[i].lo, spans[i].hi, spans[i-1].lo, spans[i-1].hi)
		}
	}
}

// TestAdvance: after Advance(v) every ID handed out is above v: inside the
// current segment (cursor moved, no store call), in the buffered next
// one, and beyond everything the allocator knows (the store is raised).
func TestAdvance(t *testing.T) {
	ctx := context.Background()
	st := newMemStore(map[string]int64{"t": 1000}) // prefetch once 101 is handed out
	a := New(st, Options{WatchEvery: -1})
	defer a.Close()
	if id, _ := a.Next(ctx, "t"); id != 1 {
		t.Fatalf("first ID %d", id)
	}
	fetches, _ := st.counts()
	if err := a.Advance(ctx, "t", 50); err != nil {
		t.Fatal(err)
	}
	if id, _ := a.Next(ctx, "t"); id != 51 {
		t.Fatalf("after Advance(50): %d, want 51", id)
	}
	if n, _ := st.counts(); n != fetches {
		t.Fatalf("Advance inside the segment fetched %d times", n-fetches)
	}
	if err := a.Advance(ctx, "t", 10); err != nil { // below: nothing moves
		t.Fatal(err)
	}
	if id, _ := a.Next(ctx, "t"); id != 52 {
		t.Fatalf("after Advance(10): %d, want 52", id)
	}
	if err := a.Advance(ctx, "t", 1_000_000); err != nil {
		t.Fatal(err)
	}
	id, err := a.Next(ctx, "t")
	if err != nil || id <= 1_000_000 {
		t.Fatalf("after Advance(1000000): %d, %v", id, err)
	}
	// A second allocator on the same store fetches above it too.
	b := New(st, Options{WatchEvery: -1})
	defer b.Close()
	if id, _ := b.Next(ctx, "t"); id <= 1_000_000 {
		t.Fatalf("another allocator: %d, below the advanced key", id)
	}
	if err := a.Advance(ctx, "nope", 5); err != nil {
		t.Fatalf("unknown tag: %v", err)
	}
}

// counts reads the store's fetch count and steps under its lock (loaders
// run concurrently).
func (s *memStore) counts() (int, []int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fetches, append([]int64(nil), s.steps...)
}

// TestBlockFirstUseTakesFirstSegment (issue 40): a tag's first draw as a
// block (the HTTP ID API's way) waits for the first segment, as NEXTVAL
// does, and takes its first ID, rather than fetching a range of its own
// beside the loader and dropping the segment the loader brings.
func TestBlockFirstUseTakesFirstSegment(t *testing.T) {
	ctx := context.Background()
	for i := range 20 {
		st := newMemStore(map[string]int64{"t": 40})
		a := New(st, Options{WatchEvery: -1})
		first, err := a.Block(ctx, "t", 1)
		if err != nil || first != 1 {
			a.Close()
			t.Fatalf("try %d: first block at %d, %v; want 1, as NEXTVAL's first ID", i, first, err)
		}
		if id, _ := a.Next(ctx, "t"); id != 2 {
			t.Fatalf("try %d: the ID after it %d, want 2", i, id)
		}
		if fetches, _ := st.counts(); fetches != 1 {
			t.Fatalf("try %d: %d fetches, want 1", i, fetches)
		}
		a.Close()
	}
}
