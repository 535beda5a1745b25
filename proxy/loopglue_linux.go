package proxy

import (
	"log/slog"

	"github.com/leafproxy/leafproxy/proxy/eventloop"
)

// The event loop's engine is package eventloop; a session it serves is a
// lane (lane_linux.go), which the engine calls through eventloop.Handler.

// loop is the server's event loop (Server.loop).
type loop = eventloop.Loop

// Serve is the runner's handling of what happened on the lane (bits):
// with r's buffers and writers, the lane reads, runs and relays, then
// writes out what it left in the writers.
func (ln *lane) Serve(r *eventloop.Runner, bits uint32) {
	ln.bind(r)
	ln.handle(bits)
	ln.flushWriters()
}

// Bind lends the lane r's writers.
func (ln *lane) Bind(r *eventloop.Runner) { ln.bind(r) }

// Teardown closes the session's sockets; its goroutine then ends.
func (ln *lane) Teardown() { ln.teardown() }

// Logger is the session's log.
func (ln *lane) Logger() *slog.Logger { return ln.s.log }
