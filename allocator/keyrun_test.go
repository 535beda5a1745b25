package allocator_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/leafproxy/leafproxy/internal/fakestore"
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
