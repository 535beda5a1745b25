package eventloop

import (
	"log/slog"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Lane is what the loop knows of a session it serves: its two sockets and
// what the runners coordinate on. The session's side of it (package
// proxy's lane, which embeds a Lane) is the Handler: what happened on the
// sockets is its business. One runner at a time handles a lane (Mu);
// ownership moves between the loop and the session's goroutine with
// Loop.Post and Loop.Detach.
type Lane struct {
	h         Handler
	idx, gen  int32 // its slot in the loop's lane table, and the slot's generation
	attached  bool  // registered with the loop (not just in its inbox)
	ClientFD  int
	BackendFD int

	Mu   sync.Mutex    // held by the runner handling the lane
	Pend atomic.Uint32 // events for it not handled yet (PendClientIn, ...)
	// Gone: handed back or closed; the loop is done with it. The handler
	// sets it (with Mu held); the loop then leaves the lane alone.
	Gone bool
}

// Init makes ln a lane of the sockets clientFD and backendFD, handled by
// h; before Loop.Post.
func (ln *Lane) Init(h Handler, clientFD, backendFD int) {
	ln.h, ln.ClientFD, ln.BackendFD = h, clientFD, backendFD
}

// Handler is a lane's session, as the loop calls it; every call is made
// by the runner holding the lane's Mu.
type Handler interface {
	// Serve acts on bits (PendAttach, PendClientIn, ...) with runner r's
	// buffers and writers, and writes out what it left in the writers.
	Serve(r *Runner, bits uint32)
	// Bind lends the lane runner r's writers (before Teardown on the
	// loop's way out, and when it is attached).
	Bind(r *Runner)
	// Teardown closes the session's sockets and ends it (a panic, a loop
	// that is full or stops, a socket it cannot watch); it sets Gone.
	Teardown()
	// Logger is the session's log, where the loop says why it closed it.
	Logger() *slog.Logger
}

// What a runner is to do with a lane (Lane.Pend): besides its sockets'
// events, PendAttach and PendCheck are the loop's own; PendMore is the
// handler's.
const (
	PendAttach     uint32 = 1 << iota // the lane is new: run what its goroutine had read ahead
	PendCheck                         // look at the lane (drain, idle sweep)
	PendMore                          // handling stopped with reading left to do
	PendClientIn                      // readable (data, end, error)
	PendClientOut                     // writable again
	PendClientHup                     // the peer closed its side, or the socket failed
	PendBackendIn                     //
	PendBackendOut                    //
	PendBackendHup                    //
)

// pendBits turns an epoll event on the client (or backend) socket into
// Lane.Pend bits.
func pendBits(events uint32, client bool) uint32 {
	var in, out, hup uint32 = PendBackendIn, PendBackendOut, PendBackendHup
	if client {
		in, out, hup = PendClientIn, PendClientOut, PendClientHup
	}
	var b uint32
	if events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		b |= in
	}
	if events&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		b |= hup
	}
	if events&unix.EPOLLOUT != 0 {
		b |= out
	}
	return b
}

// Attached reports whether ln is registered with a loop (not just in its
// inbox); the caller holds Mu.
func (ln *Lane) Attached() bool { return ln.attached }

// Rearm has the kernel report the readiness of an attached lane's sockets
// again, which brings a runner: for a caller that held Mu outside a
// runner (a test looking at the lane), while an event for it may have
// come and been left to the holder, which a runner would have served
// when it let go (Runner.serve). The lane's slot, generation and
// descriptors do not change while it is attached.
func (l *Loop) Rearm(ln *Lane) {
	cev := unix.EpollEvent{Events: laneEvents, Fd: ln.idx, Pad: ln.gen << 1}
	bev := unix.EpollEvent{Events: laneEvents, Fd: ln.idx, Pad: ln.gen<<1 | 1}
	_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_MOD, ln.ClientFD, &cev)
	_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_MOD, ln.BackendFD, &bev)
}
