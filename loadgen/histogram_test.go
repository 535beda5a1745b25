package loadgen

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// exactPercentile is the reference: the value of rank ceil(p/100*n).
func exactPercentile(sorted []int64, p float64) int64 {
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}

func TestBucketsCoverEveryValueOnce(t *testing.T) {
	// Consecutive buckets must tile the number line: each starts right after
	// the previous one ends, and bucketOf agrees with the bounds.
	var prevHi int64 = -1
	for i := 0; i < numBuckets; i++ {
		lo, hi := bucketBounds(i)
		if lo != prevHi+1 {
			t.Fatalf("bucket %d starts at %d, previous ended at %d", i, lo, prevHi)
		}
		if bucketOf(lo) != i || bucketOf(hi) != i {
			t.Fatalf("bucket %d [%d,%d]: bucketOf gives %d and %d", i, lo, hi, bucketOf(lo), bucketOf(hi))
		}
		if lo >= subCount && float64(hi-lo+1)/float64(lo) > 1.0/halfCount+1e-12 {
			t.Fatalf("bucket %d [%d,%d] wider than %.2f%% of its value", i, lo, hi, 100.0/halfCount)
		}
		prevHi = hi
	}
	if prevHi != math.MaxInt64 {
		t.Fatalf("last bucket ends at %d, want MaxInt64", prevHi)
	}
}

func TestPercentilesOnKnownDistributions(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	dists := map[string]func() int64{
		// 1..1,000,000 uniformly: p50 ~ 500,000, p99 ~ 990,000.
		"uniform": func() int64 { return 1 + rng.Int64N(1_000_000) },
		// Exponential with mean 200us: a latency-like long tail.
		"exponential": func() int64 { return int64(rng.ExpFloat64() * 200_000) },
		// Log-normal around 1ms, spanning several powers of two.
		"lognormal": func() int64 { return int64(math.Exp(rng.NormFloat64()*1.5) * 1e6) },
		// Small integers, where buckets are exact.
		"small": func() int64 { return rng.Int64N(200) },
	}
	for name, gen := range dists {
		t.Run(name, func(t *testing.T) {
			var h Histogram
			vals := make([]int64, 200_000)
			for i := range vals {
				vals[i] = gen()
				h.Record(vals[i])
			}
			slices.Sort(vals)
			for _, p := range []float64{1, 10, 50, 90, 99, 99.9, 99.99} {
				want := exactPercentile(vals, p)
				got := h.Percentile(p)
				// The histogram reports the top of the exact value's bucket:
				// never below it, above by at most the bucket width.
				if got < want || float64(got-want) > float64(want)/halfCount+1 {
					t.Errorf("p%v = %d, exact %d (allowed [%d, %.0f])", p, got, want, want, float64(want)*(1+1.0/halfCount)+1)
				}
			}
			if h.Min() != vals[0] || h.Max() != vals[len(vals)-1] {
				t.Errorf("min/max %d/%d, want %d/%d", h.Min(), h.Max(), vals[0], vals[len(vals)-1])
			}
			if h.Percentile(100) != vals[len(vals)-1] || h.Percentile(0) != vals[0] {
				t.Errorf("p0/p100 %d/%d, want %d/%d", h.Percentile(0), h.Percentile(100), vals[0], vals[len(vals)-1])
			}
		})
	}
}

func TestPercentileUniformAnalytic(t *testing.T) {
	// Every integer 1..100000 exactly once: the p-th percentile is p*1000.
	var h Histogram
	for v := int64(1); v <= 100_000; v++ {
		h.Record(v)
	}
	for _, p := range []float64{50, 90, 99, 99.9} {
		want := int64(p * 1000)
		got := h.Percentile(p)
		if got < want || float64(got) > float64(want)*1.01 {
			t.Errorf("p%v = %d, want %d within 1%%", p, got, want)
		}
	}
	if m := h.Mean(); m != 50000.5 {
		t.Errorf("mean %v, want 50000.5", m)
	}
}

func TestMergeEqualsRecordingTogether(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var all, a, b Histogram
	for i := 0; i < 50_000; i++ {
		v := int64(rng.ExpFloat64() * 1e6)
		all.Record(v)
		if i%3 == 0 {
			a.Record(v)
		} else {
			b.Record(v)
		}
	}
	var m Histogram
	m.Merge(&a)
	m.Merge(&b)
	m.Merge(new(Histogram))
	if m.Summary() != all.Summary() {
		t.Fatalf("merged %+v\nwant   %+v", m.Summary(), all.Summary())
	}
}

func TestEmptyAndSingle(t *testing.T) {
	var h Histogram
	if h.Percentile(99) != 0 || h.Mean() != 0 || h.Count() != 0 {
		t.Fatal("empty histogram should report zeros")
	}
	h.Record(123_456_789)
	for _, p := range []float64{0, 50, 99.9, 100} {
		if got := h.Percentile(p); got != 123_456_789 {
			t.Errorf("single value: p%v = %d", p, got)
		}
	}
	h.Record(-5) // clamps to 0
	if h.Min() != 0 {
		t.Errorf("negative value should record as 0, min %d", h.Min())
	}
}

func TestRecordDoesNotAllocate(t *testing.T) {
	var h Histogram
	if n := testing.AllocsPerRun(1000, func() { h.Record(1_234_567) }); n != 0 {
		t.Fatalf("Record allocates %v times", n)
	}
}

func BenchmarkRecord(b *testing.B) {
	var h Histogram
	for i := 0; b.Loop(); i++ {
		h.Record(int64(i) * 997)
	}
}

func TestParseArg(t *testing.T) {
	good := map[string]ArgSpec{
		"rand:1:100000": {Kind: "rand", Lo: 1, Hi: 100000},
		"seq":           {Kind: "seq", Lo: 1},
		"seq:500":       {Kind: "seq", Lo: 500},
		"conn":          {Kind: "conn"},
		"const:a:b":     {Kind: "const", Value: "a:b"},
	}
	for in, want := range good {
		got, err := ParseArg(in)
		if err != nil || got != want {
			t.Errorf("ParseArg(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"rand:5", "rand:9:1", "rand:a:b", "seq:x", "zipf:1"} {
		if _, err := ParseArg(in); err == nil {
			t.Errorf("ParseArg(%q) accepted", in)
		}
	}
}

func TestArgGen(t *testing.T) {
	specs := []ArgSpec{{Kind: "rand", Lo: 10, Hi: 12}, {Kind: "seq", Lo: 100}, {Kind: "conn"}, {Kind: "const", Value: "x"}}
	const conns = 3
	seen := map[int64]bool{}
	for c := 0; c < conns; c++ {
		g := newArgGen(specs, c, conns, 7)
		for i := 0; i < 100; i++ {
			v := g.next()
			if r := v[0].(int64); r < 10 || r > 12 {
				t.Fatalf("rand out of range: %d", r)
			}
			s := v[1].(int64)
			if seen[s] || s < 100 {
				t.Fatalf("seq value %d repeated or below start", s)
			}
			seen[s] = true
			if v[2].(int64) != int64(c) || v[3].(string) != "x" {
				t.Fatalf("conn/const = %v/%v", v[2], v[3])
			}
		}
	}
	if len(seen) != conns*100 {
		t.Fatalf("%d distinct seq values, want %d", len(seen), conns*100)
	}
}
