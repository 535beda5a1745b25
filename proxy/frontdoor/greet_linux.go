//go:build linux

package frontdoor

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
// is what the front door does with it.

// Waiting is a greeted connection the doorman holds.
type Waiting struct {
	d        *doorman
	conn     net.Conn
	ID       uint32 // the session id it was greeted with
	host     string
	G        *wire.Greeting // the greeting it got
	Deadline time.Time      // its handshake's deadline
	tok      int32
}

type doorman struct {
	*eventloop.Doorman[*Waiting]
	door   *Door
	budget int // limits.max_silent_handshakes, bounded by the open-file limit
}

func newDoorman(dr *Door) (*doorman, error) {
	d := &doorman{door: dr}
	d.budget, _ = dr.SilentBudget()
	sweep := min(max(dr.HandshakeTimeout/10, 10*time.Millisecond), time.Second)
	e, err := eventloop.NewDoorman(sweep, eventloop.DoormanCalls[*Waiting]{
		Start: func(w *Waiting) { dr.S.Start(w.conn, w) },
		Expire: func(w *Waiting) {
			dr.Silent.Remove(w.conn, w.host, dr.Mu)
			dr.CloseEarly(w.conn)
		},
		Log: dr.Log,
	})
	if err != nil {
		return nil, err
	}
	d.Doorman = e
	return d, nil
}

// doorman starts the doorman on first use; nil if it cannot run (every
// connection then gets its goroutine at once).
func (dr *Door) doorman() *doorman {
	dr.doormanOnce.Do(func() {
		if dr.Draining.Load() {
			return
		}
		d, err := newDoorman(dr)
		if err != nil {
			dr.Log.Warn("greeting clients from their own goroutines", "err", err)
			return
		}
		dr.door = d
	})
	return dr.door
}

// StopDoorman stops the doorman, if it runs, and keeps it from starting.
func (dr *Door) StopDoorman() {
	dr.doormanOnce.Do(func() {})
	if d := dr.door; d != nil {
		d.Stop()
	}
}

// DoormanBudget is the silent connections' budget of the doorman, once
// started (0 if it does not run). Tests.
func (dr *Door) DoormanBudget() int {
	dr.doormanOnce.Do(func() {}) // orders the read of door after its start
	if dr.door == nil {
		return 0
	}
	return dr.door.budget
}

// greetEarly greets conn from the accept loop and hands it to the
// doorman; false: conn needs its own goroutine now (backend-account mode,
// whose greeting is the backend's; no backend greeting seen yet; a
// blocked host, which is refused; not a socket). On true the connection
// is the doorman's: its goroutine, wg and handling are its business.
func (dr *Door) greetEarly(conn net.Conn) bool {
	if dr.GreetInGoroutine {
		return false
	}
	hello := dr.S.Hello()
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
	if dr.Throttle.IsBlocked(host, now) {
		return false
	}
	d := dr.doorman()
	if d == nil || d.Stopping() {
		return false
	}
	dr.Accepted.Add(1)
	id := dr.NewSessionID()
	timeout := dr.HandshakeTimeout
	if !dr.SilentSpreadOff {
		timeout = login.SilentTimeout(timeout)
	}
	w := &Waiting{d: d, conn: conn, ID: id, host: host, G: dr.S.Greeting(id, hello), Deadline: now.Add(timeout)}
	if !login.WriteGreeting(rc, w.G) {
		dr.CloseEarly(conn)
		return true
	}
	dr.Mu.Lock()
	if dr.Draining.Load() {
		dr.Mu.Unlock()
		dr.CloseEarly(conn)
		return true
	}
	tok, held := d.Hold(w, w.Deadline)
	if !held { // the doorman failed just now: the client reconnects
		dr.Mu.Unlock()
		dr.CloseEarly(conn)
		return true
	}
	w.tok = tok
	dropped := dr.Silent.AddLocked(login.PendingConn{C: conn, W: w}, host, d.budget)
	dr.Mu.Unlock()
	if dropped {
		dr.Dropped.Add(1)
	}
	var cerr error
	err = rc.Control(func(fd uintptr) { cerr = d.Watch(w.tok, fd) })
	if err != nil || cerr != nil {
		if _, ok := d.Claim(w.tok); ok {
			dr.S.Start(conn, w) // its reads will tell what happened
		}
	}
	return true
}

// SilentBudget is limits.max_silent_handshakes, at most half the
// process's open-file limit (login.SilentBudget); bounded reports whether
// the limit cut it.
func (dr *Door) SilentBudget() (budget int, bounded bool) {
	return login.SilentBudget(dr.MaxSilent)
}

// End closes w if the doorman still holds it (true); false: it has a
// goroutine, or is closed already (login.Ender).
func (w *Waiting) End() bool {
	if got, ok := w.d.Claim(w.tok); !ok || got != w {
		return false
	}
	w.d.door.CloseEarly(w.conn)
	return true
}
