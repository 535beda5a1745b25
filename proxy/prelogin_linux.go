//go:build linux

package proxy

import (
	"net"
	"syscall"
	"time"

	"github.com/leafproxy/leafproxy/proxy/eventloop"
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
//
// The poller itself is package eventloop's (eventloop.Doorman): this file
// is what the server does with it.

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
	*eventloop.Doorman[*waiting]
	s      *Server
	budget int // limits.max_silent_handshakes, bounded by the open-file limit
}

func newDoorman(s *Server) (*doorman, error) {
	d := &doorman{s: s}
	d.budget, _ = s.silentBudget()
	sweep := min(max(s.cfg.Limits.HandshakeTimeout/10, 10*time.Millisecond), time.Second)
	e, err := eventloop.NewDoorman(sweep, eventloop.DoormanCalls[*waiting]{
		Start: func(w *waiting) { go s.handle(w.conn, w) },
		Expire: func(w *waiting) {
			s.silent.Remove(w.conn, w.host, &s.mu)
			s.closeEarly(w.conn)
		},
		Log: s.log,
	})
	if err != nil {
		return nil, err
	}
	d.Doorman = e
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
	if d := s.door; d != nil {
		d.Stop()
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
	if d == nil || d.Stopping() {
		return false
	}
	s.accepted.Add(1)
	id := s.newSessionID()
	timeout := s.cfg.Limits.HandshakeTimeout
	if !s.silentSpreadOff {
		timeout = login.SilentTimeout(timeout)
	}
	w := &waiting{d: d, conn: conn, id: id, host: host, g: s.greetingFor(id, hello), deadline: now.Add(timeout)}
	if !login.WriteGreeting(rc, w.g) {
		s.closeEarly(conn)
		return true
	}
	s.mu.Lock()
	if s.draining.Load() {
		s.mu.Unlock()
		s.closeEarly(conn)
		return true
	}
	tok, held := d.Hold(w, w.deadline)
	if !held { // the doorman failed just now: the client reconnects
		s.mu.Unlock()
		s.closeEarly(conn)
		return true
	}
	w.tok = tok
	dropped := s.silent.AddLocked(pendingConn{C: conn, W: w}, host, d.budget)
	s.mu.Unlock()
	if dropped {
		s.handshakesDropped.Add(1)
	}
	var cerr error
	err = rc.Control(func(fd uintptr) { cerr = d.Watch(w.tok, fd) })
	if err != nil || cerr != nil {
		if _, ok := d.Claim(w.tok); ok {
			go s.handle(conn, w) // its reads will tell what happened
		}
	}
	return true
}

// silentBudget is limits.max_silent_handshakes, at most half the
// process's open-file limit (login.SilentBudget); bounded reports whether
// the limit cut it.
func (s *Server) silentBudget() (budget int, bounded bool) {
	return login.SilentBudget(s.cfg.Limits.MaxSilentHandshakes)
}

// closeEarly closes a connection the accept loop counted as handled.
func (s *Server) closeEarly(conn net.Conn) {
	conn.Close()
	s.wg.Done()
	s.handling.Add(-1)
}

// End closes w if the doorman still holds it (true); false: it has a
// goroutine, or is closed already (login.Ender).
func (w *waiting) End() bool {
	if got, ok := w.d.Claim(w.tok); !ok || got != w {
		return false
	}
	w.d.s.closeEarly(w.conn)
	return true
}
