package bench

import (
	"context"
	"testing"
	"time"

	bwsnowflake "github.com/bwmarrin/snowflake"
	sonyflake "github.com/sony/sonyflake"
	sonyflakev2 "github.com/sony/sonyflake/v2"

	"github.com/leafproxy/leafproxy/allocator/snowflake"
)

// reportRate adds IDs per millisecond, the figure the sequence limit caps
// (4096/ms for 12 sequence bits and 1 ms ticks, i.e. 244 ns/op).
func reportRate(b *testing.B, start time.Time) {
	b.ReportMetric(float64(b.N)/(float64(time.Since(start))/float64(time.Millisecond)), "IDs/ms")
}

func benchOurs(b *testing.B, layout snowflake.Layout, parallel bool) {
	g, err := snowflake.New(context.Background(), snowflake.Options{Layout: layout, Worker: snowflake.FixedWorker(0)})
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

// BenchmarkSnowflakeNext compares our snowflake Next with bwmarrin/snowflake and
// sony/sonyflake in one run. "wide-sequence" (41/0/22: 4M IDs per ms) lifts
// the sequence limit, showing what our code costs when it is not the cap.
func BenchmarkSnowflakeNext(b *testing.B) {
	wide := snowflake.Layout{TimeBits: 41, WorkerBits: 0, SequenceBits: 22}
	b.Run("leafproxy/default", func(b *testing.B) { benchOurs(b, snowflake.Layout{}, false) })
	b.Run("leafproxy/default-parallel", func(b *testing.B) { benchOurs(b, snowflake.Layout{}, true) })
	b.Run("leafproxy/wide-sequence", func(b *testing.B) { benchOurs(b, wide, false) })
	b.Run("leafproxy/wide-sequence-parallel", func(b *testing.B) { benchOurs(b, wide, true) })

	b.Run("bwmarrin", func(b *testing.B) {
		node, err := bwsnowflake.NewNode(1) // 41/10/12, 1 ms: the same shape as our default
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			node.Generate()
		}
		reportRate(b, start)
	})
	b.Run("sonyflake-v1", func(b *testing.B) { // 39/16/8 bits, 10 ms: 25.6 IDs/ms by design
		sf, err := sonyflake.New(sonyflake.Settings{MachineID: func() (uint16, error) { return 1, nil }})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			if _, err := sf.NextID(); err != nil {
				b.Fatal(err)
			}
		}
		reportRate(b, start)
	})
	b.Run("sonyflake-v2-1ms-12seq", func(b *testing.B) { // configured to our default's shape
		sf, err := sonyflakev2.New(sonyflakev2.Settings{BitsSequence: 12, BitsMachineID: 10, TimeUnit: time.Millisecond,
			MachineID: func() (int, error) { return 1, nil }})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			if _, err := sf.NextID(); err != nil {
				b.Fatal(err)
			}
		}
		reportRate(b, start)
	})
}
