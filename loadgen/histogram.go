package loadgen

import (
	"math"
	"math/bits"
	"time"
)

// subBits sets the histogram's precision: each power-of-two range is split
// into 2^(subBits-1) equal buckets, so a recorded value is known to within
// 1/2^(subBits-1) of itself (0.8% here). That is the HdrHistogram layout with
// two significant decimal digits, on a fixed array: recording is an index
// computation and an increment, and memory does not grow with the run.
const (
	subBits   = 8
	subCount  = 1 << subBits       // values below this have exact buckets
	halfCount = 1 << (subBits - 1) // buckets per power of two above that
	// Values are non-negative int64s, so the top bit never sets: shifts run
	// 1..63-subBits.
	numBuckets = subCount + (63-subBits)*halfCount
)

// Histogram records non-negative values (latencies in nanoseconds) in
// log-linear buckets. The zero value is ready to use. It is not safe for
// concurrent use: give each worker its own and Merge them at the end.
type Histogram struct {
	counts [numBuckets]uint64
	n      uint64
	sum    float64
	min    int64
	max    int64
}

func bucketOf(v int64) int {
	if v < subCount {
		return int(v)
	}
	shift := bits.Len64(uint64(v)) - subBits
	mant := int(v >> shift) // in [halfCount, subCount)
	return subCount + (shift-1)*halfCount + (mant - halfCount)
}

// bucketBounds returns the smallest and largest value that land in bucket i.
func bucketBounds(i int) (lo, hi int64) {
	if i < subCount {
		return int64(i), int64(i)
	}
	j := i - subCount
	shift := j/halfCount + 1
	mant := int64(j%halfCount + halfCount)
	lo = mant << shift
	return lo, lo + (int64(1) << shift) - 1
}

// Record adds one value; negative values count as 0.
func (h *Histogram) Record(v int64) {
	if v < 0 {
		v = 0
	}
	h.counts[bucketOf(v)]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.n++
	h.sum += float64(v)
}

// Merge adds every value recorded in o.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
	h.n += o.n
	h.sum += o.sum
}

// Count is the number of recorded values.
func (h *Histogram) Count() uint64 { return h.n }

// Min and Max are exact.
func (h *Histogram) Min() int64 { return h.min }

// Max is the largest recorded value, exact.
func (h *Histogram) Max() int64 { return h.max }

// Mean is exact up to float rounding.
func (h *Histogram) Mean() float64 {
	if h.n == 0 {
		return 0
	}
	return h.sum / float64(h.n)
}

// Percentile returns the value at or below which p percent (0..100) of the
// recorded values fall: the value of rank ceil(p/100*n). It reports the top
// of that value's bucket (as HdrHistogram does), clamped to the exact
// min/max, so it never understates a latency by more than the bucket width.
func (h *Histogram) Percentile(p float64) int64 {
	if h.n == 0 {
		return 0
	}
	if p <= 0 {
		return h.min
	}
	if p >= 100 {
		return h.max
	}
	rank := uint64(math.Ceil(p / 100 * float64(h.n)))
	if rank < 1 {
		rank = 1
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			_, hi := bucketBounds(i)
			return max(min(hi, h.max), h.min)
		}
	}
	return h.max
}

// Summary is a histogram's headline figures as durations.
type Summary struct {
	Count uint64        `json:"count"`
	Min   time.Duration `json:"min_ns"`
	Mean  time.Duration `json:"mean_ns"`
	P50   time.Duration `json:"p50_ns"`
	P90   time.Duration `json:"p90_ns"`
	P99   time.Duration `json:"p99_ns"`
	P999  time.Duration `json:"p999_ns"`
	Max   time.Duration `json:"max_ns"`
}

// Summary computes the headline percentiles of a latency histogram in ns.
func (h *Histogram) Summary() Summary {
	return Summary{
		Count: h.n,
		Min:   time.Duration(h.Min()),
		Mean:  time.Duration(h.Mean()),
		P50:   time.Duration(h.Percentile(50)),
		P90:   time.Duration(h.Percentile(90)),
		P99:   time.Duration(h.Percentile(99)),
		P999:  time.Duration(h.Percentile(99.9)),
		Max:   time.Duration(h.Max()),
	}
}
