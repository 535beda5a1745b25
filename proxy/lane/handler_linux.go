package lane

import (
	"log/slog"

	"github.com/leafproxy/leafproxy/proxy/eventloop"
)

// The lane is what the event loop's engine (package eventloop) calls for
// a session it serves: its eventloop.Handler.

// Serve is the runner's handling of what happened on the lane (bits):
// with r's buffers and writers, the lane reads, runs and relays, then
// writes out what it left in the writers.
func (ln *Lane) Serve(r *eventloop.Runner, bits uint32) {
	ln.bind(r)
	ln.handle(bits)
	ln.flushWriters()
}

// Bind lends the lane r's writers.
func (ln *Lane) Bind(r *eventloop.Runner) { ln.bind(r) }

// Teardown closes the session's sockets; its goroutine then ends.
func (ln *Lane) Teardown() { ln.teardown() }

// Logger is the session's log.
func (ln *Lane) Logger() *slog.Logger { return ln.log }
