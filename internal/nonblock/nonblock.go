// Package nonblock marks work that must not wait. The proxy's event loops
// run a command on the loop's own goroutine, which serves many sessions:
// anything that would wait there (for a segment from the store, a
// snowflake tick, the backend's answer to a statement of the proxy's own)
// would stall them all. Such calls get a context marked with Context; code
// that may wait checks Requested and returns ErrWouldBlock instead, before
// it has done anything visible, and the command is run again on the
// session's own goroutine, where waiting is fine.
package nonblock

import (
	"context"
	"errors"
)

// ErrWouldBlock is what work asked not to wait returns when it would have
// to. Callers test for it with errors.Is: it may arrive wrapped.
var ErrWouldBlock = errors.New("would block: retry where waiting is allowed")

type key struct{}

// Context returns ctx marked: work done under it must not wait.
func Context(ctx context.Context) context.Context {
	return context.WithValue(ctx, key{}, true)
}

// Requested reports whether ctx was marked by Context.
func Requested(ctx context.Context) bool {
	v, _ := ctx.Value(key{}).(bool)
	return v
}
