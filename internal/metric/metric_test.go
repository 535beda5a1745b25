package metric

import (
	"sync"
	"testing"
)

func TestHistogramBuckets(t *testing.T) {
	var h Histogram
	for _, ns := range []int64{-5, 0, 10e3, 10e3 + 1, 3e6, 10e9, 11e9} {
		h.Observe(ns)
	}
	var s Snapshot
	h.AddTo(&s)
	if s.Count() != 7 {
		t.Fatalf("count %d, want 7", s.Count())
	}
	c := s.Cumulative()
	// -5 and 0 and exactly 10 us fall in the first bucket (le is inclusive).
	for _, x := range []struct {
		le   float64
		want uint64
	}{{10e-6, 3}, {25e-6, 4}, {2.5e-3, 4}, {5e-3, 5}, {10, 6}} {
		if c[x.le] != x.want {
			t.Errorf("le=%g: %d, want %d", x.le, c[x.le], x.want)
		}
	}
	if want := uint64(10e3 + 10e3 + 1 + 3e6 + 10e9 + 11e9); s.SumNanos != want {
		t.Errorf("sum %d, want %d", s.SumNanos, want)
	}
	var total Snapshot
	total.Add(&s)
	total.Add(&s)
	if total.Count() != 14 || total.SumNanos != 2*s.SumNanos {
		t.Errorf("Add: %d observations, sum %d", total.Count(), total.SumNanos)
	}
}

func TestObserveAllocates(t *testing.T) {
	var h Histogram
	var c Counter
	if n := testing.AllocsPerRun(1000, func() { h.Observe(123456); c.Inc() }); n != 0 {
		t.Fatalf("%v allocations per observation", n)
	}
}

// One writer, concurrent readers (a scrape): no torn or lost counts, and
// the race detector sees only atomic accesses.
func TestOneWriterManyReaders(t *testing.T) {
	var h Histogram
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Go(func() {
			var last uint64
			for {
				select {
				case <-stop:
					return
				default:
				}
				var s Snapshot
				h.AddTo(&s)
				if n := s.Count(); n < last {
					t.Errorf("count went back from %d to %d", last, n)
					return
				} else {
					last = n
				}
			}
		})
	}
	for i := range 100000 {
		h.Observe(int64(i))
	}
	close(stop)
	wg.Wait()
	var s Snapshot
	h.AddTo(&s)
	if s.Count() != 100000 {
		t.Fatalf("count %d", s.Count())
	}
}
