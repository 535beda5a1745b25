package frontdoor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/login"
	"github.com/leafproxy/leafproxy/proxy/sessionend"
	"github.com/leafproxy/leafproxy/proxy/wire"
	"golang.org/x/sys/unix"
)

// Server is what the front door needs from the server behind it (package
// proxy's *Server, through proxy/frontdoorglue.go).
type Server interface {
	// Hello is the greeting the accept loop may greet a new client from
	// (the backend's, as last seen); nil: the client's goroutine greets it
	// (backend-account mode, no backend greeting seen yet, tests).
	Hello() *wire.Greeting
	// Greeting is the greeting client id gets, built from hello.
	Greeting(id uint32, hello *wire.Greeting) *wire.Greeting
	// Refuse tells the client c why it cannot log in, and counts it.
	Refuse(c *wire.Leg, e *login.Error)
	// BackendRefusal is what a client is told when its backend login
	// failed with err; unreachable: the backend did not answer.
	BackendRefusal(err error) (e *login.Error, unreachable bool)
	// Start runs conn's handshake and session on a goroutine of its own;
	// w, when not nil, is conn as the accept loop greeted it.
	Start(conn net.Conn, w *Waiting)
	// Shutdown shuts the server down gracefully within ctx (Door.Shutdown,
	// and what the server does after it).
	Shutdown(ctx context.Context) error

	// Door.Shutdown's steps that are the server's:
	PokeIdle()   // the lock held: every idle session is closed at once
	DrainLoops() // no event loop starts from here on; the loops hand their sessions back
	CutOff()     // the grace is over: every session left is closed
	StopLoops()  // every session has ended: the event loops stop
}

// Door is the server's front door: its accept loop, the session ids it
// hands out and, on Linux, the doorman. The server fills in the fields
// before its first Serve; the pointers are the server's own state, shared
// with the rest of it.
type Door struct {
	S   Server
	Log *slog.Logger

	HandshakeTimeout time.Duration // limits.handshake_timeout
	MaxSilent        int           // limits.max_silent_handshakes
	MaxHandshakes    int           // limits.max_handshakes
	MaxConnections   int           // limits.max_connections
	BackendAddr      string        // backend.addr, for log lines

	Throttle *login.Throttle // failed logins per client host; nil when off

	Mu       *sync.Mutex     // the server's lock: Silent is under it
	Silent   *login.Pending  // greeted, nothing received yet (limits.max_silent_handshakes)
	Pending  *login.Pending  // handshakes under way (limits.max_handshakes)
	Draining *atomic.Bool    // Shutdown has begun
	Done     <-chan struct{} // closed when Shutdown has finished
	Dropped  *atomic.Uint64  // pending handshakes closed to make room
	Accepted *atomic.Uint64  // connections accepted
	Active   *atomic.Int64   // logged-in sessions
	WG       *sync.WaitGroup // connections not closed yet
	Handling *atomic.Int64   // connections whose handler has not returned (tests)

	GreetInGoroutine bool // tests: greet every client from its own goroutine, as before the doorman
	SilentSpreadOff  bool // tests: every silent connection's deadline is handshake_timeout, as before the spread

	listeners   []net.Listener // under Mu
	nextID      atomic.Uint32  // proxy session ids handed out in greetings
	doormanOnce sync.Once
	door        *doorman // greeted connections waiting for their first byte (greet_linux.go)
}

// SessionIDBase keeps the proxy's session ids (the greeting's connection id,
// what clients put in KILL) apart from backend thread ids, which count from
// 1: an id below it can only be a backend thread id (CONNECTION_ID()).
const SessionIDBase = 1 << 30

// Init prepares the session ids; call it once, before the door is used.
func (d *Door) Init() { d.nextID.Store(SessionIDBase) }

// NewSessionID hands out the next proxy session id.
func (d *Door) NewSessionID() uint32 {
	id := d.nextID.Add(1)
	if id < SessionIDBase { // wrapped after 3 billion sessions
		d.nextID.Store(SessionIDBase)
		id = d.nextID.Add(1)
	}
	return id
}

// SessionID is the session id of a connection: the one the accept loop
// greeted w with, or, for one not greeted yet (w nil), a new one, the
// connection counted as accepted.
func (d *Door) SessionID(w *Waiting) uint32 {
	if w != nil {
		return w.ID
	}
	d.Accepted.Add(1)
	return d.NewSessionID()
}

// Remote is the client's address for log lines ("unix" for a Unix
// socket's unnamed peer).
func Remote(c net.Conn) string {
	if a := c.RemoteAddr(); a != nil && a.String() != "" && a.String() != "@" {
		return a.String()
	}
	return "unix"
}

// Listen binds addr as Config.Listen reads it: host:port, or a Unix socket
// path (containing '/'), whose file a process that died left behind is
// removed first (one still serving it is an error).
func Listen(addr string) (net.Listener, error) {
	network := "tcp"
	if strings.Contains(addr, "/") {
		network = "unix"
		if c, err := net.Dial("unix", addr); err == nil {
			c.Close()
			return nil, errors.New("another process is serving this socket")
		}
		_ = os.Remove(addr)
	}
	return net.Listen(network, addr)
}

// Addr is the address of the first listener (nil before Serve).
func (d *Door) Addr() net.Addr {
	d.Mu.Lock()
	defer d.Mu.Unlock()
	if len(d.listeners) == 0 {
		return nil
	}
	return d.listeners[0].Addr()
}

// CloseListeners closes every listener (Shutdown; Mu held).
func (d *Door) CloseListeners() {
	for _, l := range d.listeners {
		l.Close()
	}
}

// Serve accepts clients on l until ctx ends or Shutdown is called; when
// ctx ends it shuts down gracefully, within grace, before returning.
// attrs are logged, after l's address, when it starts listening.
func (d *Door) Serve(ctx context.Context, l net.Listener, grace time.Duration, attrs ...any) error {
	d.Mu.Lock()
	if d.Draining.Load() {
		d.Mu.Unlock()
		l.Close()
		return errors.New("proxy: server is shut down")
	}
	d.listeners = append(d.listeners, l)
	d.Mu.Unlock()
	attrs = append([]any{"addr", l.Addr().String()}, attrs...)
	if n, bounded := d.SilentBudget(); bounded {
		// Said once, where an operator reads what the proxy runs with.
		attrs = append(attrs, "max_silent_handshakes", n, "bounded_by", "half the open-file limit (ulimit -n)")
	}
	d.Log.Info("proxy listening", attrs...)

	go func() {
		select {
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), grace)
			defer cancel()
			if err := d.S.Shutdown(sctx); err != nil {
				d.Log.Warn("shutdown grace period over, closed remaining sessions", "grace", grace)
			}
		case <-d.Done:
		}
	}()

	var delay time.Duration
	for {
		conn, err := l.Accept()
		if err != nil {
			if d.Draining.Load() {
				<-d.Done
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, unix.EMFILE) || errors.Is(err, unix.ENFILE) {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				d.Log.Warn("accept failed, retrying", "err", err, "in", delay)
				time.Sleep(delay)
				continue
			}
			return fmt.Errorf("accept on %s: %w", l.Addr(), err)
		}
		delay = 0
		d.WG.Add(1)
		d.Handling.Add(1)
		if !d.greetEarly(conn) {
			d.S.Start(conn, nil)
		}
	}
}

// CloseEarly closes a connection the accept loop counted as handled.
func (d *Door) CloseEarly(conn net.Conn) {
	conn.Close()
	d.WG.Done()
	d.Handling.Add(-1)
}

// AdmitHandshake counts a connection whose handshake begins against the
// budget of handshakes under way (limits.max_handshakes), with its
// deadline; false: its host is blocked (too many failed logins) and it
// has been refused.
func (d *Door) AdmitHandshake(raw net.Conn, c *wire.Leg, host string, w *Waiting) bool {
	if w != nil {
		c.Seq = 1 // after the greeting
		_ = raw.SetDeadline(w.Deadline)
		// Its first bytes are here: from the silent connections' budget to
		// that of handshakes under way (a goroutine, buffers).
		d.Mu.Lock()
		dropped := d.Silent.RemoveLocked(raw, host) && d.Pending.AddLocked(login.PendingConn{C: raw}, host, d.MaxHandshakes)
		d.Mu.Unlock()
		if dropped {
			d.Dropped.Add(1)
		}
		return true
	}
	if wait, blocked := d.Throttle.Blocked(host, time.Now()); blocked {
		// Refused before the greeting, as MariaDB refuses a blocked host:
		// a guess costs the proxy no handshake.
		d.S.Refuse(c, login.HostBlocked(raw.RemoteAddr(), wait))
		return false
	}
	if d.Pending.Add(raw, host, d.MaxHandshakes, d.Mu) {
		d.Dropped.Add(1)
	}
	_ = raw.SetDeadline(time.Now().Add(d.HandshakeTimeout))
	return true
}

// AdmitSession takes one of limits.max_connections for a logged-in client
// (the caller gives it back when the session ends); false: none is left,
// the client has been refused with 1040 and backend, its backend
// connection in backend-account mode (nil with users), closed.
func (d *Door) AdmitSession(c *wire.Leg, backend net.Conn, log *slog.Logger) bool {
	if n := d.Active.Add(1); d.MaxConnections > 0 && n > int64(d.MaxConnections) {
		d.Active.Add(-1)
		log.Warn("too many connections", "max", d.MaxConnections)
		if backend != nil {
			_ = backend.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = backend.Write(sessionend.ComQuit[:])
			backend.Close()
		}
		d.S.Refuse(c, &login.Error{Code: mysql.ER_CON_COUNT_ERROR, State: "08004", Msg: "Too many connections"})
		return false
	}
	return true
}

// Shutdown stops accepting, closes idle sessions at once, lets statements in
// flight finish until ctx ends, then closes whatever is left. It returns
// ctx's error if sessions had to be cut off.
func (d *Door) Shutdown(ctx context.Context) error {
	d.Mu.Lock()
	d.Draining.Store(true)
	d.CloseListeners()
	d.S.PokeIdle()
	d.Pending.CloseAll()
	d.Silent.CloseAll()
	d.Mu.Unlock()
	d.S.DrainLoops()

	finished := make(chan struct{})
	go func() { d.WG.Wait(); close(finished) }()
	var err error
	select {
	case <-finished:
	case <-ctx.Done():
		err = ctx.Err()
		d.S.CutOff()
		<-finished
	}
	d.S.StopLoops()
	d.StopDoorman()
	return err
}

// RefuseBackendLogin answers a client whose backend login (with users)
// failed with the backend's refusal, logged once per outage when the
// backend is unreachable.
func (d *Door) RefuseBackendLogin(c *wire.Leg, err error, log *slog.Logger) {
	le, unreachable := d.S.BackendRefusal(err)
	if unreachable {
		// Unreachable: logged once when it stops answering (noteBackend).
		log.Debug("backend login failed", "backend", d.BackendAddr, "code", le.Code, "err", le.Msg)
	} else {
		log.Warn("backend login failed", "backend", d.BackendAddr, "code", le.Code, "err", le.Msg)
	}
	d.S.Refuse(c, le)
}
