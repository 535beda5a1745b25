// Package metric holds the statement path's counters and latency
// histograms: per session (or per runner), written by whoever serves the
// session at the time and read by a metrics scrape, which adds them up.
// Nothing here is shared between sessions, so counting costs no contended
// cache line, no lock and no allocation: an increment is a load and a
// store of a word the writer already owns.
//
// The one rule: a Counter or Histogram has one writer at a time (the
// session's goroutine, or the event loop runner holding the session), and
// hand-overs between writers are synchronised (a lock or a channel), as
// they are for everything else a session owns. Readers may read at any
// time: every word is read and written atomically.
package metric

import "sync/atomic"

// Counter counts up. Add may be called by one goroutine at a time; Load
// by any.
type Counter struct{ value atomic.Uint64 }

// Add adds n (one writer at a time: no read-modify-write instruction).
func (c *Counter) Add(n uint64) { c.value.Store(c.value.Load() + n) }

// Inc adds one.
func (c *Counter) Inc() { c.Add(1) }

// Load reads the count.
func (c *Counter) Load() uint64 { return c.value.Load() }

// Bounds are the upper bounds of the duration histograms' buckets, in
// nanoseconds: 10 us to 10 s, 1-2.5-5 per decade. A statement the proxy
// answers itself (NEXTVAL) takes microseconds; one the backend answers,
// from tens of microseconds on. Observe scans them from the smallest, so
// the common fast answers find their bucket in a few comparisons.
var Bounds = [...]int64{
	10e3, 25e3, 50e3, 100e3, 250e3, 500e3,
	1e6, 2.5e6, 5e6, 10e6, 25e6, 50e6, 100e6, 250e6, 500e6,
	1e9, 2.5e9, 5e9, 10e9,
}

// Buckets is the number of buckets: one per bound and one above the last.
const Buckets = len(Bounds) + 1

// Histogram counts durations into Bounds' buckets. One writer at a time,
// as Counter.
type Histogram struct {
	counts [Buckets]Counter
	sum    Counter // nanoseconds
}

// Observe records one duration in nanoseconds (negative counts as 0: a
// wall clock that stepped back).
func (h *Histogram) Observe(ns int64) {
	if ns < 0 {
		ns = 0
	}
	i := 0
	for i < len(Bounds) && ns > Bounds[i] {
		i++
	}
	h.counts[i].Inc()
	h.sum.Add(uint64(ns))
}

// AddTo adds h's counts to s.
func (h *Histogram) AddTo(s *Snapshot) {
	for i := range h.counts {
		s.Counts[i] += h.counts[i].Load()
	}
	s.SumNanos += h.sum.Load()
}

// Snapshot is a histogram's counts at one moment, or a sum of several.
type Snapshot struct {
	Counts   [Buckets]uint64 // per bucket (not cumulative)
	SumNanos uint64
}

// Add adds o to s.
func (s *Snapshot) Add(o *Snapshot) {
	for i := range o.Counts {
		s.Counts[i] += o.Counts[i]
	}
	s.SumNanos += o.SumNanos
}

// Count is the number of observations.
func (s *Snapshot) Count() uint64 {
	var n uint64
	for _, c := range s.Counts {
		n += c
	}
	return n
}

// Cumulative returns the cumulative count at each bound, keyed by the
// bound in seconds (the Prometheus form; the last bucket is the count).
func (s *Snapshot) Cumulative() map[float64]uint64 {
	m := make(map[float64]uint64, len(Bounds))
	var run uint64
	for i, b := range Bounds {
		run += s.Counts[i]
		m[float64(b)/1e9] = run
	}
	return m
}
