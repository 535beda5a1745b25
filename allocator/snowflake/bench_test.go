package snowflake

import (
	"context"
	"testing"
	"time"
)

// reportRate adds IDs per millisecond, the figure the sequence limit caps
// (4096/ms for 12 sequence bits and 1 ms ticks, i.e. 244 ns/op).
func reportRate(b *testing.B, start time.Time) {
	b.ReportMetric(float64(b.N)/(float64(time.Since(start))/float64(time.Millisecond)), "IDs/ms")
}

func benchOurs(b *testing.B, layout Layout, parallel bool) {
	g, err := New(context.Background(), Options{Layout: layout, Worker: FixedWorker(0)})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	if parallel {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := g.Next(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		})
	} else {
		for range b.N {
			if _, err := g.Next(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	reportRate(b, start)
}

// BenchmarkNext is our Next with the default layout and with
// "wide-sequence" (41/0/22: 4M IDs per ms), which lifts the sequence
// limit, showing what our code costs when it is not the cap. The
// comparison with bwmarrin/snowflake and sonyflake in one run is
// bench's BenchmarkSnowflakeNext (a module of its own, so the product's
// go.mod does not list them).
func BenchmarkNext(b *testing.B) {
	wide := Layout{TimeBits: 41, WorkerBits: 0, SequenceBits: 22}
	b.Run("leafproxy/default", func(b *testing.B) { benchOurs(b, Layout{}, false) })
	b.Run("leafproxy/default-parallel", func(b *testing.B) { benchOurs(b, Layout{}, true) })
	b.Run("leafproxy/wide-sequence", func(b *testing.B) { benchOurs(b, wide, false) })
	b.Run("leafproxy/wide-sequence-parallel", func(b *testing.B) { benchOurs(b, wide, true) })
}

// BenchmarkNextN draws IDs in batches of 100 (a multi-row INSERT) with the
// wide layout, so the per-ID cost of the batch path shows.
func BenchmarkNextN(b *testing.B) {
	g, err := New(context.Background(), Options{Layout: Layout{TimeBits: 41, WorkerBits: 0, SequenceBits: 22}, Worker: FixedWorker(0)})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	dst := make([]int64, 0, 100)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		var err error
		if dst, err = g.NextN(context.Background(), 100, dst[:0]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*100), "ns/id")
}
