package segment

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

func TestBoundedLoaders(t *testing.T) {
	ctx := context.Background()
	tags := map[string]int64{}
	for i := 0; i < 8; i++ {
		tags[string(rune('a'+i))] = 10
	}
	store := newMemStore(tags)
	gate := make(chan struct{})
	store.set(func(s *memStore) { s.gate = gate })
	a := New(store, Options{MaxLoaders: 2, WaitTimeout: time.Minute})
	defer a.Close()
	var wg sync.WaitGroup
	errs := make(chan error, len(tags))
	for tag := range tags {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := a.Next(ctx, tag); err != nil {
				errs <- err
			}
		}()
	}
	// Every tag's loader is started (and, bounded, all but two queue for
	// a slot) before the first fetch is let through.
	testwait.For(t, "every tag's loader to start", func() bool {
		m := *a.tags.Load()
		if len(m) < len(tags) {
			return false
		}
		for _, ts := range m {
			ts.mu.Lock()
			started := ts.loading && ts.waiters > 0
			ts.mu.Unlock()
			if !started {
				return false
			}
		}
		return true
	})
	for range tags {
		testwait.For(t, "a fetch to start", func() bool {
			var n int
			store.get(func(s *memStore) { n = s.inflight })
			return n > 0
		})
		gate <- struct{}{}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	store.get(func(s *memStore) {
		if s.maxInflight > 2 {
			t.Errorf("%d concurrent fetches with MaxLoaders 2", s.maxInflight)
		}
	})
}

func TestClose(t *testing.T) {
	ctx := context.Background()
	store := newMemStore(map[string]int64{"t": 10, "hang": 10})
	a := New(store, Options{WaitTimeout: time.Hour})
	if _, err := a.Next(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	store.set(func(s *memStore) { s.gate = make(chan struct{}) })
	waiting := make(chan error, 1)
	go func() { _, err := a.Next(ctx, "hang"); waiting <- err }()
	testwait.For(t, "the fetch", func() bool {
		var n int
		store.get(func(s *memStore) { n = s.inflight })
		return n > 0
	})
	a.Close()
	if err := <-waiting; !errors.Is(err, ErrClosed) {
		t.Errorf("waiting call after Close: %v", err)
	}
	if _, err := a.Next(ctx, "t"); !errors.Is(err, ErrClosed) {
		t.Errorf("Next after Close: %v", err)
	}
	if _, err := a.NextN(ctx, "t", 3, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("NextN after Close: %v", err)
	}
}

func TestAutoCreate(t *testing.T) {
	ctx := context.Background()
	store := newMemStore(nil)
	a := New(store, Options{AutoCreate: true, DefaultStep: 50})
	defer a.Close()
	if id, err := a.Next(ctx, "new"); err != nil || id != 1 {
		t.Fatalf("auto-create: %d, %v", id, err)
	}
	var step int64
	store.get(func(s *memStore) { step = s.rows["new"].step })
	if step != 50 {
		t.Errorf("created with step %d, want 50", step)
	}
}

// TestNextNOneRun: a batch larger than a segment is one run of
// consecutive IDs (issue 38: a statement's keys), above everything handed
// out before it; dst's own values are kept.
func TestNextNOneRun(t *testing.T) {
	ctx := context.Background()
	store := newMemStore(map[string]int64{"t": 10})
	a := New(store, Options{MaxStep: 10})
	defer a.Close()
	first, err := a.Next(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	dst := []int64{-7}
	dst, err = a.NextN(ctx, "t", 35, dst)
	if err != nil {
		t.Fatal(err)
	}
	if len(dst) != 36 || dst[0] != -7 || dst[1] <= first {
		t.Fatalf("NextN(35) after %d = %v", first, dst)
	}
	for i := 1; i < len(dst); i++ {
		if dst[i] != dst[1]+int64(i-1) {
			t.Fatalf("NextN(35) = %v: not consecutive", dst)
		}
	}
	if next, err := a.Next(ctx, "t"); err != nil || next <= dst[35] {
		t.Fatalf("Next after the run: %d, %v; want above %d", next, err, dst[35])
	}
	if ids, err := a.NextN(ctx, "t", 0, nil); err != nil || len(ids) != 0 {
		t.Fatalf("NextN(0) = %v, %v", ids, err)
	}
}
