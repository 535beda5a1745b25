// Package testwait is the one way tests wait for a condition: poll it
// with a short backoff until it holds or a deadline passes, and fail
// naming what was being waited for. The default deadline is generous
// (DefaultTimeout) because the suite must pass on a busy small machine:
// a condition that holds comes true at once on a fast one, so the
// deadline only matters when something is wrong. Imported only by tests.
package testwait

import (
	"fmt"
	"testing"
	"time"
)

// DefaultTimeout is how long For and Value wait unless told otherwise:
// long enough for a loaded 2-core machine running other suites at once.
const DefaultTimeout = 60 * time.Second

// Option changes one wait.
type Option func(*waiter)

type waiter struct {
	timeout time.Duration
	detail  func() string
}

// Within sets the deadline of one wait. Use it only where the deadline
// is itself what the test checks (something must happen within d); a
// plain "wait until" takes the default.
func Within(d time.Duration) Option { return func(w *waiter) { w.timeout = d } }

// Detail adds, to a timeout's failure message, what detail returns then
// (the last value seen, a log, a counter).
func Detail(detail func() string) Option { return func(w *waiter) { w.detail = detail } }

// For polls cond until it returns true, failing t with "timed out after
// X waiting for <what>" if it does not within the deadline.
func For(t testing.TB, what string, cond func() bool, opts ...Option) {
	t.Helper()
	Value(t, what, func() (struct{}, bool) { return struct{}{}, cond() }, opts...)
}

// Value polls f until its second result is true and returns its first,
// failing t as For does.
func Value[T any](t testing.TB, what string, f func() (T, bool), opts ...Option) T {
	t.Helper()
	v, err := Until(what, f, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Until is Value for a goroutine that must not call t.Fatal: it returns
// the timeout as an error instead.
func Until[T any](what string, f func() (T, bool), opts ...Option) (T, error) {
	w := waiter{timeout: DefaultTimeout}
	for _, o := range opts {
		o(&w)
	}
	start := time.Now()
	deadline := start.Add(w.timeout)
	pause := time.Millisecond
	for {
		v, ok := f()
		if ok {
			return v, nil
		}
		if !time.Now().Before(deadline) {
			msg := fmt.Sprintf("timed out after %v waiting for %s", time.Since(start).Round(time.Millisecond), what)
			if w.detail != nil {
				msg += ": " + w.detail()
			}
			return v, fmt.Errorf("%s", msg)
		}
		time.Sleep(min(pause, time.Until(deadline)))
		pause = min(2*pause, 50*time.Millisecond)
	}
}
