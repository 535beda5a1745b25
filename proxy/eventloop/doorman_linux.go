package eventloop

import (
	"errors"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Doorman is one goroutine polling connections that were greeted and
// have not sent a byte yet (package proxy/frontdoor's doorman, greet_linux.go,
// says why): a connection costs an epoll registration until its first
// bytes (or its hang-up) arrive, and the doorman then hands it on
// (DoormanCalls.Start), or until its deadline, when the doorman gives it
// up (DoormanCalls.Expire). W is what the caller holds of a connection.
type Doorman[W any] struct {
	calls    DoormanCalls[W]
	epfd     int
	file     *os.File // a non-blocking dup of epfd, which Go's netpoller waits on
	rawFile  syscall.RawConn
	events   []unix.EpollEvent
	ready    int
	sweep    time.Duration
	stopping atomic.Bool

	mu    sync.Mutex
	next  int32
	byTok map[int32]held[W]
}

// held is a connection the doorman holds, and when it gives it up.
type held[W any] struct {
	w        W
	deadline time.Time
}

// DoormanCalls is what a doorman does with its connections; it calls
// them from its own goroutine.
type DoormanCalls[W any] struct {
	// Start: w's first bytes or its hang-up arrived (or the doorman
	// failed): w is the caller's again, to be served.
	Start func(w W)
	// Expire: w stayed silent past its deadline; the doorman has let go
	// of it, the caller closes it.
	Expire func(w W)
	// Log is where the doorman says it failed.
	Log *slog.Logger
}

// NewDoorman starts a doorman whose deadlines are looked at every sweep.
func NewDoorman[W any](sweep time.Duration, calls DoormanCalls[W]) (*Doorman[W], error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	dfd, err := unix.FcntlInt(uintptr(epfd), unix.F_DUPFD_CLOEXEC, 0)
	if err == nil {
		if err = unix.SetNonblock(dfd, true); err != nil {
			unix.Close(dfd)
		}
	}
	if err != nil {
		unix.Close(epfd)
		return nil, err
	}
	d := &Doorman[W]{calls: calls, epfd: epfd, file: os.NewFile(uintptr(dfd), "leafproxy-doorman"),
		events: make([]unix.EpollEvent, 256), byTok: map[int32]held[W]{}, sweep: sweep}
	if d.rawFile, err = d.file.SyscallConn(); err != nil {
		d.file.Close()
		unix.Close(epfd)
		return nil, err
	}
	_ = d.file.SetReadDeadline(time.Now().Add(d.sweep))
	go d.run()
	return d, nil
}

// Stop stops the doorman (once; it closes nothing it holds).
func (d *Doorman[W]) Stop() {
	if !d.stopping.Swap(true) {
		d.file.Close() // wakes run, which closes epfd
	}
}

// Stopping reports whether the doorman has stopped or failed: it holds
// nothing more.
func (d *Doorman[W]) Stopping() bool { return d.stopping.Load() }

// Hold gives the doorman w until deadline and returns its token, which
// Watch and Claim take; false: the doorman has stopped (w is the
// caller's).
func (d *Doorman[W]) Hold(w W, deadline time.Time) (tok int32, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for {
		d.next++
		if _, taken := d.byTok[d.next]; !taken && d.next > 0 {
			break
		}
		if d.next < 0 {
			d.next = 0
		}
	}
	if d.stopping.Load() { // the doorman failed just now
		return 0, false
	}
	d.byTok[d.next] = held[W]{w: w, deadline: deadline}
	return d.next, true
}

// Watch has the doorman wait for the first bytes (or the end) of the
// connection of tok, socket fd (inside syscall.RawConn.Control).
func (d *Doorman[W]) Watch(tok int32, fd uintptr) error {
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLONESHOT, Fd: tok}
	return unix.EpollCtl(d.epfd, unix.EPOLL_CTL_ADD, int(fd), &ev)
}

// Claim takes the connection of tok from the doorman; false: gone
// already (started, expired, or claimed).
func (d *Doorman[W]) Claim(tok int32) (W, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	h, ok := d.byTok[tok]
	if ok {
		delete(d.byTok, tok)
	}
	return h.w, ok
}

func (d *Doorman[W]) take(fd uintptr) bool {
	for {
		n, err := unix.EpollWait(int(fd), d.events, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n <= 0 {
			d.ready = 0
			return false
		}
		d.ready = n
		return true
	}
}

// run waits for the first bytes of greeted connections and starts their
// goroutines; every sweep interval it gives up those past their deadline.
func (d *Doorman[W]) run() {
	defer unix.Close(d.epfd)
	lastSweep := time.Now()
	for {
		err := d.rawFile.Read(d.take)
		if d.stopping.Load() {
			return
		}
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			d.calls.Log.Error("doorman stopped: clients are greeted from their own goroutines", "err", err)
			d.mu.Lock()
			d.stopping.Store(true)
			all := d.byTok
			d.byTok = map[int32]held[W]{}
			d.mu.Unlock()
			for _, h := range all {
				d.calls.Start(h.w)
			}
			return
		}
		for _, ev := range d.events[:d.ready] {
			if w, ok := d.Claim(ev.Fd); ok {
				d.calls.Start(w)
			}
		}
		d.ready = 0
		if now := time.Now(); now.Sub(lastSweep) >= d.sweep {
			lastSweep = now
			d.expire(now)
			_ = d.file.SetReadDeadline(now.Add(d.sweep))
		}
	}
}

// expire gives up the connections silent past their deadline.
func (d *Doorman[W]) expire(now time.Time) {
	var late []W
	d.mu.Lock()
	for tok, h := range d.byTok {
		if !now.Before(h.deadline) {
			delete(d.byTok, tok)
			late = append(late, h.w)
		}
	}
	d.mu.Unlock()
	for _, w := range late {
		d.calls.Expire(w)
	}
}
