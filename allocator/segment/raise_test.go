package segment

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

// TestRaise: SETVAL's store operation and the allocator's side of it.
// Under concurrent NextN from two allocators on one table, Raise moves the
// floor: every ID asked for after Raise returned is at or above it, no ID
// repeats, a lower floor is refused naming max_id, and an unknown tag is
// UnknownTagError (or created, with AutoCreate).
func TestRaise(t *testing.T) {
	ctx := context.Background()
	srv := testdb.Start(t)
	db := openStore(t, srv, "leaf", map[string]int64{"order": 100})
	a := New(NewMySQLStore(db), Options{MaxStep: 100})
	defer a.Close()
	b := New(NewMySQLStore(srv.Open(t, "leaf")), Options{MaxStep: 100})
	defer b.Close()

	// a holds a buffered segment below the floor.
	if id, err := a.Next(ctx, "order"); err != nil || id != 1 {
		t.Fatalf("first ID %d, %v", id, err)
	}

	var (
		mu     sync.Mutex
		ids    []int64
		raised atomic.Bool
		wg     sync.WaitGroup
		stop   = make(chan struct{})
		late   atomic.Int64 // IDs below the floor asked for after Raise returned
		calls  atomic.Int64 // NextN calls that returned, all workers
		callsA atomic.Int64 // of them, on a after Raise returned
	)
	const floor = 50_000
	for w := range 8 {
		alloc := a
		if w%2 == 1 {
			alloc = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var local []int64
			for {
				select {
				case <-stop:
					mu.Lock()
					ids = append(ids, local...)
					mu.Unlock()
					return
				default:
				}
				after := raised.Load()
				got, err := alloc.NextN(ctx, "order", 3, nil)
				if err != nil {
					t.Error(err)
					return
				}
				// Only a's buffers are dropped: b may finish its own.
				if after && alloc == a && got[0] < floor {
					late.Add(1)
				}
				local = append(local, got...)
				calls.Add(1)
				if after && alloc == a {
					callsA.Add(1)
				}
			}
		}()
	}
	// Raise while both allocators are drawing, and keep drawing after it
	// until a has answered many calls asked after Raise returned.
	testwait.For(t, "NextN traffic on both allocators", func() bool { return calls.Load() >= 200 })
	if err := a.Raise(ctx, "order", floor); err != nil {
		t.Fatalf("Raise: %v", err)
	}
	raised.Store(true)
	testwait.For(t, "NextN calls on a after Raise", func() bool { return callsA.Load() >= 200 })
	close(stop)
	wg.Wait()
	checkUnique(t, ids)
	if n := late.Load(); n > 0 {
		t.Errorf("%d NextN calls on the raising allocator got IDs below the floor after Raise returned", n)
	}
	if st, _ := a.Stats("order"); st.Refused != 0 {
		t.Errorf("Raise made the allocator refuse %d segments as stale", st.Refused)
	}

	// Lower than what was handed out: refused, naming max_id.
	err := a.Raise(ctx, "order", 10)
	var below *BelowIssuedError
	if !errors.As(err, &below) || below.MaxID <= floor || below.Code() != 1210 {
		t.Errorf("Raise below issued IDs: %v, want BelowIssuedError with max_id above %d", err, floor)
	}
	var unknown *UnknownTagError
	if err := a.Raise(ctx, "nosuch", 10); !errors.As(err, &unknown) {
		t.Errorf("Raise of an unknown tag: %v, want UnknownTagError", err)
	}
	c := New(NewMySQLStore(db), Options{AutoCreate: true, DefaultStep: 10})
	defer c.Close()
	if err := c.Raise(ctx, "fresh", 500); err != nil {
		t.Fatalf("Raise with AutoCreate: %v", err)
	}
	if id, err := c.Next(ctx, "fresh"); err != nil || id != 500 {
		t.Errorf("first ID after Raise(fresh, 500): %d, %v; want 500", id, err)
	}
}

// TestCreateFloor: a tag made by auto-create starts above CreateFloor.
func TestCreateFloor(t *testing.T) {
	ctx := context.Background()
	srv := testdb.Start(t)
	db := openStore(t, srv, "leaf", nil)
	s := NewMySQLStore(db)
	s.CreateFloor = func(ctx context.Context, tag string) (int64, error) { return 3000, nil }
	a := New(s, Options{AutoCreate: true, DefaultStep: 10})
	defer a.Close()
	if id, err := a.Next(ctx, "order"); err != nil || id != 3001 {
		t.Errorf("first ID %d, %v; want 3001", id, err)
	}
	s.CreateFloor = func(ctx context.Context, tag string) (int64, error) { return 0, errors.New("backend down") }
	if _, err := a.Next(ctx, "other"); err == nil {
		t.Errorf("auto-create without a floor succeeded; it must not start a rule table's tag at 1")
	}
}
