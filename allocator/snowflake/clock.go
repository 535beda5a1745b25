package snowflake

import (
	"context"
	"time"
)

// Clock tells the generator the time. Tests inject their own; production uses
// MonotonicClock.
type Clock interface{ Now() time.Time }

// Sleeper is implemented by clocks that do their own waiting (test clocks
// that advance themselves). When the generator's clock implements it, every
// wait (sequence overflow, backward jump, start-up behind the high-water
// mark) goes through Sleep instead of real timers.
type Sleeper interface {
	Sleep(ctx context.Context, d time.Duration) error
}

// MonotonicClock reads the wall clock once, at creation, and from then on
// advances by Go's monotonic clock. A wall-clock step (NTP, an operator's
// date -s) after start therefore never moves IDs backwards or forwards; the
// price is that a process does not follow slow NTP corrections while it
// runs, so its IDs may drift from wall time by the host's clock error over
// its uptime. Restarts re-read the wall clock and are guarded by the
// persisted high-water mark.
type MonotonicClock struct {
	start time.Time // carries a monotonic reading
}

// NewMonotonicClock starts a clock at the current wall time.
func NewMonotonicClock() *MonotonicClock { return &MonotonicClock{start: time.Now()} }

// Now is the start wall time plus the monotonic time elapsed since.
func (c *MonotonicClock) Now() time.Time { return c.start.Add(time.Since(c.start)) }
