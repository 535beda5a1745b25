package segment

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/leafproxy/leafproxy/internal/conflict"
)

// Write conflicts (internal/conflict: a deadlock, a Galera certification
// failure, a Galera node not ready, a lock wait timeout) are answers from
// a live store, and a fetch that met one took nothing: it is tried again
// after a short random pause, by the background loader and by a block
// request alike. They are counted apart from fetch errors (TagStats's
// Conflicts, not FetchErrors, which feeds the fetch-error alert), leave
// the store's up/down state alone and are logged below error level: at
// debug level each, a warning when conflictTries in a row met one.

// conflictTries is how many fetches in a row a block request makes while
// each meets a write conflict (more when its wait allows), and after how
// many the background loader warns and goes back to its usual pacing.
const conflictTries = 8

// conflictWait is the pause before the n-th retry (n >= 1) of a fetch that
// met a write conflict: random up to 10 ms doubling each time, at most
// retryMax, so that the proxies that collided do not collide again.
func conflictWait(n int) time.Duration {
	ceiling := min(10*time.Millisecond<<min(n-1, 10), retryMax)
	return time.Millisecond + rand.N(ceiling)
}

// noteConflict logs a fetch of tag (what) that met a write conflict: the
// n-th in a row, retried after wait.
func (a *Allocator) noteConflict(tag, what string, n int, err error, wait time.Duration) {
	attrs := []any{"tag", tag, "code", conflict.Code(err), "in_a_row", n, "retry_in", wait.Round(time.Millisecond).String(), "err", err}
	if n == conflictTries {
		a.log.Warn(what+" keeps meeting store write conflicts (another proxy writing the same row on another Galera node, or a node not ready); retrying", attrs...)
		return
	}
	a.log.Debug(what+" met a store write conflict; retrying", attrs...)
}

// retryConflict is a block request's answer to a fetch of t that met a
// write conflict (err), the n-th in a row: it counts it and waits before
// the next try, and reports whether to try again: while fewer than
// conflictTries met one, or the request is still inside its wait
// (Options.WaitTimeout from started), and ctx and the allocator live.
func (a *Allocator) retryConflict(ctx context.Context, t *tagState, n int, err error, started time.Time) bool {
	t.mu.Lock()
	t.conflicts++
	t.lastErr, t.lastErrAt = err, time.Now()
	t.mu.Unlock()
	wait := conflictWait(n)
	if n >= conflictTries && time.Since(started)+wait > a.opts.WaitTimeout {
		a.log.Warn("block request gave up after store write conflicts", "tag", t.name, "code", conflict.Code(err), "in_a_row", n, "err", err)
		return false
	}
	a.noteConflict(t.name, "block request", n, err, wait)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
	case <-a.done:
	}
	return false
}
