package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/leafproxy/leafproxy/internal/nonblock"
	"golang.org/x/sys/unix"
)

// Event loops (issue 11). A logged-in session on plain sockets is served by
// the server's event loop instead of by its own goroutine: the loop watches
// both of the session's sockets in one epoll instance and runs each
// command to the point where its response is on its way, then serves other
// sessions until the response arrives and relays it. Nothing parks or
// wakes per command and no read finds a socket empty, which is where a
// goroutine per session spent its time: on the 2-core machine of
// BENCHMARKS.md a goroutine per session ran pass-through SELECT 1 at 0.82x
// haproxy's rate and 1.19x its CPU; the loop at haproxy's CPU.
//
// The loop is one epoll instance served by several runners (event_loops,
// one per CPU by default). Each runner is an ordinary goroutine that parks
// in Go's netpoller on its own dup of the epoll descriptor (a pollable
// file), takes a few ready events at a time and handles them. Sessions
// are not tied to a runner: when the kernel keeps one runner's thread off
// the CPU for a few milliseconds, the others serve every other session.
// With an epoll instance per runner, all of a stalled runner's sessions
// waited with it: NEXTVAL's p999 went from 0.9x to 1.1-1.3x a direct
// SELECT 1's, and bursts of exactly one runner's share of the sessions
// made the slow requests (BENCHMARKS.md, issue 11, fourth pass).
//
// Registrations are edge-triggered and made once: an event says "something
// happened on this socket" and the lane reads until the socket is empty
// (or notes that it stopped early, see lane.cReady). A lane is handled by
// one runner at a time (lane.mu); an event for a lane another runner holds
// is left in lane.pend, which the holder takes before it lets go.
//
// Everything that could wait leaves the loop: a command the loop does not
// run (loopCommand), an interceptor or session method that would wait
// (ErrWouldBlock: the segment and snowflake allocators and admin honour
// the loop's nonblock context), a command too large for the loop's
// buffer, LOCAL INFILE, and anything the backend sends unasked go back to
// the session's own goroutine (lane.handOff), which runs it with the
// ordinary blocking code and returns to the loop later (Session.serve).
// The two paths share the command code (dispatch) and the response state
// machine (respTracker).

// loopBuf is the size of a runner's read buffers; commands up to this size
// are read by the loop, larger ones by the session's goroutine (which
// applies limits.command_memory).
const loopBuf = 64 << 10

// epollBatch is how many events a runner takes at once: few, so that a
// runner the kernel stops holds few sessions (the rest stay ready for the
// others); many ready events are still taken in one call each.
const epollBatch = 16

// Events carry the lane's table index in Fd and its generation and leg in
// Pad; the inbox's eventfd has index inboxIndex.
const inboxIndex = -1

// edge-triggered interest in everything, registered once per socket.
const laneEvents = unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET

type loop struct {
	srv  *Server
	epfd int
	evfd int             // eventfd: wakes a runner for the inbox
	ctx  context.Context // marked: interceptors must not block

	mu      sync.Mutex // guards the inbox, the flags, and the table's free list
	inbox   []*lane
	drain   bool // Server.Shutdown: close idle lanes, busy ones when done
	stop    bool
	dead    atomic.Bool // no runner is left: take nothing more
	free    []int32
	top     int32 // table indexes in use are below top
	gen     int32
	runners []*runner
	alive   int // runners still running (mu)
	stopped chan struct{}

	draining atomic.Bool
	lanes    laneTable
	sweep    time.Duration // idle-timeout sweep period; 0: none
	swept    atomic.Int64  // unix nanos of the last sweep
}

// runner is one goroutine serving the loop's epoll instance, with its own
// buffers: a lane a runner handles borrows them (lane.bind).
type runner struct {
	l       *loop
	sweeper atomic.Bool // this runner wakes up every loop.sweep to sweep idle lanes
	exited  atomic.Bool
	file    *os.File // a dup of the epoll descriptor, parked on in the netpoller
	rc      syscall.RawConn
	poll    func(uintptr) bool // r.wait, bound once
	events  []unix.EpollEvent
	cbuf    []byte        // client reads
	bbuf    []byte        // backend reads
	cw, bw  *bufio.Writer // a lane's legs write through these while the runner holds it
	now     int64         // unix nanos of the current batch of events
}

func newLoop(srv *Server, runners int) (*loop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("event loop: epoll_create1: %w", err)
	}
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("event loop: eventfd: %w", err)
	}
	l := &loop{srv: srv, epfd: epfd, evfd: efd, ctx: nonblock.Context(srv.baseCtx), stopped: make(chan struct{})}
	fail := func(err error) (*loop, error) {
		for _, r := range l.runners {
			r.file.Close()
		}
		unix.Close(l.evfd)
		unix.Close(l.epfd)
		return nil, err
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLET, Fd: inboxIndex}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, l.evfd, &ev); err != nil {
		return fail(fmt.Errorf("event loop: register eventfd: %w", err))
	}
	if t := srv.cfg.Limits.IdleTimeout; t > 0 {
		l.sweep = min(max(t/10, 10*time.Millisecond), time.Second)
	}
	for range runners {
		// Each runner parks on a dup of the descriptor of its own: a file
		// is read by one goroutine at a time. The dup is non-blocking, so
		// that os.NewFile makes it pollable.
		dfd, err := unix.FcntlInt(uintptr(epfd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return fail(fmt.Errorf("event loop: dup: %w", err))
		}
		if err := unix.SetNonblock(dfd, true); err != nil {
			unix.Close(dfd)
			return fail(fmt.Errorf("event loop: %w", err))
		}
		r := &runner{l: l, file: os.NewFile(uintptr(dfd), "leafproxy-event-loop"),
			events: make([]unix.EpollEvent, epollBatch),
			cbuf:   make([]byte, loopBuf), bbuf: make([]byte, loopBuf),
			cw: bufio.NewWriterSize(nil, 16<<10), bw: bufio.NewWriterSize(nil, 16<<10)}
		if r.rc, err = r.file.SyscallConn(); err != nil {
			r.file.Close()
			return fail(fmt.Errorf("event loop: %w", err))
		}
		r.poll = r.wait
		l.runners = append(l.runners, r)
	}
	l.alive = len(l.runners)
	l.runners[0].sweeper.Store(true)
	for _, r := range l.runners {
		go r.run()
	}
	return l, nil
}

// run is a runner's goroutine. One of them also sweeps idle sessions on a
// timer (a busy loop sweeps from wait as well).
func (r *runner) run() {
	l := r.l
	defer r.exit()
	for {
		if r.sweeper.Load() && l.sweep > 0 {
			_ = r.file.SetReadDeadline(time.Now().Add(l.sweep))
		}
		err := r.rc.Read(r.poll)
		if l.stopping() {
			return
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			l.idleSweep(r)
			continue
		}
		if err != nil {
			l.srv.log.Error("event loop runner stopped", "err", err)
			return
		}
	}
}

// exit ends a runner; the last one closes what the loop still has (its
// sessions' goroutines then end them) and the loop takes no more.
func (r *runner) exit() {
	l := r.l
	r.exited.Store(true)
	r.file.Close()
	l.mu.Lock()
	l.alive--
	last := l.alive == 0
	if r.sweeper.Load() && !last && !l.stop && l.sweep > 0 {
		// Someone else keeps the idle timeout on a quiet loop.
		for _, o := range l.runners {
			if !o.exited.Load() {
				o.sweeper.Store(true)
				_ = o.file.SetReadDeadline(time.Now()) // wake it to set its timer
				break
			}
		}
	}
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
	for _, ln := range in {
		r.rescue(ln, func() { ln.teardown() })
	}
	for i := range top {
		if ln := l.lanes.get(i); ln != nil {
			ln.mu.Lock()
			if !ln.gone {
				r.rescue(ln, func() { ln.bind(r); ln.teardown() })
			}
			ln.mu.Unlock()
		}
	}
	unix.Close(l.epfd)
	close(l.stopped)
}

func (l *loop) stopping() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stop
}

// wait handles every event there is; false asks the netpoller to park the
// runner until the epoll instance has more.
func (r *runner) wait(uintptr) bool {
	l := r.l
	for {
		n, err := unix.EpollWait(l.epfd, r.events, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return false
		}
		r.now = time.Now().UnixNano()
		if l.sweep > 0 && r.now-l.swept.Load() >= int64(l.sweep) {
			l.idleSweep(r) // a loop that is never idle still enforces idle_timeout
		}
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
			ln.pend.Or(pendBits(ev.Events, ev.Pad&1 == 0))
			r.serve(ln)
		}
	}
}

// What a runner is to do with a lane besides its sockets' events
// (lane.pend; pendClientIn and the others in lane_linux.go).
const (
	pendAttach uint32 = 1 << iota // the lane is new: run what its goroutine had read ahead
	pendCheck                     // look at the lane (drain, idle sweep)
)

// serve handles what is pending on ln unless another runner is handling
// it, in which case that runner will (it looks at pend before letting go).
func (r *runner) serve(ln *lane) {
	for ln.mu.TryLock() {
		bits := ln.pend.Swap(0)
		if !ln.gone && bits != 0 {
			r.rescue(ln, func() {
				ln.bind(r)
				ln.handle(bits)
				ln.flushWriters()
			})
		}
		ln.mu.Unlock()
		if ln.pend.Load() == 0 {
			return
		}
	}
}

// rescue runs f for ln: a panic (an interceptor's bug, say) costs that
// session, not the loop and its other sessions.
func (r *runner) rescue(ln *lane, f func()) {
	defer func() {
		if p := recover(); p != nil {
			ln.s.log.Error("session closed: internal error", "panic", fmt.Sprint(p))
			ln.s.log.Debug("panic stack", "stack", string(debug.Stack()))
			if !ln.gone {
				ln.teardown()
			}
		}
	}()
	f()
}

// post hands a lane to the loop (from the session's goroutine); false:
// the loop has stopped.
func (l *loop) post(ln *lane) bool {
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
func (l *loop) wake() {
	one := [8]byte{1}
	for {
		_, err := unix.Write(l.evfd, one[:])
		if err != unix.EINTR {
			return
		}
	}
}

// takeInbox registers lanes handed to the loop and carries out drain and
// stop requests; true means stop.
func (l *loop) takeInbox(r *runner) bool {
	var b [8]byte
	_, _ = unix.Read(l.evfd, b[:])
	l.mu.Lock()
	in, drain, stop, top := l.inbox, l.drain, l.stop, l.top
	l.inbox, l.drain = nil, false // lanes attached or busy after this pass see srv.draining themselves
	l.mu.Unlock()
	for _, ln := range in {
		l.attach(r, ln)
	}
	if drain {
		l.draining.Store(true)
		for i := range top {
			if ln := l.lanes.get(i); ln != nil {
				ln.pend.Or(pendCheck)
				r.serve(ln)
			}
		}
	}
	return stop
}

// attach registers a lane's sockets; what its goroutine had read ahead
// runs at once.
func (l *loop) attach(r *runner, ln *lane) {
	// The lane is locked before it is in the table: a drain or sweep pass
	// that finds it there must not close it before it is registered.
	ln.mu.Lock()
	l.mu.Lock()
	var idx int32
	if n := len(l.free); n > 0 {
		idx, l.free = l.free[n-1], l.free[:n-1]
	} else if l.top < maxLanes {
		idx = l.top
		l.top++
	} else {
		l.mu.Unlock()
		ln.s.log.Error("session closed: the event loop is full", "lanes", maxLanes)
		ln.teardown()
		ln.mu.Unlock()
		return
	}
	// A loop-wide generation: an event queued for a lane that left must
	// not reach the lane now in its slot.
	l.gen++
	ln.idx, ln.gen = idx, l.gen&(1<<30-1)
	ln.attached = true
	l.lanes.set(idx, ln)
	l.mu.Unlock()
	cev := unix.EpollEvent{Events: laneEvents, Fd: idx, Pad: ln.gen << 1}
	bev := unix.EpollEvent{Events: laneEvents, Fd: idx, Pad: ln.gen<<1 | 1}
	r.rescue(ln, func() {
		ln.bind(r)
		if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, ln.cfd, &cev); err != nil {
			ln.s.log.Error("session closed: event loop could not watch the client socket", "err", err)
			ln.teardown()
			return
		}
		if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, ln.bfd, &bev); err != nil {
			ln.s.log.Error("session closed: event loop could not watch the backend socket", "err", err)
			ln.teardown()
		}
	})
	// Registered: events may already be pending for it, from any runner.
	ln.pend.Or(pendAttach)
	ln.mu.Unlock()
	r.serve(ln)
}

// detach forgets a lane (its goroutine takes it back, or it is closed);
// the caller holds ln.mu.
func (l *loop) detach(ln *lane) {
	if !ln.attached {
		return // still in the inbox
	}
	ln.attached = false
	_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, ln.cfd, nil)
	_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, ln.bfd, nil)
	l.mu.Lock()
	l.lanes.set(ln.idx, nil)
	l.free = append(l.free, ln.idx)
	l.mu.Unlock()
}

// idleSweep closes lanes idle longer than limits.idle_timeout.
func (l *loop) idleSweep(r *runner) {
	now := time.Now().UnixNano()
	last := l.swept.Load()
	if now-last < int64(l.sweep)/2 || !l.swept.CompareAndSwap(last, now) {
		return // another runner is at it, or just was
	}
	r.now = now
	l.mu.Lock()
	top := l.top
	l.mu.Unlock()
	for i := range top {
		if ln := l.lanes.get(i); ln != nil {
			ln.pend.Or(pendCheck)
			r.serve(ln)
		}
	}
}

// requestDrain asks the loop to close its idle lanes now and the others
// when their responses are through (Server.Shutdown).
func (l *loop) requestDrain() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.drain = true
	if !l.dead.Load() && !l.stop {
		l.wake()
	}
}

// close stops the loop and waits for it (after Shutdown: no lanes left).
func (l *loop) close() {
	l.mu.Lock()
	l.stop = true
	runners := l.runners
	l.mu.Unlock()
	// Closing a runner's file wakes it out of the netpoller with an error;
	// it sees stop and ends.
	for _, r := range runners {
		r.file.Close()
	}
	<-l.stopped
	l.mu.Lock()
	if l.evfd >= 0 {
		unix.Close(l.evfd)
		l.evfd = -1
	}
	l.mu.Unlock()
}
