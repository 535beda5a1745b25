package proxy

import (
	"context"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/backend"
	"github.com/leafproxy/leafproxy/proxy/login"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// clientHandshake greets the client (unless the accept loop has: greeted),
// reads its response (upgrading to TLS
// when asked), authenticates it against the proxy's accounts and returns
// the client leg (its sequence id after the last packet read).
func (s *Server) clientHandshake(c *wire.Leg, g *wire.Greeting, greeted bool) (*clientHello, error) {
	h := &clientHello{}
	if err := login.GreetClient(&h.Hello, c, g, greeted, s.clientTLS, s.cfg.TLS.Required); err != nil {
		return nil, err
	}
	resp := h.Resp
	plugin := resp.Plugin
	if resp.Caps&mysql.CLIENT_PLUGIN_AUTH == 0 {
		plugin = mysql.AUTH_NATIVE_PASSWORD // cannot be switched; 4.1 scramble
	}
	acct, err := s.authenticate(c, resp.User, plugin, resp.Auth, g.Scramble, c.Conn.RemoteAddr())
	if err != nil {
		return nil, err
	}
	h.account = acct
	return h, nil
}

// backendLoginFor is the backend login for an authenticated client (backend.ClientLogin).
func backendLoginFor(h *clientHello) backend.Login {
	return backend.ClientLogin(h.Resp, h.account.BackendUser, h.account.BackendPassword)
}

// hello returns the backend greeting new clients are shown, learning it
// first with a probe login when the proxy has not yet seen one
// (login.Greetings.Get).
func (s *Server) hello(ctx context.Context) (*wire.Greeting, error) {
	if g := s.backendHello.Load(); g != nil {
		return g, nil
	}
	return s.backendHello.Get(ctx, s.probeGreeting)
}

// probeGreeting is a probe login as the proxy's own backend account: it
// returns the greeting the backend sent (which connectBackend has noted)
// and logs out.
func (s *Server) probeGreeting() (*wire.Greeting, error) {
	bc, err := s.connectBackend(s.baseCtx, backend.Login{User: s.cfg.Backend.User, Password: s.cfg.Backend.Password, Charset: 45})
	if err != nil {
		return nil, err
	}
	// Log out cleanly: an aborted connection counts against the
	// proxy's host in the backend's max_connect_errors.
	backend.Quit(bc.Conn)
	return bc.Hello, nil
}
