package snowflake

import (
	"context"
	"runtime"
	"time"
)

// waitLocked waits until the clock reaches target (since the epoch),
// keeping g.mu for short waits and releasing it for long ones.
func (g *Generator) waitLocked(ctx context.Context, target time.Duration) error {
	if target-g.since() <= holdLimit {
		return g.wait(ctx, target)
	}
	g.mu.Unlock()
	defer g.mu.Lock()
	return g.wait(ctx, target)
}

// wait returns once the clock reaches target (since the epoch). It sleeps
// on a timer, and spins (yielding) only for the last spinLimit.
func (g *Generator) wait(ctx context.Context, target time.Duration) error {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		d := target - g.since()
		if d <= 0 {
			return nil
		}
		if g.sleeper != nil {
			if err := g.sleeper.Sleep(ctx, d); err != nil {
				return err
			}
			continue
		}
		if d > spinLimit {
			if timer == nil {
				timer = time.NewTimer(d - spinLimit)
			} else {
				timer.Reset(d - spinLimit)
			}
			select {
			case <-timer.C:
			case <-ctx.Done():
				return ctx.Err()
			}
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		runtime.Gosched()
	}
}
