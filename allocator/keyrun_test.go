package allocator_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/leafproxy/leafproxy/allocator"
	"github.com/leafproxy/leafproxy/allocator/segment"
	"github.com/leafproxy/leafproxy/internal/testkit/fakestore"
)

// TestNextNConsecutiveAcrossAllocators: two allocators on one store with a
// step of 10, several goroutines each, draw runs of 7 to 47 IDs (most
// longer than a segment, many crossing a segment's end while the other
// allocator fetches in between): every run is consecutive, [first,
// first+n), and no ID is handed out twice (issue 38 item 2: an ORM that
// counts a statement's keys from insert_id + i).
func TestNextNConsecutiveAcrossAllocators(t *testing.T) {
	ctx := context.Background()
	st := fakestore.New()
	a := open(t, config(), st)
	b := open(t, config(), st)
	var (
		mu   sync.Mutex
		seen = map[int64]bool{}
		dups int
		runs int
	)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		s := a
		if g%2 == 1 {
			s = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 38))
			for range 300 {
				n := 1 + rng.IntN(47)
				if rng.IntN(4) > 0 {
					n = 7 + rng.IntN(41)
				}
				ids, err := s.NextN(ctx, "seg", n, nil)
				if err != nil {
					errs <- fmt.Errorf("NextN(%d): %w", n, err)
					return
				}
				if len(ids) != n {
					errs <- fmt.Errorf("NextN(%d): %d IDs", n, len(ids))
					return
				}
				for i, id := range ids {
					if id != ids[0]+int64(i) {
						errs <- fmt.Errorf("NextN(%d): not consecutive: %v", n, ids)
						return
					}
				}
				mu.Lock()
				runs++
				for _, id := range ids {
					if seen[id] {
						dups++
					}
					seen[id] = true
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if dups != 0 {
		t.Fatalf("%d duplicate IDs in %d runs", dups, runs)
	}
	t.Logf("%d runs, %d IDs, store max_id %d", runs, len(seen), maxID(st, "seg"))
}

func maxID(st *fakestore.Store, tag string) int64 {
	r, _ := st.Segments.Get(tag)
	return r.MaxID
}

// TestKeyLimitCutsSegments (issue 38 item 9): NEXTVAL and the ID API stop
// at the widest key column's end as inserts do. A segment fetched before
// the limit was known is cut when it is set; one fetched after is cut
// when accepted; a block past the end is all or nothing; a run that does
// not fit says how many IDs were left (the row AUTO_INCREMENT's 167
// names); nothing past the end is ever handed out, and the store is not
// asked for more.
func TestKeyLimitCutsSegments(t *testing.T) {
	ctx := context.Background()
	st := fakestore.New()
	s := open(t, config(), st)
	if v, err := s.Next(ctx, "seg"); err != nil || v != 1 {
		t.Fatalf("first: %d %v", v, err) // [1, 11) buffered
	}
	s.SetKeyLimits(map[string]allocator.KeyLimit{"seg": {Max: 4, By: "t.id TINYINT"}})
	for want := int64(2); want <= 4; want++ {
		if v, err := s.Next(ctx, "seg"); err != nil || v != want {
			t.Fatalf("Next: %d %v, want %d", v, err, want)
		}
	}
	if v, err := s.Next(ctx, "seg"); code(err) != 167 {
		t.Fatalf("past the end of a segment fetched before the limit: %d %v", v, err)
	}

	// A limit known before the fetch: the segment holding it is cut.
	st.Segments.Put("late", fakestore.Row{MaxID: 1, Step: 10})
	s.SetKeyLimits(map[string]allocator.KeyLimit{"seg": {Max: 4, By: "t.id TINYINT"}, "late": {Max: 7, By: "t.id TINYINT"}})
	if first, _, _, err := s.Block(ctx, "late", 3); err != nil || first != 1 {
		t.Fatalf("Block(3): %d %v", first, err)
	}
	if ids, err := s.NextN(ctx, "late", 2, nil); err != nil || len(ids) != 2 || ids[0] != 4 || ids[1] != 5 {
		t.Fatalf("NextN(2): %v %v", ids, err)
	}
	// 6 and 7 are left: a block of 3 is all or nothing, a run of 5 says
	// two fit.
	if first, _, _, err := s.Block(ctx, "late", 3); code(err) != 167 {
		t.Fatalf("Block(3) across the end: %d %v", first, err)
	}
	_, err := s.NextN(ctx, "late", 5, nil)
	var pe *segment.PastEndError
	if !errors.As(err, &pe) || code(err) != 167 || pe.Fits() != 2 {
		t.Fatalf("NextN(5) across the end: %v (fit %+v)", err, pe)
	}
	for want := int64(6); want <= 7; want++ {
		if v, err := s.Next(ctx, "late"); err != nil || v != want {
			t.Fatalf("Next: %d %v, want %d", v, err, want)
		}
	}
	before, _ := st.Segments.Get("late")
	for range 3 {
		if v, err := s.Next(ctx, "late"); code(err) != 167 {
			t.Fatalf("past the end: %d %v", v, err)
		}
	}
	if r, _ := st.Segments.Get("late"); r.MaxID != before.MaxID {
		t.Errorf("max_id %d after the end, was %d", r.MaxID, before.MaxID)
	}
}

// TestTopOfInt64 (issue 38 item 9): near 2^63-1 the fetch is clamped (the
// store's max_id + step would overflow: MariaDB's 1690) so the last IDs,
// up to 2^63-2, are handed out once each across two allocators, then 167
// naming the tag and leaf_alloc.max_id; never 1105, never a negative ID.
func TestTopOfInt64(t *testing.T) {
	ctx := context.Background()
	st := fakestore.New()
	const left = 95
	st.Segments.Put("seg", fakestore.Row{MaxID: math.MaxInt64 - left, Step: 10})
	a := open(t, config(), st)
	b := open(t, config(), st)
	seen := map[int64]bool{}
	var errs []error
	singleEnds := 0 // single Nexts answered 167: runs of 3 may get it while single IDs are left
	for i := 0; singleEnds < 4 && i < 1000; i++ {
		s := a
		if i%3 == 0 {
			s = b
		}
		var ids []int64
		var err error
		if i%4 == 1 {
			ids, err = s.NextN(ctx, "seg", 3, nil)
		} else {
			var v int64
			v, err = s.Next(ctx, "seg")
			ids = []int64{v}
		}
		if err != nil {
			errs = append(errs, err)
			if i%4 != 1 {
				singleEnds++
			}
			continue
		}
		for _, id := range ids {
			if id < math.MaxInt64-left || id > math.MaxInt64-1 || seen[id] {
				t.Fatalf("ID %d: outside [2^63-1-%d, 2^63-2] or handed out twice", id, left)
			}
			seen[id] = true
		}
	}
	for _, s := range []*allocator.Sequences{a, b} { // what either still buffers
		for {
			v, err := s.Next(ctx, "seg")
			if err != nil {
				errs = append(errs, err)
				break
			}
			if seen[v] {
				t.Fatalf("ID %d handed out twice", v)
			}
			seen[v] = true
		}
	}
	for _, err := range errs {
		var pe *segment.PastEndError
		if code(err) != 167 || !errors.As(err, &pe) || !strings.Contains(err.Error(), "sequence 'seg' is at its end: leaf_alloc.max_id") {
			t.Fatalf("at the top: %v", err)
		}
	}
	if !seen[math.MaxInt64-1] || len(seen) < left-20 {
		t.Fatalf("%d IDs handed out, the last (2^63-2) %v: the last IDs were not handed out", len(seen), seen[math.MaxInt64-1])
	}
	if r, _ := st.Segments.Get("seg"); r.MaxID != math.MaxInt64 {
		t.Errorf("max_id %d, want 2^63-1", r.MaxID)
	}
	for _, s := range []*allocator.Sequences{a, b} {
		if _, _, _, err := s.Block(ctx, "seg", 2); code(err) != 167 {
			t.Errorf("Block at the top: %v", err)
		}
		if _, err := s.NextN(ctx, "seg", 2, nil); code(err) != 167 {
			t.Errorf("NextN at the top: %v", err)
		}
	}
	t.Logf("%d of the last %d IDs handed out, then %d answers 167", len(seen), left, len(errs))
}
