package proxy

import (
	"context"

	"github.com/leafproxy/leafproxy/proxy/backend"
	"github.com/leafproxy/leafproxy/proxy/login"
)

// What package proxy/backend, which dials the backend and logs in to it,
// needs from the server, and what it hands back: where the backend is
// (dialer), the reachability and greeting it found (noteBackend,
// backendHello.Note), and a logged-in connection (backendConn).

// backendReach is the backend's reachability (Server.backendDown,
// backendstate.go).
type backendReach = backend.Reach

// pendingHandshakes is a budget of connections that have not logged in
// yet (Server.pending, Server.silent; login.Pending).
type pendingHandshakes = login.Pending

// backendConn is a logged-in backend connection.
type backendConn = backend.Conn

// dialer is where the backend is and how to reach it.
func (s *Server) dialer() *backend.Dialer {
	return &backend.Dialer{Addr: s.cfg.Backend.Addr, ConnectTimeout: s.cfg.Backend.ConnectTimeout, TLS: s.backendTLS}
}

// connectBackend dials the backend and logs in with l
// (backend.Dialer.Connect), noting the backend's reachability and
// greeting. The returned error is the backend's own *mysql.MyError (1045,
// 1049, ...) when it refused, or an I/O error.
func (s *Server) connectBackend(ctx context.Context, l backend.Login) (*backendConn, error) {
	bc, err := s.dialer().Connect(ctx, &l)
	s.noteBackend(backend.Outcome(err))
	if err != nil {
		return nil, err
	}
	s.backendHello.Note(bc.Hello)
	return &bc, nil
}

// connectOutcome is connectBackend's err as noteBackend takes it: the
// backend's own refusal (*mysql.MyError) means it answered.
func connectOutcome(err error) error { return backend.Outcome(err) }

// backendRefusal turns a failed backend login into what the client is
// told (backend.Refusal): the backend's own ERR (1045, 1049, ...) or 1429
// naming the address.
func (s *Server) backendRefusal(err error) *login.Error {
	return backend.Refusal(err, s.cfg.Backend.Addr)
}
