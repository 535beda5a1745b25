package proxy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/login"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// clientHandshake greets the client (unless the accept loop has: greeted),
// reads its response (upgrading to TLS
// when asked), authenticates it against the proxy's accounts and returns
// the client leg (its sequence id after the last packet read).
func (s *Server) clientHandshake(c *wire.Leg, g *wire.Greeting, greeted bool) (*clientHello, error) {
	h, err := s.greetClient(c, g, greeted)
	if err != nil {
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

// backendLoginFor is the backend login for an authenticated client.
func backendLoginFor(h *clientHello) backendLogin {
	return backendLogin{
		user:       h.account.BackendUser,
		password:   h.account.BackendPassword,
		db:         h.Resp.DB,
		charset:    login.BackendCharset(h.Resp.Charset),
		clientCaps: h.Resp.Caps,
		clientExt:  h.Resp.ExtCaps,
		maxPacket:  h.Resp.MaxPacket,
		attrs:      h.Resp.Attrs,
	}
}

// backendRefusal turns a failed backend login into what the client is told:
// the backend's own ERR (1045, 1049, ...) or 1429 naming the address.
func (s *Server) backendRefusal(err error) *login.Error {
	var me *mysql.MyError
	if errors.As(err, &me) {
		return &login.Error{Code: me.Code, State: me.State, Msg: me.Message}
	}
	return &login.Error{Code: errBackendUnreachable, State: "HY000",
		Msg: fmt.Sprintf("leafproxy: can't connect to backend MySQL server on '%s': %v", s.cfg.Backend.Addr, rootCause(err))}
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
	bc, err := s.connectBackend(s.baseCtx, backendLogin{
		user: s.cfg.Backend.User, password: s.cfg.Backend.Password, charset: 45,
	})
	if err != nil {
		return nil, err
	}
	// Log out cleanly: an aborted connection counts against the
	// proxy's host in the backend's max_connect_errors.
	_ = bc.conn.SetDeadline(time.Now().Add(time.Second))
	_, _ = bc.conn.Write([]byte{1, 0, 0, 0, mysql.COM_QUIT})
	bc.conn.Close()
	return bc.hello, nil
}

// noteGreeting remembers the backend's latest greeting (login.Greetings.Note).
func (s *Server) noteGreeting(g *wire.Greeting) { s.backendHello.Note(g) }
