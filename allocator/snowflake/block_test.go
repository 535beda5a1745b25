package snowflake

import (
	"context"
	"testing"
	"time"
)

// TestBlock: a block is whole ticks of this worker that no ID was issued
// in, ending at the current tick: after an idle spell it uses ticks that
// went by (no wait), after busy ticks it waits for the clock; every ID of
// the block is distinct from every ID issued before and after it, and it
// decodes to this worker.
func TestBlock(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock(base)
	g := newGen(t, Options{Clock: clk, Worker: FixedWorker(9), RandomStart: 1})
	seen := map[int64]bool{}
	add := func(id int64) {
		t.Helper()
		if seen[id] {
			t.Fatalf("ID %d twice", id)
		}
		if w := g.Layout().Decode(id).Worker; w != 9 {
			t.Fatalf("ID %d of worker %d", id, w)
		}
		seen[id] = true
	}
	add(mustNext(t, g))
	clk.Advance(10 * time.Millisecond) // idle: 10 ticks went by
	b, err := g.Block(ctx, 3*4096)     // three ticks
	if err != nil {
		t.Fatal(err)
	}
	if clk.Slept() != 0 {
		t.Fatalf("a block of past ticks slept %v", clk.Slept())
	}
	if last := g.Layout().Decode(b.At(b.N - 1)).Time; !last.Equal(clk.Now().Truncate(time.Millisecond)) {
		t.Fatalf("the block ends at %v, the clock is at %v", last, clk.Now())
	}
	for k := range b.N {
		add(b.At(k))
	}
	// The block used the current tick up: the next ID is in a later one.
	id, err := g.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	add(id)
	// Busy: a block right after an ID waits for the ticks it needs.
	b, err = g.Block(ctx, 2*4096+1)
	if err != nil {
		t.Fatal(err)
	}
	if clk.Slept() == 0 {
		t.Fatal("a block of future ticks did not wait")
	}
	for k := range b.N {
		add(b.At(k))
	}
	add(mustNext(t, g))
	if _, err := g.Block(ctx, (MaxBlockTicks+1)*4096); err == nil {
		t.Fatal("an oversized block was given")
	}
}
