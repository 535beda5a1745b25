package proxy

import (
	"bytes"
	"context"
	"errors"
	"net"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

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
// flags the proxy needs on the backend leg (backendResponse: protocol 4.1,
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
// its own (backend-account mode). It returns the client's hello and the
// logged-in backend connection, or a *loginError to tell the client (any
// other error: the client went away or broke the protocol).
func (s *Server) passThroughHandshake(c *wire.Leg) (*clientHello, *backendConn, error) {
	timeout := s.cfg.Backend.ConnectTimeout
	ctx, cancel := context.WithTimeout(s.baseCtx, timeout)
	nc, err := dialBackend(ctx, s.cfg.Backend.Addr, timeout)
	cancel()
	if err != nil {
		s.noteBackend(err)
		return nil, nil, s.backendRefusal(err)
	}
	// One bound for the whole login: the client's own handshake timeout,
	// plus the time the backend may take to connect.
	_ = nc.SetDeadline(time.Now().Add(timeout + s.cfg.Limits.HandshakeTimeout))
	b := wire.NewLeg("backend", nc, 4<<10, 4<<10)
	g, err := readBackendGreeting(b)
	s.noteBackend(connectOutcome(err))
	if err != nil {
		nc.Close()
		return nil, nil, s.backendRefusal(err)
	}
	s.noteGreeting(g)

	// The client is greeted with the backend connection's own thread id,
	// which is what CONNECTION_ID() and the processlist show it (killconn.go).
	cg := s.greetingFor(g.ThreadID, g)
	cg.Scramble, cg.Plugin = g.Scramble, g.Plugin
	h, err := s.greetClient(c, cg, false)
	if err != nil {
		s.retireBackend(b, g, nc)
		return nil, nil, err
	}
	host := login.HostKey(c.Conn.RemoteAddr())
	if wait, blocked := s.throttle.Blocked(host, time.Now()); blocked {
		s.retireBackend(b, g, nc)
		return nil, nil, login.HostBlocked(c.Conn.RemoteAddr(), wait)
	}
	cr := h.Resp
	l := backendLogin{user: cr.User, db: cr.DB, charset: login.BackendCharset(cr.Charset), clientCaps: cr.Caps,
		clientExt: cr.ExtCaps, maxPacket: cr.MaxPacket, attrs: cr.Attrs}
	resp := backendResponse(g, l)
	resp.Auth = cr.Auth
	if cr.Caps&mysql.CLIENT_PLUGIN_AUTH != 0 && cr.Plugin != "" {
		resp.Plugin = cr.Plugin
	} else if cr.Caps&mysql.CLIENT_PLUGIN_AUTH == 0 {
		resp.Plugin = mysql.AUTH_NATIVE_PASSWORD // a 4.1 scramble answer
	}
	bc := &backendConn{conn: nc, hello: g, threadID: g.ThreadID}
	compressLeg(resp, bc, g, cr.Caps)
	if b, err = s.startBackendTLS(b, bc, g, resp); err != nil {
		nc.Close()
		return nil, nil, s.backendRefusal(err)
	}
	if err := b.WritePacket(wire.AppendHandshakeResponse(nil, resp, false)); err != nil {
		bc.conn.Close()
		return nil, nil, s.backendRefusal(err)
	}
	if err := b.Flush(); err != nil {
		bc.conn.Close()
		return nil, nil, s.backendRefusal(err)
	}
	ex := &login.Exchange{Plugin: resp.Plugin, Scramble: g.Scramble, ClientTLS: h.TLS, BackendTLS: s.backendTLS != nil,
		Key: login.RSAKey(s.clientTLS)}
	ok, err := login.RelayAuth(c, b, ex)
	if err != nil {
		bc.conn.Close()
		return nil, nil, s.authFailure(err, host)
	}
	bc.ok = ok
	if bc.compressed && s.adminName(cr.User) {
		b.Compress(true, clientReadBuf, clientWriteBuf) // the admin check's query is the leg's first command
	}
	admin, err := s.confirmAdmin(b, cr.User)
	if err != nil {
		bc.conn.Close()
		return nil, nil, s.backendRefusal(err)
	}
	_ = bc.conn.SetDeadline(time.Time{})
	h.account = s.backendAccount(cr.User, admin)
	return h, bc, nil
}

// authFailure turns a failed relayed authentication into what the client
// is told. A refused password (1045, 1698) counts against the client's
// host, as the proxy's own checks do.
func (s *Server) authFailure(err error, host string) error {
	var me *mysql.MyError
	if !errors.As(err, &me) {
		var ie *wire.IOError
		if errors.As(err, &ie) && ie.Leg == "client" {
			return err // the client went away: nobody to tell
		}
		return s.backendRefusal(err)
	}
	if me.Code == mysql.ER_ACCESS_DENIED_ERROR || me.Code == mysql.ER_ACCESS_DENIED_NO_PASSWORD_ERROR {
		s.loginFailures.Add(1)
		if d := s.throttle.Fail(host, time.Now()); d > 0 {
			s.log.Warn("client host blocked after too many failed logins", "host", host, "for", d.String())
		}
	}
	return &login.Error{Code: me.Code, State: me.State, Msg: me.Message}
}

// confirmAdmin says whether the session the backend just authenticated as
// user is an admin: user is listed in admins and CURRENT_USER() names that
// account. Sessions of other users cost no query.
func (s *Server) confirmAdmin(b *wire.Leg, user string) (bool, error) {
	if !s.adminName(user) {
		return false, nil
	}
	cur, err := login.CurrentUser(b)
	if err != nil {
		return false, err
	}
	at := bytes.LastIndexByte(cur, '@')
	if at < 0 || string(cur[:at]) != user {
		s.log.Warn("login name is listed in admins but the backend authenticated another account: not an admin",
			"user", user, "current_user", string(cur))
		return false, nil
	}
	return true, nil
}

// retireBackend ends a backend connection whose client never sent its
// handshake response (it left, failed TLS, was refused): it logs in with
// the proxy's own account and quits, so the backend sees a clean
// connection rather than an aborted handshake, which would count against
// the proxy's host in the backend's max_connect_errors.
func (s *Server) retireBackend(b *wire.Leg, g *wire.Greeting, nc net.Conn) {
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(s.cfg.Backend.ConnectTimeout))
	bc, err := s.finishBackendLogin(b, g, backendLogin{user: s.cfg.Backend.User, password: s.cfg.Backend.Password, charset: 45})
	if err != nil {
		return
	}
	_ = bc.conn.SetDeadline(time.Now().Add(time.Second))
	_, _ = bc.conn.Write(comQuit[:])
	bc.conn.Close()
}
