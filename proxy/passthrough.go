package proxy

import (
	"github.com/leafproxy/leafproxy/proxy/backend"
	"github.com/leafproxy/leafproxy/proxy/login"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// Backend-account mode (no users configured): the backend authenticates
// every client with its own accounts, and the proxy holds no password
// (package proxy/backend's doc.go: backend.PassThrough). Admin rights are
// never implied: the backend must confirm the account (CURRENT_USER()).

// SetAdmins replaces the user names that are admins in backend-account mode
// (a configuration reload); sessions already logged in keep their rights.
func (s *Server) SetAdmins(names []string) {
	s.admins.Store(login.Admins(names))
}

func (s *Server) adminName(user string) bool {
	return login.IsAdmin(s.admins.Load(), user)
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
			s.backendHello.Note(g)
			cg := s.greetingFor(g.ThreadID, g)
			cg.Scramble, cg.Plugin = g.Scramble, g.Plugin
			return &h.Hello, login.GreetClient(&h.Hello, c, cg, false, s.clientTLS, s.cfg.TLS.Required)
		}}
	bc, admin, err := pt.Login(s.baseCtx, c)
	if err != nil {
		return nil, nil, err
	}
	h.account = s.backendAccount(h.Resp.User, admin)
	return h, &bc, nil
}
