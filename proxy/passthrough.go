package proxy

import (
	"github.com/leafproxy/leafproxy/proxy/backend"
	"github.com/leafproxy/leafproxy/proxy/login"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// Backend-account mode (no users configured): the backend authenticates
// every client with its own accounts, and the proxy holds no password.
//
// For each new client the proxy opens a backend connection first and greets
// the client with that connection's scramble and default plugin (the rest
// of the greeting mirrors the backend as always). The client's handshake
// response is passed on with the client's user, auth data, database,
// attributes (plus the proxy's mark) and plugin, and with the capability
// flags the proxy needs on the backend leg (backend.Pending: protocol 4.1,
// its own TLS, compression when the client asked for it). Auth switches and extra auth data are then
// relayed both ways until the backend says OK or ERR; the client gets that
// answer. The connection that authenticated becomes the session's pinned
// backend connection: there is no second login. A client's TLS ends at the
// proxy; the backend leg's TLS is backend.tls's (see login.RelayAuth for the one
// place where the two differ: caching_sha2_password's full authentication).
//
// Admin rights are never implied: a session is an admin only when the user
// name it logged in with is listed in admins and the backend confirms, with
// CURRENT_USER(), that it authenticated that very account (not an
// anonymous account that accepts any name).

// SetAdmins replaces the user names that are admins in backend-account mode
// (a configuration reload); sessions already logged in keep their rights.
func (s *Server) SetAdmins(names []string) {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		if n != "" {
			m[n] = true
		}
	}
	s.admins.Store(&m)
}

func (s *Server) adminName(user string) bool {
	m := s.admins.Load()
	return m != nil && (*m)[user]
}

// backendAccount is the Account of a session the backend authenticated as
// user; admin says whether the proxy's admins list names it (confirmed).
func (s *Server) backendAccount(user string, admin bool) Account {
	return Account{Name: user, BackendUser: s.cfg.Backend.User, BackendPassword: s.cfg.Backend.Password,
		Admin: admin, backendAuth: true}
}

// passThroughHandshake logs a client in through a backend connection of
// its own (backend-account mode; backend.PassThrough). The client is
// greeted with the backend connection's own thread id, which is what
// CONNECTION_ID() and the processlist show it (killconn.go), scramble and
// plugin. It returns the client's hello and the logged-in backend
// connection, or a *login.Error to tell the client (any other error: the
// client went away or broke the protocol).
func (s *Server) passThroughHandshake(c *wire.Leg) (*clientHello, *backendConn, error) {
	h := &clientHello{}
	pt := &backend.PassThrough{Dialer: s.dialer(), HandshakeTimeout: s.cfg.Limits.HandshakeTimeout,
		User: s.cfg.Backend.User, Password: s.cfg.Backend.Password, Checker: s.checker(), Key: login.RSAKey(s.clientTLS),
		ReadBuf: clientReadBuf, WriteBuf: clientWriteBuf, Noted: s.noteBackend, Admin: s.adminName,
		Greet: func(g *wire.Greeting) (*login.Hello, error) {
			s.noteGreeting(g)
			cg := s.greetingFor(g.ThreadID, g)
			cg.Scramble, cg.Plugin = g.Scramble, g.Plugin
			return &h.Hello, login.GreetClient(&h.Hello, c, cg, false, s.clientTLS, s.cfg.TLS.Required)
		}}
	bc, admin, err := pt.Login(s.baseCtx, c)
	if err != nil {
		return nil, nil, err
	}
	h.account = s.backendAccount(h.Resp.User, admin)
	return h, newBackendConn(&bc), nil
}
