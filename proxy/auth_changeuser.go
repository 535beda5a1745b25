package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/login"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// maxChangeUserFailures is how many failed COM_CHANGE_USER a connection
// may make; MariaDB answers any further one with 1047 (Unknown command),
// successful ones in between notwithstanding.
const maxChangeUserFailures = 3

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
// three failures the command is refused with 1047.
func (s *Session) changeUser(ctx context.Context, p []byte) error {
	cu, err := parseChangeUser(p, s.caps)
	if err != nil {
		_ = s.writeErrFlush(mysql.ER_MALFORMED_PACKET, "HY000", "Malformed communication packet")
		return errQuit
	}
	if s.account.backendAuth && s.srv.users.Load().backendAuth {
		return s.relayChangeUser(ctx, cu)
	}
	if s.changeUserFails >= maxChangeUserFailures {
		return s.writeErrFlush(mysql.ER_UNKNOWN_COM_ERROR, "08S01", "Unknown command")
	}
	plugin := cu.plugin
	if s.caps&mysql.CLIENT_PLUGIN_AUTH == 0 {
		plugin = mysql.AUTH_NATIVE_PASSWORD
	}
	acct, err := s.srv.authenticate(s.c, cu.user, plugin, cu.auth, s.scramble, s.c.Conn.RemoteAddr())
	if err != nil {
		var le *login.Error
		if errors.As(err, &le) {
			s.log.Info("change user refused", "to", cu.user, "code", le.Code)
			return s.changeUserFailed(le.Code, le.State, le.Msg)
		}
		return s.c.Fail(err)
	}
	charset := s.collation
	if cu.charset != 0 {
		charset = uint8(cu.charset)
	}
	attrs := s.attrs
	if cu.attrs != nil {
		attrs = cu.attrs
	}
	bc, err := s.srv.connectBackend(ctx, backendLogin{
		user: acct.BackendUser, password: acct.BackendPassword, db: cu.db,
		charset: login.BackendCharset(charset), clientCaps: s.caps, clientExt: s.extCaps,
		maxPacket: 1 << 30, attrs: attrs,
	})
	if err != nil {
		le := s.srv.backendRefusal(err)
		s.log.Warn("change user: backend login failed", "to", cu.user, "code", le.Code, "err", le.Msg)
		return s.changeUserFailed(le.Code, le.State, le.Msg)
	}
	s.mu.Lock()
	old := s.bconn
	s.mu.Unlock()
	_ = old.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = old.Write([]byte{1, 0, 0, 0, mysql.COM_QUIT})
	old.Close()
	s.collation, s.attrs = charset, attrs
	s.changedUser(cu.user, acct, cu.db)
	s.setBackend(bc)
	if err := s.c.WritePacket(bc.ok); err != nil {
		return s.setFatal(err)
	}
	return s.setFatal(s.c.Flush())
}

// changedUser records a successful change user: the new account, database
// and a session state the server has reset.
func (s *Session) changedUser(user string, acct Account, db string) {
	s.log.Info("changed user", "from", s.user, "to", user)
	s.mu.Lock() // other goroutines read user (KILL, admin views) and account (abandon)
	s.user, s.account = user, acct
	s.mu.Unlock()
	s.setDB(db)
	s.forgetSessionState()
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
// connection (backend-account mode): the client answered the greeting's
// scramble, which is the backend's, so the backend checks it itself, and
// any auth switch it asks for is relayed. On OK the session is the new
// account's; on ERR the backend keeps the old one (reset) and so does the
// proxy, the connection staying usable, as directly.
func (s *Session) relayChangeUser(ctx context.Context, cu *changeUserReq) error {
	host := login.HostKey(s.c.Conn.RemoteAddr())
	if wait, blocked := s.srv.throttle.Blocked(host, time.Now()); blocked {
		le := login.HostBlocked(s.c.Conn.RemoteAddr(), wait)
		return s.writeErrFlush(le.Code, le.State, le.Msg)
	}
	plugin := cu.plugin
	if s.caps&mysql.CLIENT_PLUGIN_AUTH == 0 || plugin == "" {
		plugin = mysql.AUTH_NATIVE_PASSWORD
	}
	charset := cu.charset
	if charset == 0 {
		charset = uint16(s.collation)
	}
	attrs := s.attrs
	if cu.attrs != nil {
		attrs = cu.attrs
	}
	// Attributes go when the backend takes them.
	g := s.srv.backendHello.Load()
	pkt := login.ChangeUserPacket(cu.user, cu.auth, cu.db, charset, plugin, attrs,
		g == nil || g.Caps&mysql.CLIENT_CONNECT_ATTRS != 0)
	if err := s.b.WriteCommand(pkt); err != nil {
		return s.setFatal(err)
	}
	if err := s.b.Flush(); err != nil {
		return s.setFatal(err)
	}
	_, clientTLS := s.c.Conn.(*tls.Conn)
	ex := &login.Exchange{Plugin: plugin, Scramble: s.scramble, ClientTLS: clientTLS, BackendTLS: s.srv.backendTLS != nil,
		Key: login.RSAKey(s.srv.clientTLS)}
	ok, err := login.RelayAuth(s.c, s.b, ex)
	var me *mysql.MyError
	if errors.As(err, &me) {
		s.log.Info("change user refused by the backend", "to", cu.user, "code", me.Code)
		if me.Code != mysql.ER_UNKNOWN_COM_ERROR { // refused after too many failures: nothing was reset
			s.forgetSessionState()
		}
		if me.Code == mysql.ER_ACCESS_DENIED_ERROR || me.Code == mysql.ER_ACCESS_DENIED_NO_PASSWORD_ERROR {
			s.srv.loginFailures.Add(1)
			if d := s.srv.throttle.Fail(host, time.Now()); d > 0 {
				s.log.Warn("client host blocked after too many failed logins", "host", host, "for", d.String(), "user", cu.user)
			}
		}
		return s.writeErrFlush(me.Code, me.State, me.Message)
	}
	if err != nil {
		return s.setFatal(err)
	}
	if _, _, st, _ := wire.OKInfo(ok); len(ok) >= 7 {
		s.setStatus(st)
	}
	admin := false
	if s.srv.adminName(cu.user) {
		qctx, cancel := context.WithTimeout(ctx, s.srv.cfg.Backend.ConnectTimeout)
		rows, err := s.blocking().BackendQuery(qctx, "SELECT CURRENT_USER()")
		cancel()
		if s.fatal != nil {
			return s.fatal
		}
		if err == nil && len(rows) == 1 && len(rows[0]) == 1 && rows[0][0] != nil {
			cur := *rows[0][0]
			at := len(cur) - 1
			for at >= 0 && cur[at] != '@' {
				at--
			}
			admin = at >= 0 && cur[:at] == cu.user
		}
	}
	s.collation, s.attrs = uint8(charset), attrs
	s.changedUser(cu.user, s.srv.backendAccount(cu.user, admin), cu.db)
	if err := s.c.WritePacket(ok); err != nil {
		return s.setFatal(err)
	}
	return s.setFatal(s.c.Flush())
}
