package proxy

import (
	"context"
	"crypto/tls"
	"errors"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/backend"
	"github.com/leafproxy/leafproxy/proxy/login"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// changeUser carries out COM_CHANGE_USER as the server does. A session the
// backend authenticated (backend-account mode) has the command relayed to
// its backend connection, auth switches and all (relayChangeUser). With
// users configured, the new account is checked against them with the
// greeting's scramble (switching plugin if needed), then the backend
// session is replaced by a fresh login as the account's backend user,
// which resets session state exactly as the server would (variables,
// temporary tables, prepared statements).
//
// A refused change (wrong password, unknown database) answers the error and
// keeps the connection, as MariaDB does: the session is reset all the same
// and keeps its user, database and character sets (MariaDB's change user
// resets before it authenticates, and restores those on failure; a
// COM_RESET_CONNECTION on the kept backend connection does the same). After
// three failures (login.MaxChangeUserFailures) the command is refused with 1047.
func (s *Session) changeUser(ctx context.Context, p []byte) error {
	cu, err := login.ParseChangeUser(p, s.caps)
	if err != nil {
		_ = s.writeErrFlush(mysql.ER_MALFORMED_PACKET, "HY000", "Malformed communication packet")
		return errQuit
	}
	if s.account.backendAuth && s.srv.users.Load().backendAuth {
		return s.relayChangeUser(ctx, cu)
	}
	if s.changeUserFails >= login.MaxChangeUserFailures {
		return s.writeErrFlush(mysql.ER_UNKNOWN_COM_ERROR, "08S01", "Unknown command")
	}
	plugin := cu.Plugin
	if s.caps&mysql.CLIENT_PLUGIN_AUTH == 0 {
		plugin = mysql.AUTH_NATIVE_PASSWORD
	}
	acct, err := s.srv.authenticate(s.c, cu.User, plugin, cu.Auth, s.scramble, s.c.Conn.RemoteAddr())
	if err != nil {
		var le *login.Error
		if errors.As(err, &le) {
			s.log.Info("change user refused", "to", cu.User, "code", le.Code)
			return s.changeUserFailed(le.Code, le.State, le.Msg)
		}
		return s.c.Fail(err)
	}
	charset, attrs := s.changedCharset(cu)
	bc, err := s.srv.connectBackend(ctx, backend.Login{
		User: acct.BackendUser, Password: acct.BackendPassword, DB: cu.DB,
		Charset: login.BackendCharset(uint8(charset)), ClientCaps: s.caps, ClientExt: s.extCaps,
		MaxPacket: 1 << 30, Attrs: attrs,
	})
	if err != nil {
		le := s.srv.backendRefusal(err)
		s.log.Warn("change user: backend login failed", "to", cu.User, "code", le.Code, "err", le.Msg)
		return s.changeUserFailed(le.Code, le.State, le.Msg)
	}
	s.mu.Lock()
	old := s.bconn
	s.mu.Unlock()
	backend.Quit(old)
	s.changedUser(cu, acct, uint8(charset), attrs)
	s.setBackend(bc)
	return s.changeUserOK(bc.OK)
}

// changedCharset is the collation and attributes a change user leaves: the
// client's, or the session's when it sent none.
func (s *Session) changedCharset(cu *login.ChangeUser) (uint16, []byte) {
	charset, attrs := cu.Charset, s.attrs
	if charset == 0 {
		charset = uint16(s.collation)
	}
	if cu.Attrs != nil {
		attrs = cu.Attrs
	}
	return charset, attrs
}

// changedUser records a successful change user: the new account, database,
// collation and attributes, and a session state the server has reset.
func (s *Session) changedUser(cu *login.ChangeUser, acct Account, collation uint8, attrs []byte) {
	s.collation, s.attrs = collation, attrs
	s.log.Info("changed user", "from", s.user, "to", cu.User)
	s.mu.Lock() // other goroutines read user (KILL, admin views) and account (abandon)
	s.user, s.account = cu.User, acct
	s.mu.Unlock()
	s.setDB(cu.DB)
	s.forgetSessionState()
}

// changeUserOK answers a successful change user with the backend's OK.
func (s *Session) changeUserOK(ok []byte) error {
	if err := s.c.WritePacket(ok); err != nil {
		return s.setFatal(err)
	}
	return s.setFatal(s.c.Flush())
}

// forgetSessionState drops what the proxy knows of the backend session's
// state after the server reset it (change user, refused or not).
func (s *Session) forgetSessionState() {
	s.applyAfter(afterAction{kind: afterReset}, true)
}

// changeUserFailed answers a refused change user (proxy-checked accounts):
// the kept backend session is reset as MariaDB resets its own, and the
// client gets the error with its connection still usable.
func (s *Session) changeUserFailed(code uint16, state, msg string) error {
	s.changeUserFails++
	if err := s.b.WriteCommand([]byte{mysql.COM_RESET_CONNECTION}); err != nil {
		return s.setFatal(err)
	}
	if err := s.b.Flush(); err != nil {
		return s.setFatal(err)
	}
	r := s.readBackendResult(walkDiscard)
	if s.fatal != nil {
		return s.fatal
	}
	if r.ok {
		s.forgetSessionState()
	}
	return s.writeErrFlush(code, state, msg)
}

// relayChangeUser relays COM_CHANGE_USER to the session's backend
// connection (backend-account mode; login.RelayChangeUser). On OK the
// session is the new account's, an admin when admins lists the name and
// CURRENT_USER() confirms it; on ERR the backend keeps the old one (reset)
// and so does the proxy, the connection staying usable, as directly.
func (s *Session) relayChangeUser(ctx context.Context, cu *login.ChangeUser) error {
	plugin := cu.Plugin
	if s.caps&mysql.CLIENT_PLUGIN_AUTH == 0 || plugin == "" {
		plugin = mysql.AUTH_NATIVE_PASSWORD
	}
	charset, attrs := s.changedCharset(cu)
	g := s.srv.backendHello.Load() // attributes go when the backend takes them
	_, clientTLS := s.c.Conn.(*tls.Conn)
	k := s.srv.checker()
	k.Log = s.log
	ok, reset, err := login.RelayChangeUser(s.c, s.b,
		&login.ChangeUser{User: cu.User, DB: cu.DB, Plugin: plugin, Auth: cu.Auth, Charset: charset, Attrs: attrs},
		g == nil || g.Caps&mysql.CLIENT_CONNECT_ATTRS != 0,
		&login.Exchange{Plugin: plugin, Scramble: s.scramble, ClientTLS: clientTLS, BackendTLS: s.srv.backendTLS != nil,
			Key: login.RSAKey(s.srv.clientTLS)}, k, s.c.Conn.RemoteAddr())
	var le *login.Error
	if errors.As(err, &le) {
		if reset {
			s.forgetSessionState()
		}
		return s.writeErrFlush(le.Code, le.State, le.Msg)
	}
	if err != nil {
		return s.setFatal(err)
	}
	if _, _, st, _ := wire.OKInfo(ok); len(ok) >= 7 {
		s.setStatus(st)
	}
	admin := false
	if s.srv.adminName(cu.User) {
		qctx, cancel := context.WithTimeout(ctx, s.srv.cfg.Backend.ConnectTimeout)
		rows, err := s.blocking().BackendQuery(qctx, "SELECT CURRENT_USER()")
		cancel()
		if s.fatal != nil {
			return s.fatal
		}
		admin = login.IsAccount(rows, err, cu.User)
	}
	s.changedUser(cu, s.srv.backendAccount(cu.User, admin), uint8(charset), attrs)
	return s.changeUserOK(ok)
}
