//go:build linux

package proxy

import (
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/leafproxy/leafproxy/proxy/login"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// The accept loop greets a new client itself and hands its connection to
// the doorman, one goroutine polling every greeted connection that has
// not sent a byte yet; the connection gets its own goroutine only when
// its handshake response (or its hang-up) arrives. A silent connection
// then costs an accept, a write and an epoll registration, and closing it
// to make room wakes nobody: a flood of silent connections from one host
// no longer fills the scheduler's run queue with thousands of goroutines
// that every other client's network wake-up waits behind (issue 29 item
// 3; BENCHMARKS.md).
//
// Being cheap, silent connections have their own budget,
// limits.max_silent_handshakes (16,384; at most half the open-file
// limit), larger than limits.max_handshakes, which bounds handshakes
// under way: a flood of thousands of silent connections is held whole
// instead of churning through the kernel's accept queue, where every
// other client's connect would wait behind it. And each one's deadline
// is handshake_timeout plus a random part of up to half of it, so a flood
// opened at once is not cut, and does not come back, in one wave.

// waiting is a greeted connection the doorman holds.
type waiting struct {
	d        *doorman
	conn     net.Conn
	id       uint32
	host     string
	g        *wire.Greeting
	deadline time.Time
	tok      int32
}

type doorman struct {
	s        *Server
	epfd     int
	file     *os.File // a non-blocking dup of epfd, which Go's netpoller waits on
	rawFile  syscall.RawConn
	events   []unix.EpollEvent
	ready    int
	sweep    time.Duration
	budget   int // limits.max_silent_handshakes, bounded by the open-file limit
	stopping atomic.Bool

	mu    sync.Mutex
	next  int32
	byTok map[int32]*waiting
}

func newDoorman(s *Server) (*doorman, error) {
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
	d := &doorman{s: s, epfd: epfd, file: os.NewFile(uintptr(dfd), "leafproxy-doorman"),
		events: make([]unix.EpollEvent, 256), byTok: map[int32]*waiting{}}
	if d.rawFile, err = d.file.SyscallConn(); err != nil {
		d.file.Close()
		unix.Close(epfd)
		return nil, err
	}
	d.sweep = min(max(s.cfg.Limits.HandshakeTimeout/10, 10*time.Millisecond), time.Second)
	d.budget, _ = s.silentBudget()
	_ = d.file.SetReadDeadline(time.Now().Add(d.sweep))
	go d.run()
	return d, nil
}

// doorman starts the server's doorman on first use; nil if it cannot run
// (every connection then gets its goroutine at once).
func (s *Server) doorman() *doorman {
	s.doormanOnce.Do(func() {
		if s.draining.Load() {
			return
		}
		d, err := newDoorman(s)
		if err != nil {
			s.log.Warn("greeting clients from their own goroutines", "err", err)
			return
		}
		s.door = d
	})
	return s.door
}

func (s *Server) stopDoorman() {
	s.doormanOnce.Do(func() {})
	if d := s.door; d != nil && !d.stopping.Swap(true) {
		d.file.Close() // wakes run, which closes epfd
	}
}

// greetEarly greets conn from the accept loop and hands it to the
// doorman; false: conn needs its own goroutine now (backend-account mode,
// whose greeting is the backend's; no backend greeting seen yet; a
// blocked host, which is refused; not a socket). On true the connection
// is the doorman's: its goroutine, wg and handling are its business.
func (s *Server) greetEarly(conn net.Conn) bool {
	if s.greetInGoroutine || s.users.Load().backendAuth {
		return false
	}
	hello := s.backendHello.Load()
	sc, ok := conn.(syscall.Conn)
	if hello == nil || !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	now := time.Now()
	host := login.HostKey(conn.RemoteAddr())
	if s.throttle.IsBlocked(host, now) {
		return false
	}
	d := s.doorman()
	if d == nil || d.stopping.Load() {
		return false
	}
	s.accepted.Add(1)
	id := s.newSessionID()
	timeout := s.cfg.Limits.HandshakeTimeout
	if !s.silentSpreadOff {
		timeout = silentTimeout(timeout)
	}
	w := &waiting{d: d, conn: conn, id: id, host: host, g: s.greetingFor(id, hello), deadline: now.Add(timeout)}
	body := wire.AppendGreeting(nil, w.g)
	pkt := append([]byte{byte(len(body)), byte(len(body) >> 8), byte(len(body) >> 16), 0}, body...)
	// One non-blocking write: a new socket's send buffer takes a greeting.
	var n int
	werr := rc.Write(func(fd uintptr) bool {
		n, err = unix.Write(int(fd), pkt)
		return true
	})
	if werr != nil || err != nil || n != len(pkt) {
		s.closeEarly(conn)
		return true
	}
	s.mu.Lock()
	if s.draining.Load() {
		s.mu.Unlock()
		s.closeEarly(conn)
		return true
	}
	d.mu.Lock()
	for {
		d.next++
		if _, taken := d.byTok[d.next]; !taken && d.next > 0 {
			break
		}
		if d.next < 0 {
			d.next = 0
		}
	}
	w.tok = d.next
	if d.stopping.Load() { // the doorman failed just now: the client reconnects
		d.mu.Unlock()
		s.mu.Unlock()
		s.closeEarly(conn)
		return true
	}
	d.byTok[w.tok] = w
	d.mu.Unlock()
	dropped := s.silent.addLocked(pendingConn{c: conn, w: w}, host, d.budget)
	s.mu.Unlock()
	if dropped {
		s.handshakesDropped.Add(1)
	}
	var cerr error
	err = rc.Control(func(fd uintptr) {
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLONESHOT, Fd: w.tok}
		cerr = unix.EpollCtl(d.epfd, unix.EPOLL_CTL_ADD, int(fd), &ev)
	})
	if (err != nil || cerr != nil) && d.claim(w.tok) != nil {
		go s.handle(conn, w) // its reads will tell what happened
	}
	return true
}

// silentBudget is limits.max_silent_handshakes, at most half the
// process's open-file limit (each silent connection is an open file: the
// other half is left to sessions, two each, handshakes under way and the
// process); bounded reports whether the limit cut it.
func (s *Server) silentBudget() (budget int, bounded bool) {
	budget = s.cfg.Limits.MaxSilentHandshakes
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil && lim.Cur < uint64(2*budget) {
		return max(int(lim.Cur/2), 1), true
	}
	return budget, false
}

// silentTimeout is how long a greeted connection may stay silent:
// handshake_timeout plus a random part of up to half of it, so
// connections opened together (a flood) are not all cut, and do not all
// reconnect, at once.
func silentTimeout(t time.Duration) time.Duration {
	if j := t / 2; j > 0 {
		return t + rand.N(j)
	}
	return t
}

// closeEarly closes a connection the accept loop counted as handled.
func (s *Server) closeEarly(conn net.Conn) {
	conn.Close()
	s.wg.Done()
	s.handling.Add(-1)
}

// claim takes the connection of tok from the doorman (nil: gone already).
func (d *doorman) claim(tok int32) *waiting {
	d.mu.Lock()
	defer d.mu.Unlock()
	w := d.byTok[tok]
	if w != nil {
		delete(d.byTok, tok)
	}
	return w
}

// end closes w if the doorman still holds it (true); false: it has a
// goroutine, or is closed already.
func (w *waiting) end() bool {
	if w.d.claim(w.tok) != w {
		return false
	}
	w.d.s.closeEarly(w.conn)
	return true
}

func (d *doorman) take(fd uintptr) bool {
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
// goroutines; every sweep interval it closes those past
// limits.handshake_timeout.
func (d *doorman) run() {
	defer unix.Close(d.epfd)
	lastSweep := time.Now()
	for {
		err := d.rawFile.Read(d.take)
		if d.stopping.Load() {
			return
		}
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			d.s.log.Error("doorman stopped: clients are greeted from their own goroutines", "err", err)
			d.mu.Lock()
			d.stopping.Store(true)
			held := d.byTok
			d.byTok = map[int32]*waiting{}
			d.mu.Unlock()
			for _, w := range held {
				go d.s.handle(w.conn, w)
			}
			return
		}
		for _, ev := range d.events[:d.ready] {
			if w := d.claim(ev.Fd); w != nil {
				go d.s.handle(w.conn, w)
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

// expire closes the connections silent past their deadline.
func (d *doorman) expire(now time.Time) {
	var late []*waiting
	d.mu.Lock()
	for tok, w := range d.byTok {
		if !now.Before(w.deadline) {
			delete(d.byTok, tok)
			late = append(late, w)
		}
	}
	d.mu.Unlock()
	for _, w := range late {
		d.s.silent.remove(w.conn, w.host, &d.s.mu)
		d.s.closeEarly(w.conn)
	}
}
