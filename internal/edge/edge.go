// Package edge turns a stream of successes and failures into state
// changes, so that a dependency going down and coming back is logged once
// each (edge-triggered) instead of once per failed attempt. The caller
// writes the log lines; Tracker only says when a line is due.
package edge

import (
	"sync"
	"sync/atomic"
	"time"
)

// Tracker follows one condition (the backend unreachable, the store
// failing, a generator fenced). The zero value is "not in the condition".
// Safe for concurrent use; Recover on a tracker that is not down costs
// one atomic load.
type Tracker struct {
	down  atomic.Bool
	mu    sync.Mutex
	since time.Time
}

// Fail records a failure at now. began is true for the one call that
// entered the condition (log it); later failures return false until a
// Recover.
func (t *Tracker) Fail(now time.Time) (began bool) {
	if t.down.Load() {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.down.Load() {
		return false
	}
	t.since = now
	t.down.Store(true)
	return true
}

// Recover records a success at now. ended is true for the one call that
// left the condition (log it, with lasted: how long it held).
func (t *Tracker) Recover(now time.Time) (lasted time.Duration, ended bool) {
	if !t.down.Load() {
		return 0, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.down.Load() {
		return 0, false
	}
	t.down.Store(false)
	return now.Sub(t.since), true
}

// Down reports whether the condition holds.
func (t *Tracker) Down() bool { return t.down.Load() }
