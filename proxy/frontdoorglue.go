package proxy

import (
	"context"
	"net"

	"github.com/leafproxy/leafproxy/proxy/frontdoor"
	"github.com/leafproxy/leafproxy/proxy/login"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// frontServer is the Server as package proxy/frontdoor sees it
// (frontdoor.Server); a distinct type keeps those methods off *Server.
type frontServer Server

// initFront fills in the front door (NewServer, after the options).
func (s *Server) initFront() {
	s.front = frontdoor.Door{
		S:                (*frontServer)(s),
		Log:              s.log,
		HandshakeTimeout: s.cfg.Limits.HandshakeTimeout,
		MaxSilent:        s.cfg.Limits.MaxSilentHandshakes,
		MaxHandshakes:    s.cfg.Limits.MaxHandshakes,
		MaxConnections:   s.cfg.Limits.MaxConnections,
		BackendAddr:      s.cfg.Backend.Addr,
		Throttle:         s.throttle,
		Mu:               &s.mu,
		Silent:           &s.silent,
		Pending:          &s.pending,
		Draining:         &s.draining,
		Done:             s.done,
		Dropped:          &s.handshakesDropped,
		Accepted:         &s.accepted,
		Active:           &s.active,
		WG:               &s.wg,
		Handling:         &s.handling,
	}
	s.front.Init()
}

// Hello is the backend's greeting as last seen, nil in backend-account
// mode, whose greeting is the backend's own for each client.
func (f *frontServer) Hello() *wire.Greeting {
	s := (*Server)(f)
	if s.users.Load().backendAuth {
		return nil
	}
	return s.backendHello.Load()
}

func (f *frontServer) Greeting(id uint32, hello *wire.Greeting) *wire.Greeting {
	return (*Server)(f).greetingFor(id, hello)
}

func (f *frontServer) Start(conn net.Conn, w *frontdoor.Waiting) { go (*Server)(f).handle(conn, w) }

func (f *frontServer) Refuse(c *wire.Leg, e *login.Error) { (*Server)(f).refuseLogin(c, e) }

func (f *frontServer) BackendRefusal(err error) (*login.Error, bool) {
	return (*Server)(f).backendRefusal(err), connectOutcome(err) != nil
}

func (f *frontServer) Shutdown(ctx context.Context) error { return (*Server)(f).Shutdown(ctx) }

// PokeIdle closes every idle session (Shutdown; s.mu held).
func (f *frontServer) PokeIdle() {
	for _, sess := range f.sessions {
		sess.pokeIfIdle()
	}
}

// DrainLoops starts no loop from here on and drains those running.
func (f *frontServer) DrainLoops() {
	s := (*Server)(f)
	s.loopsOnce.Do(func() {}) // no loops start from here on
	s.drainLoops()
}

// CutOff closes every session left when the grace is over.
func (f *frontServer) CutOff() {
	s := (*Server)(f)
	s.mu.Lock()
	for _, sess := range s.sessions {
		sess.forceClose()
	}
	s.mu.Unlock()
	s.cancelBase()
}

func (f *frontServer) StopLoops() { (*Server)(f).stopLoops() }

// backendNetConn is bc's connection, nil when bc is.
func backendNetConn(bc *backendConn) net.Conn {
	if bc == nil {
		return nil
	}
	return bc.Conn
}
