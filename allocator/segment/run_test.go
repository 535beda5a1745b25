package segment

import (
	"context"
	"sync"
	"testing"
)

// TestRunsAndSinglesIncreasing: 16 goroutines on one allocator (step 100,
// so segments keep changing), each drawing single IDs and every 8th call
// a run of 37 (more than is left in a segment at times): every run is
// consecutive, each goroutine's IDs increase, none is handed out twice.
func TestRunsAndSinglesIncreasing(t *testing.T) {
	ctx := context.Background()
	st := newMemStore(map[string]int64{"t": 100})
	a := New(st, Options{MaxStep: 100})
	defer a.Close()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seen = map[int64]bool{}
	)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var ids []int64
			for len(ids) < 20000 {
				if len(ids)%8 == 0 {
					var err error
					at := len(ids)
					ids, err = a.NextN(ctx, "t", 37, ids)
					if err != nil {
						t.Error(err)
						return
					}
					if ids[len(ids)-1] != ids[at]+36 {
						t.Errorf("run not consecutive: %v", ids[at:])
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
			mu.Lock()
			for _, id := range ids {
				if seen[id] {
					t.Errorf("ID %d handed out twice", id)
				}
				seen[id] = true
			}
			mu.Unlock()
			for i := 1; i < len(ids); i++ {
				if ids[i] <= ids[i-1] {
					lo := max(0, i-40)
					t.Errorf("goroutine %d, ID %d: not increasing: %v", w, i, ids[lo:min(len(ids), i+3)])
					return
				}
			}
		}()
	}
	wg.Wait()
}
