package segment

import (
	"context"
	"testing"
)

// BenchmarkNextNRun: a statement's IDs from the buffered segments (an
// in-memory store, step 100,000 growing: the store is not what is
// measured): NextN of 1 and of 20 (one run, issue 38), serial and from
// GOMAXPROCS goroutines, beside Next. scripts/bench-before-after.sh
// compares it with an earlier commit's.
func BenchmarkNextNRun(b *testing.B) {
	ctx := context.Background()
	for _, bc := range []struct {
		name     string
		n        int
		parallel bool
	}{
		{"next", 0, false}, {"nextn-1", 1, false}, {"nextn-20", 20, false},
		{"next-parallel", 0, true}, {"nextn-20-parallel", 20, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			a := New(newMemStore(map[string]int64{"t": 100_000}), Options{})
			defer a.Close()
			if _, err := a.Next(ctx, "t"); err != nil {
				b.Fatal(err)
			}
			draw := func(dst []int64) []int64 {
				if bc.n == 0 {
					v, err := a.Next(ctx, "t")
					if err != nil {
						b.Fatal(err)
					}
					return append(dst[:0], v)
				}
				dst, err := a.NextN(ctx, "t", bc.n, dst[:0])
				if err != nil {
					b.Fatal(err)
				}
				return dst
			}
			b.ReportAllocs()
			b.ResetTimer()
			if !bc.parallel {
				dst := make([]int64, 0, 32)
				for range b.N {
					dst = draw(dst)
				}
				return
			}
			b.RunParallel(func(pb *testing.PB) {
				dst := make([]int64, 0, 32)
				for pb.Next() {
					dst = draw(dst)
				}
			})
		})
	}
}
