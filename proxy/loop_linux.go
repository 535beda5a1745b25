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
	"unsafe"

	"github.com/leafproxy/leafproxy/internal/nonblock"
)

// Event loops (issue 11). A logged-in session on plain sockets is served by
// one of the server's loops instead of by its own goroutine: the loop owns
// both of the session's sockets in an epoll instance of its own and runs
// each command to the point where its response is on its way, then serves
// other sessions until the response arrives and relays it. Nothing parks or
// wakes per command and no read finds a socket empty, which is where a
// goroutine per session spent its time: on the 2-core machine of
// BENCHMARKS.md the goroutine relay ran at 0.82x haproxy's SELECT 1 rate,
// a prototype of this loop at 0.96-0.99x with less CPU than haproxy.
//
// The loop's goroutine parks in Go's netpoller on the epoll descriptor
// itself (registered as a pollable file), so it is an ordinary goroutine:
// an idle loop costs nothing, goroutines it readies run as usual, and the
// runtime keeps its own scheduling. It does not block anywhere else.
//
// Everything that could wait leaves the loop: a command the loop does not
// run (loopCommand), an interceptor or session method that would wait
// (ErrWouldBlock), a command too large for the loop's buffer, LOCAL INFILE,
// and anything the backend sends unasked go back to the session's own
// goroutine (lane.handOff), which runs it with the ordinary blocking code
// and returns to the loop later (Session.serve). The two paths share the
// command code (dispatch) and the response state machine (respTracker).

// loopBuf is the size of a loop's read buffers; commands up to this size
// are read by the loop, larger ones by the session's goroutine (which
// applies limits.command_memory).
const loopBuf = 64 << 10

// epollBatch is how many events one epoll_wait returns at most.
const epollBatch = 128

type loop struct {
	srv  *Server
	epfd int
	evfd int // eventfd: wakes the loop for its inbox
	file *os.File
	rc   syscall.RawConn
	poll func(uintptr) bool // l.wait, bound once
	ctx  context.Context    // marked: interceptors must not block

	mu      sync.Mutex
	inbox   []*lane
	drain   bool // Server.Shutdown: close idle lanes, busy ones when done
	stop    bool
	stopped chan struct{}
	dead    atomic.Bool // the loop's goroutine has ended: take nothing more

	lanes  []*lane // by index (epoll events carry index and generation)
	free   []int32
	gen    int32
	events []syscall.EpollEvent
	cbuf   []byte        // client reads
	bbuf   []byte        // backend reads
	cw, bw *bufio.Writer // a lane's legs write through these while the loop serves it
	now    int64         // unix nanos of the current batch of events
	sweep  time.Duration // idle-timeout sweep period; 0: none
	swept  int64         // unix nanos of the last sweep
}

// Events carry the lane's index in Fd and its generation and leg in Pad.
const inboxIndex = -1

func newLoop(srv *Server) (*loop, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("event loop: epoll_create1: %w", err)
	}
	efd, _, e := syscall.Syscall(syscall.SYS_EVENTFD2, 0, syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if e != 0 {
		syscall.Close(epfd)
		return nil, fmt.Errorf("event loop: eventfd: %w", e)
	}
	l := &loop{
		srv: srv, epfd: epfd, evfd: int(efd),
		ctx:     nonblock.Context(srv.baseCtx),
		stopped: make(chan struct{}),
		events:  make([]syscall.EpollEvent, epollBatch),
		cbuf:    make([]byte, loopBuf),
		bbuf:    make([]byte, loopBuf),
		cw:      bufio.NewWriterSize(nil, 16<<10),
		bw:      bufio.NewWriterSize(nil, 16<<10),
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: inboxIndex}
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, l.evfd, &ev); err != nil {
		syscall.Close(epfd)
		syscall.Close(l.evfd)
		return nil, fmt.Errorf("event loop: register eventfd: %w", err)
	}
	// Non-blocking, so that os.NewFile makes it a pollable file: the loop
	// parks in the netpoller until the epoll instance has events.
	if err := syscall.SetNonblock(epfd, true); err != nil {
		syscall.Close(epfd)
		syscall.Close(l.evfd)
		return nil, fmt.Errorf("event loop: %w", err)
	}
	l.file = os.NewFile(uintptr(epfd), "leafproxy-event-loop")
	if l.rc, err = l.file.SyscallConn(); err != nil {
		l.file.Close()
		syscall.Close(l.evfd)
		return nil, fmt.Errorf("event loop: %w", err)
	}
	l.poll = l.wait
	if t := srv.cfg.Limits.IdleTimeout; t > 0 {
		l.sweep = min(max(t/10, 10*time.Millisecond), time.Second)
	}
	go l.run()
	return l, nil
}

// run is the loop's goroutine. However it ends, the lanes it still has
// are closed (their goroutines end their sessions) and it takes no more.
func (l *loop) run() {
	defer close(l.stopped)
	defer l.file.Close()
	defer func() {
		l.mu.Lock()
		l.dead.Store(true)
		in := l.inbox
		l.inbox = nil
		l.mu.Unlock()
		for _, ln := range append(in, l.lanes...) {
			if ln != nil && !ln.gone {
				l.rescue(ln, func() { ln.bind(); ln.teardown() })
			}
		}
	}()
	for {
		if l.sweep > 0 {
			_ = l.file.SetReadDeadline(time.Now().Add(l.sweep))
		}
		err := l.rc.Read(l.poll)
		if l.stopping() {
			return
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			l.idleSweep()
			continue
		}
		if err != nil {
			l.srv.log.Error("event loop stopped", "err", err)
			return
		}
	}
}

func (l *loop) stopping() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stop
}

// wait handles every event there is; false asks the netpoller to park the
// loop until the epoll instance has more.
func (l *loop) wait(uintptr) bool {
	for {
		n, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(l.epfd),
			uintptr(unsafe.Pointer(&l.events[0])), uintptr(len(l.events)), 0, 0, 0)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 || n == 0 {
			return false
		}
		l.now = time.Now().UnixNano()
		if l.sweep > 0 && l.now-l.swept >= int64(l.sweep) {
			l.idleSweep() // a loop that is never idle still enforces idle_timeout
		}
		for i := range int(n) {
			ev := l.events[i]
			if ev.Fd == inboxIndex {
				if l.takeInbox() {
					return true
				}
				continue
			}
			if int(ev.Fd) >= len(l.lanes) {
				continue
			}
			ln := l.lanes[ev.Fd]
			if ln == nil || ln.gen != ev.Pad>>1 {
				continue // the lane left earlier in this batch
			}
			l.serve(ln, ev.Pad&1 == 0, ev.Events)
		}
	}
}

// serve handles one event of one lane.
func (l *loop) serve(ln *lane, client bool, events uint32) {
	l.rescue(ln, func() {
		ln.bind()
		if client {
			ln.onClient(events)
		} else {
			ln.onBackend(events)
		}
	})
}

// rescue runs f for ln: a panic (an interceptor's bug, say) costs that
// session, not the loop and its other sessions.
func (l *loop) rescue(ln *lane, f func()) {
	defer func() {
		if r := recover(); r != nil {
			ln.s.log.Error("session closed: internal error", "panic", fmt.Sprint(r))
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
		_, err := syscall.Write(l.evfd, one[:])
		if err != syscall.EINTR {
			return
		}
	}
}

// takeInbox registers lanes handed to the loop and carries out drain and
// stop requests; true means stop.
func (l *loop) takeInbox() bool {
	var b [8]byte
	_, _ = syscall.Read(l.evfd, b[:])
	l.mu.Lock()
	in, drain, stop := l.inbox, l.drain, l.stop
	l.inbox = nil
	l.mu.Unlock()
	for _, ln := range in {
		l.attach(ln)
	}
	if drain {
		for _, ln := range l.lanes {
			if ln != nil && !ln.busy && len(ln.cpend) == 0 {
				l.rescue(ln, func() {
					ln.bind()
					ln.s.log.Debug("session closed: proxy shutting down")
					ln.teardown()
				})
			}
		}
	}
	return stop
}

// attach registers a lane's sockets and serves what its goroutine had read
// ahead.
func (l *loop) attach(ln *lane) {
	idx := int32(len(l.lanes))
	if n := len(l.free); n > 0 {
		idx, l.free = l.free[n-1], l.free[:n-1]
	} else {
		l.lanes = append(l.lanes, nil)
	}
	// A loop-wide generation: an event queued for a lane that left earlier
	// in the same batch must not reach the lane now in its slot.
	l.gen++
	ln.idx, ln.gen = idx, l.gen&(1<<30-1)
	l.lanes[idx] = ln
	ln.attached = true
	ln.cev, ln.bev = syscall.EPOLLIN, syscall.EPOLLIN
	cev := syscall.EpollEvent{Events: ln.cev, Fd: idx, Pad: ln.gen << 1}
	bev := syscall.EpollEvent{Events: ln.bev, Fd: idx, Pad: ln.gen<<1 | 1}
	ln.bind()
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, ln.cfd, &cev); err != nil {
		ln.s.log.Error("session closed: event loop could not watch the client socket", "err", err)
		ln.teardown()
		return
	}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, ln.bfd, &bev); err != nil {
		ln.s.log.Error("session closed: event loop could not watch the backend socket", "err", err)
		ln.teardown()
		return
	}
	if l.srv.draining.Load() {
		ln.s.log.Debug("session closed: proxy shutting down")
		ln.teardown()
		return
	}
	if len(ln.cin) > 0 {
		// Commands the goroutine had read ahead run now, guarded as those
		// of any event are.
		l.rescue(ln, func() {
			ln.commands(ln.cin)
			if !ln.gone {
				ln.interest()
			}
		})
		return
	}
	ln.interest()
}

// detach forgets a lane (its goroutine takes it back, or it is closed).
func (l *loop) detach(ln *lane) {
	if !ln.attached {
		return // still in the inbox
	}
	ln.attached = false
	_ = syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, ln.cfd, nil)
	_ = syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, ln.bfd, nil)
	l.lanes[ln.idx] = nil
	l.free = append(l.free, ln.idx)
}

// idleSweep closes lanes idle longer than limits.idle_timeout.
func (l *loop) idleSweep() {
	limit := l.srv.cfg.Limits.IdleTimeout
	now := time.Now()
	l.now, l.swept = now.UnixNano(), now.UnixNano()
	for _, ln := range l.lanes {
		if ln == nil || ln.busy || len(ln.cpend) > 0 {
			continue
		}
		if now.Sub(time.Unix(0, ln.s.since.Load())) >= limit {
			l.rescue(ln, func() {
				ln.bind()
				ln.s.endOnClientError(os.ErrDeadlineExceeded)
				ln.teardown()
			})
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
	if !l.dead.Load() && !l.stop {
		l.stop = true
		l.wake()
	}
	l.stop = true
	l.mu.Unlock()
	<-l.stopped
	l.mu.Lock()
	if l.evfd >= 0 {
		syscall.Close(l.evfd)
		l.evfd = -1
	}
	l.mu.Unlock()
}
