package edge

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestTrackerEdges(t *testing.T) {
	var tr Tracker
	t0 := time.Unix(1000, 0)
	if _, ended := tr.Recover(t0); ended {
		t.Fatal("Recover on a fresh tracker ended something")
	}
	steps := []struct {
		fail       bool
		began, end bool
	}{
		{fail: true, began: true},
		{fail: true},
		{fail: true},
		{end: true},
		{},
		{fail: true, began: true},
		{end: true},
	}
	for i, s := range steps {
		now := t0.Add(time.Duration(i) * time.Second)
		if s.fail {
			if got := tr.Fail(now); got != s.began {
				t.Fatalf("step %d: Fail = %v, want %v", i, got, s.began)
			}
			if !tr.Down() {
				t.Fatalf("step %d: not down after Fail", i)
			}
			continue
		}
		lasted, ended := tr.Recover(now)
		if ended != s.end {
			t.Fatalf("step %d: Recover ended = %v, want %v", i, ended, s.end)
		}
		if i == 3 && lasted != 3*time.Second {
			t.Fatalf("step %d: lasted %v, want 3s (from the first failure)", i, lasted)
		}
		if tr.Down() {
			t.Fatalf("step %d: down after Recover", i)
		}
	}
}

// Many goroutines failing and recovering at once: each Fail that began
// the condition is matched by exactly one Recover that ended it.
func TestTrackerConcurrent(t *testing.T) {
	var tr Tracker
	var began, ended atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				if (i+g)%3 == 0 {
					if _, ok := tr.Recover(time.Now()); ok {
						ended.Add(1)
					}
				} else if tr.Fail(time.Now()) {
					began.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if _, ok := tr.Recover(time.Now()); ok {
		ended.Add(1)
	}
	if began.Load() != ended.Load() || began.Load() == 0 {
		t.Fatalf("%d began, %d ended", began.Load(), ended.Load())
	}
}
