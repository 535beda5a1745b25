package snowflake

import (
	"context"
	"testing"
	"time"
)

// TestNextNOneRunPerTick: up to a tick's sequence space, NextN's IDs are
// consecutive, one run in one tick, whatever the random start and what
// was issued in the tick before (issue 38: a statement's keys); a tick
// with fewer left is left behind, waiting less than one tick; more than a
// tick's worth are whole runs, one per tick.
func TestNextNOneRunPerTick(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock(base.Add(300 * time.Microsecond))
	g := newGen(t, Options{Clock: clk}) // the default random start
	l := g.Layout()
	consecutive := func(ids []int64) bool {
		for i := range ids {
			if ids[i] != ids[0]+int64(i) || l.Decode(ids[i]).Ticks != l.Decode(ids[0]).Ticks {
				return false
			}
		}
		return true
	}
	prev := int64(0)
	for _, n := range []int{47, 4096, 7, 4000, 200, 1, 4095, 3000, 3000} {
		ids, err := g.NextN(ctx, n, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) != n || !consecutive(ids) || ids[0] <= prev {
			t.Fatalf("NextN(%d) after %d: %d IDs from %d to %d, want one run in one tick above it", n, prev, len(ids), ids[0], ids[len(ids)-1])
		}
		prev = ids[len(ids)-1]
	}
	if s := clk.Slept(); s <= 0 || s > 10*time.Millisecond {
		t.Fatalf("slept %v for 9 runs that each fill part of a tick, want a few ticks' rest", s)
	}
	ids, err := g.NextN(ctx, 4096*2+5, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range [][]int64{ids[:4096], ids[4096 : 2*4096], ids[2*4096:]} {
		if !consecutive(r) || r[0] <= prev {
			t.Fatalf("NextN(8197): a tick's run from %d to %d is not one run above %d", r[0], r[len(r)-1], prev)
		}
		prev = r[len(r)-1]
	}
}
