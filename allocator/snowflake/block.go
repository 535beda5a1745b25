package snowflake

import (
	"context"
	"fmt"
	"time"

	"github.com/leafproxy/leafproxy/internal/nonblock"
)

// Block is a reservation of N IDs that a caller numbers itself (the
// server, for rows the proxy cannot see): the k-th ID (k from 0) is
//
//	First + (k / Run) * Stride + k % Run
//
// For a snowflake generator Run is the sequence space of one tick and
// Stride one tick, so the block is whole ticks [t0, t0+ceil(N/Run)) of
// this worker, every sequence number of them: IDs that no other call of
// this generator (nor any other worker) ever issues.
type Block struct {
	First, N, Run, Stride int64
}

// At is the k-th ID of the block.
func (b Block) At(k int64) int64 { return b.First + (k/b.Run)*b.Stride + k%b.Run }

// MaxBlockTicks bounds a block: at most this many ticks (with the default
// layout 4096 IDs a tick, 1,000 ticks hold 4,096,000 IDs; a block never
// lies in the future, so a larger one would make the caller wait longer).
const MaxBlockTicks = 1000

// Block reserves n IDs as whole ticks of this worker that no ID has been
// issued in. The ticks end at the current tick or before: when the
// generator has been idle, they are ticks it let pass; otherwise the call
// waits for the clock to reach the last of them (a block of up to one
// tick's sequence space waits less than a tick). The ticks are used up
// for every later call (which issues only in later ticks).
func (g *Generator) Block(ctx context.Context, n int64) (Block, error) {
	run := g.maxSeq + 1
	ticks := (n + run - 1) / run
	if n <= 0 || ticks > MaxBlockTicks {
		return Block{}, fmt.Errorf("snowflake: a block of %d IDs: the size must be 1 to %d (%d ticks of %d)", n, MaxBlockTicks*run, MaxBlockTicks, run)
	}
	if !g.lock(ctx) {
		return Block{}, nonblock.ErrWouldBlock
	}
	defer g.mu.Unlock()
	for {
		if g.closed {
			return Block{}, ErrClosed
		}
		if g.lost != nil {
			return Block{}, g.lost
		}
		now := g.since()
		if now < 0 {
			return Block{}, fmt.Errorf("snowflake: clock %s is before the epoch: %w", g.timeAt(now), ErrClockBackward)
		}
		if now >= g.deadline {
			if g.ttl == 0 && nonblock.Requested(ctx) {
				return Block{}, nonblock.ErrWouldBlock
			}
			if err := g.fenceLocked(ctx, now); err != nil {
				return Block{}, err
			}
			continue
		}
		tick := int64(now) / g.unit
		t0 := max(g.lastTick+1, tick-ticks+1)
		last := t0 + ticks - 1
		if last > g.maxTicks {
			return Block{}, g.overflow(last)
		}
		if last > tick {
			// The free ticks end in the future: wait for the last one,
			// as for a sequence that ran out.
			if nonblock.Requested(ctx) {
				return Block{}, nonblock.ErrWouldBlock
			}
			if err := g.waitLocked(ctx, time.Duration(last*g.unit)); err != nil {
				return Block{}, fmt.Errorf("snowflake: wait for the ticks of a block of %d IDs: %w", n, err)
			}
			continue
		}
		g.lastTick, g.seq = last, g.maxSeq // the block's ticks are used up
		return Block{First: t0<<g.tickShift | g.workerPart, N: n, Run: run, Stride: 1 << g.tickShift}, nil
	}
}
