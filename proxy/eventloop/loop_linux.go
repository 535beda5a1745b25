package eventloop

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/leafproxy/leafproxy/internal/nonblock"
	"github.com/leafproxy/leafproxy/internal/raw"
	"golang.org/x/sys/unix"
)

// The event loop. A logged-in session on plain sockets is served by the
// server's event loop instead of by its own goroutine: the loop watches
// both of the session's sockets in one epoll instance and runs each
// command to the point where its response is on its way, then serves other
// sessions until the response arrives and relays it. Nothing parks or
// wakes per command and no read finds a socket empty.
//
// The loop is one epoll instance served by several runners (event_loops,
// one per CPU by default), ordinary goroutines. The instance is watched by
// Go's netpoller through one pollable file (a non-blocking dup of the
// epoll descriptor); a file is read by one goroutine at a time, so exactly
// one runner at a time parks on it and a readiness wakes that one runner.
// It takes a few ready events (epoll_wait with a zero timeout), lets go of
// the file, so that the next runner can wait or take more, and handles
// them. Sessions are not tied to a runner: when the kernel keeps one
// runner's thread off the CPU, the others serve every other session.
//
// Registrations are edge-triggered and made once: an event says "something
// happened on this socket" and the lane reads until the socket is empty
// (or notes that it stopped early, see package proxy's lane.clientReadable).
// A lane is handled by one runner at a time (Lane.Mu); an event for a lane
// another runner holds is left in Lane.Pend, which the holder takes before
// it lets go.
//
// Everything that could wait leaves the loop: a command the loop does not
// run (loopCommand), an interceptor or session method that would wait
// (ErrWouldBlock), a command too large for the loop's buffer, LOCAL
// INFILE, and anything the backend sends unasked go back to the session's
// own goroutine (lane.handOff), which runs it with the ordinary blocking
// code and returns to the loop later (Session.serve). The two paths share
// the command code (dispatch) and the response state machine
// (respTracker).

// BufSize is the size of a runner's read buffers; commands up to this size
// are read by the loop, larger ones by the session's goroutine (which
// applies limits.command_memory).
const BufSize = 64 << 10

// epollBatch is how many events a runner takes at once: few, so that a
// runner the kernel stops holds few sessions (the rest stay ready for the
// others); many ready events are still taken in one call each.
const epollBatch = 16

// Events carry the lane's table index in Fd and its generation and leg in
// Pad; the inbox's eventfd has index inboxIndex.
const inboxIndex = -1

// edge-triggered interest in everything, registered once per socket.
const laneEvents = unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET

// Loop is the event loop: one epoll instance and its runners.
type Loop struct {
	log     *slog.Logger
	epfd    int
	wakeFD  int             // eventfd: wakes a runner for the inbox
	ctx     context.Context // marked: interceptors must not block
	file    *os.File        // a dup of epfd, parked on in the netpoller by one runner at a time
	rawFile syscall.RawConn // file's

	mu         sync.Mutex // guards the inbox, the flags, and the table's free list
	inbox      []*Lane
	drainAsked bool // Server.Shutdown: close idle lanes, busy ones when done
	stop       bool
	dead       atomic.Bool // no runner is left: take nothing more
	freeSlots  []int32
	top        int32 // table indexes in use are below top
	generation int32
	runners    []*Runner
	alive      int // runners still running (mu)
	stopped    chan struct{}

	draining  atomic.Bool
	lanes     laneTable
	sweep     time.Duration // idle-timeout sweep period; 0: none
	lastSweep atomic.Int64  // unix nanos of the last sweep
}

// Runner is one goroutine serving the loop's epoll instance, with its own
// buffers: a lane a runner handles borrows them (Handler.Bind).
type Runner struct {
	l          *Loop
	take       func(uintptr) bool // r.takeEvents, bound once
	events     []unix.EpollEvent
	ready      int    // events[:ready] were taken and are not handled yet
	ClientBuf  []byte // client reads
	BackendBuf []byte // backend reads
	ClientW    *bufio.Writer
	BackendW   *bufio.Writer // a lane's legs write through these while the runner holds it
	Now        int64         // unix nanos of the current batch of events
}

// New starts an event loop of runners runners. ctx is the server's: the
// loop marks it as one on which interceptors must not block (Ctx);
// idleTimeout is limits.idle_timeout (0: none), which the loop's idle
// sweep enforces; log is where the loop's own failures go.
func New(ctx context.Context, runners int, idleTimeout time.Duration, log *slog.Logger) (*Loop, error) {
	if runners < 1 {
		return nil, fmt.Errorf("event loop: %d runners", runners)
	}
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("event loop: epoll_create1: %w", err)
	}
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("event loop: eventfd: %w", err)
	}
	l := &Loop{log: log, epfd: epfd, wakeFD: efd, ctx: nonblock.Context(ctx), stopped: make(chan struct{})}
	fail := func(err error) (*Loop, error) {
		if l.file != nil {
			l.file.Close()
		}
		unix.Close(l.wakeFD)
		unix.Close(l.epfd)
		return nil, err
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLET, Fd: inboxIndex}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, l.wakeFD, &ev); err != nil {
		return fail(fmt.Errorf("event loop: register eventfd: %w", err))
	}
	// The runners park on a dup of the descriptor: non-blocking, so that
	// os.NewFile makes it pollable, and closed (waking them) apart from
	// the instance, which the last runner closes.
	dfd, err := unix.FcntlInt(uintptr(epfd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return fail(fmt.Errorf("event loop: dup: %w", err))
	}
	if err := unix.SetNonblock(dfd, true); err != nil {
		unix.Close(dfd)
		return fail(fmt.Errorf("event loop: %w", err))
	}
	l.file = os.NewFile(uintptr(dfd), "leafproxy-event-loop")
	if l.rawFile, err = l.file.SyscallConn(); err != nil {
		return fail(fmt.Errorf("event loop: %w", err))
	}
	if t := idleTimeout; t > 0 {
		l.sweep = min(max(t/10, 10*time.Millisecond), time.Second)
		_ = l.file.SetReadDeadline(time.Now().Add(l.sweep))
	}
	for range runners {
		r := &Runner{l: l,
			events:    make([]unix.EpollEvent, epollBatch),
			ClientBuf: make([]byte, BufSize), BackendBuf: make([]byte, BufSize),
			ClientW: bufio.NewWriterSize(nil, 16<<10), BackendW: bufio.NewWriterSize(nil, 16<<10)}
		r.take = r.takeEvents
		l.runners = append(l.runners, r)
	}
	l.alive = len(l.runners)
	for _, r := range l.runners {
		go r.run()
	}
	return l, nil
}

// run is a runner's goroutine: it waits its turn on the epoll instance,
// takes a batch of events and handles them. The file's read deadline is
// the idle-timeout sweep's timer: whichever runner meets it sweeps and
// sets it again (a busy loop also sweeps from handleEvents).
func (r *Runner) run() {
	l := r.l
	defer r.exit()
	for {
		err := l.rawFile.Read(r.take)
		if l.stopping() {
			return
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			l.idleSweep(r)
			_ = l.file.SetReadDeadline(time.Now().Add(l.sweep))
			continue
		}
		if err != nil {
			l.log.Error("event loop runner stopped", "err", err)
			return
		}
		if r.handleEvents() {
			return
		}
	}
}

// exit ends a runner; the last one closes what the loop still has (its
// sessions' goroutines then end them) and the loop takes no more.
func (r *Runner) exit() {
	l := r.l
	l.mu.Lock()
	l.alive--
	last := l.alive == 0
	if last {
		l.dead.Store(true)
	}
	in := l.inbox
	if last {
		l.inbox = nil
	}
	top := l.top
	l.mu.Unlock()
	if !last {
		return
	}
	l.file.Close()
	for _, ln := range in {
		r.rescue(ln, func() { ln.h.Teardown() })
	}
	for i := range top {
		if ln := l.lanes.get(i); ln != nil {
			ln.Mu.Lock()
			if !ln.Gone {
				r.rescue(ln, func() { ln.h.Bind(r); ln.h.Teardown() })
			}
			ln.Mu.Unlock()
		}
	}
	unix.Close(l.epfd)
	close(l.stopped)
}

func (l *Loop) stopping() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stop
}

// takeEvents takes up to epollBatch ready events without waiting; false
// asks the netpoller to park the runner until the epoll instance has some.
// It runs while the runner holds the loop's file: it only takes.
func (r *Runner) takeEvents(uintptr) bool {
	n, e := raw.EpollTake(r.l.epfd, r.events)
	if e != 0 || n <= 0 {
		r.ready = 0
		return false
	}
	r.ready = n
	return true
}

// handleEvents handles the batch takeEvents took, then takes more until
// there are none; true means the loop stops.
func (r *Runner) handleEvents() bool {
	l := r.l
	for r.ready > 0 {
		r.Now = time.Now().UnixNano()
		if l.sweep > 0 && r.Now-l.lastSweep.Load() >= int64(l.sweep) {
			l.idleSweep(r) // a loop that is never idle still enforces idle_timeout
		}
		n := r.ready
		r.ready = 0
		for i := range n {
			ev := r.events[i]
			if ev.Fd == inboxIndex {
				if l.takeInbox(r) {
					return true
				}
				continue
			}
			ln := l.lanes.get(ev.Fd)
			if ln == nil || ln.gen != ev.Pad>>1 {
				continue // the lane left meanwhile
			}
			ln.Pend.Or(pendBits(ev.Events, ev.Pad&1 == 0))
			r.serve(ln)
		}
		if n < len(r.events) {
			return false // the instance had no more: wait for the file again
		}
		r.takeEvents(0)
	}
	return false
}

// serve handles what is pending on ln unless another runner is handling
// it, in which case that runner will (it looks at pend before letting go).
func (r *Runner) serve(ln *Lane) {
	for ln.Mu.TryLock() {
		bits := ln.Pend.Swap(0)
		if !ln.Gone && bits != 0 {
			r.rescue(ln, func() { ln.h.Serve(r, bits) })
		}
		ln.Mu.Unlock()
		if ln.Pend.Load() == 0 {
			return
		}
	}
}

// rescue runs f for ln: a panic (an interceptor's bug, say) costs that
// session, not the loop and its other sessions.
func (r *Runner) rescue(ln *Lane, f func()) {
	defer func() {
		if p := recover(); p != nil {
			log := ln.h.Logger()
			log.Error("session closed: internal error", "panic", fmt.Sprint(p))
			log.Debug("panic stack", "stack", string(debug.Stack()))
			if !ln.Gone {
				ln.h.Teardown()
			}
		}
	}()
	f()
}

// Post hands a lane to the loop (from the session's goroutine); false:
// the loop has stopped.
func (l *Loop) Post(ln *Lane) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dead.Load() || l.stop {
		return false
	}
	l.inbox = append(l.inbox, ln)
	l.wake()
	return true
}

// wake pokes the loop's eventfd; callers hold l.mu and have checked that
// the loop has not stopped (the eventfd is closed only after that).
func (l *Loop) wake() {
	one := [8]byte{1}
	for {
		_, err := unix.Write(l.wakeFD, one[:])
		if err != unix.EINTR {
			return
		}
	}
}

// takeInbox registers lanes handed to the loop and carries out drain and
// stop requests; true means stop.
func (l *Loop) takeInbox(r *Runner) bool {
	var b [8]byte
	_, _ = unix.Read(l.wakeFD, b[:])
	l.mu.Lock()
	in, drain, stop, top := l.inbox, l.drainAsked, l.stop, l.top
	l.inbox, l.drainAsked = nil, false // lanes attached or busy after this pass see srv.draining themselves
	l.mu.Unlock()
	for _, ln := range in {
		l.attach(r, ln)
	}
	if drain {
		l.draining.Store(true)
		for i := range top {
			if ln := l.lanes.get(i); ln != nil {
				ln.Pend.Or(PendCheck)
				r.serve(ln)
			}
		}
	}
	return stop
}

// attach registers a lane's sockets; what its goroutine had read ahead
// runs at once.
func (l *Loop) attach(r *Runner, ln *Lane) {
	// The lane is locked before it is in the table: a drain or sweep pass
	// that finds it there must not close it before it is registered.
	ln.Mu.Lock()
	l.mu.Lock()
	var idx int32
	if n := len(l.freeSlots); n > 0 {
		idx, l.freeSlots = l.freeSlots[n-1], l.freeSlots[:n-1]
	} else if l.top < maxLanes {
		idx = l.top
		l.top++
	} else {
		l.mu.Unlock()
		ln.h.Logger().Error("session closed: the event loop is full", "lanes", maxLanes)
		ln.h.Teardown()
		ln.Mu.Unlock()
		return
	}
	// A loop-wide generation: an event queued for a lane that left must
	// not reach the lane now in its slot.
	l.generation++
	ln.idx, ln.gen = idx, l.generation&(1<<30-1)
	ln.attached = true
	l.lanes.set(idx, ln)
	l.mu.Unlock()
	cev := unix.EpollEvent{Events: laneEvents, Fd: idx, Pad: ln.gen << 1}
	bev := unix.EpollEvent{Events: laneEvents, Fd: idx, Pad: ln.gen<<1 | 1}
	r.rescue(ln, func() {
		ln.h.Bind(r)
		if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, ln.ClientFD, &cev); err != nil {
			ln.h.Logger().Error("session closed: event loop could not watch the client socket", "err", err)
			ln.h.Teardown()
			return
		}
		if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, ln.BackendFD, &bev); err != nil {
			ln.h.Logger().Error("session closed: event loop could not watch the backend socket", "err", err)
			ln.h.Teardown()
		}
	})
	// Registered: events may already be pending for it, from any runner.
	ln.Pend.Or(PendAttach)
	ln.Mu.Unlock()
	r.serve(ln)
}

// Detach forgets a lane (its goroutine takes it back, or it is closed);
// the caller holds ln.Mu.
func (l *Loop) Detach(ln *Lane) {
	if !ln.attached {
		return // still in the inbox
	}
	ln.attached = false
	_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, ln.ClientFD, nil)
	_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, ln.BackendFD, nil)
	l.mu.Lock()
	l.lanes.set(ln.idx, nil)
	l.freeSlots = append(l.freeSlots, ln.idx)
	l.mu.Unlock()
}

// idleSweep closes lanes idle longer than limits.idle_timeout.
func (l *Loop) idleSweep(r *Runner) {
	now := time.Now().UnixNano()
	last := l.lastSweep.Load()
	if now-last < int64(l.sweep)/2 || !l.lastSweep.CompareAndSwap(last, now) {
		return // another runner is at it, or just was
	}
	r.Now = now
	l.mu.Lock()
	top := l.top
	l.mu.Unlock()
	for i := range top {
		if ln := l.lanes.get(i); ln != nil {
			ln.Pend.Or(PendCheck)
			r.serve(ln)
		}
	}
}

// RequestDrain asks the loop to close its idle lanes now and the others
// when their responses are through (Server.Shutdown).
func (l *Loop) RequestDrain() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.drainAsked = true
	if !l.dead.Load() && !l.stop {
		l.wake()
	}
}

// Close stops the loop and waits for it (after Shutdown: no lanes left).
func (l *Loop) Close() {
	l.mu.Lock()
	l.stop = true
	l.mu.Unlock()
	// Closing the file wakes the runner parked on it with an error, and
	// the runners waiting for their turn; each sees stop and ends.
	l.file.Close()
	<-l.stopped
	l.mu.Lock()
	if l.wakeFD >= 0 {
		unix.Close(l.wakeFD)
		l.wakeFD = -1
	}
	l.mu.Unlock()
}

// Ctx is the context commands run with on the loop: the server's, marked
// so that an interceptor that would block returns ErrWouldBlock instead.
func (l *Loop) Ctx() context.Context { return l.ctx }

// Draining reports whether the loop was asked to drain (RequestDrain) and
// has begun: lanes attached later close at once.
func (l *Loop) Draining() bool { return l.draining.Load() }

// Dead reports whether no runner is left: the loop takes no more lanes.
func (l *Loop) Dead() bool { return l.dead.Load() }
