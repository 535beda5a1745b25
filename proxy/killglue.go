package proxy

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/internal/killsql"
	"github.com/leafproxy/leafproxy/internal/sqltext"
	"github.com/leafproxy/leafproxy/proxy/backend"
	"github.com/leafproxy/leafproxy/proxy/kill"
	"github.com/leafproxy/leafproxy/proxy/relay"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// KILL is package proxy/kill's: which command is a KILL and which way it
// is carried out (kill.Decide), and carrying it out (kill.Run) on what
// this file gives it of a session and its server. The command paths
// (dispatch.go) ask decideKill once per command and hand a KILL to
// runKill; nothing else of KILL runs per command.

// decideKill is kill.Decide for the command pkt of this session (c: the
// class of a COM_QUERY's or COM_STMT_PREPARE's text; prepared: for an
// execute, the KILL the client prepared as its statement, killStmtFor).
// Small enough to inline: the command paths call kill.Decide directly.
func (s *Session) decideKill(pkt []byte, c sqltext.Class, prepared *kill.Stmt) kill.Decision {
	return kill.Decide(pkt, c, s.account.backendAuth, s.caps&mysql.CLIENT_MULTI_STATEMENTS != 0, prepared)
}

// runKill is kill.Run on this session: done says the command has been
// answered; otherwise it goes on as next.
func (s *Session) runKill(ctx context.Context, pkt []byte, d kill.Decision) (next []byte, done bool, err error) {
	return kill.Run(ctx, (*killSession)(s), pkt, d)
}

// killStmtFor is the prepared KILL a statement command names, or nil.
func (s *Session) killStmtFor(pkt []byte) *kill.Stmt {
	if !s.kills.Has() || len(pkt) < 5 {
		return nil
	}
	return s.kills.Lookup(s.stmtID(pkt))
}

// relayedErr notes a relayed ERR packet (head: its first bytes): counted,
// and a 1927 marks the session's backend connection as about to end.
func (s *Session) relayedErr(head []byte) {
	s.countRelayedErr()
	s.countErrPacket(head)
	s.kills.NoteErr(head)
}

// endIfKilled ends a session whose last response was 1927 once its backend
// connection has ended, so its client sees the connection close as it
// would directly.
func (s *Session) endIfKilled() bool {
	if !s.kills.TakeConnKilled() {
		return false
	}
	if s.b.Buffered() > 0 {
		return false
	}
	_ = s.b.Conn.SetReadDeadline(time.Now().Add(kill.KilledWait))
	err := s.b.Peek()
	_ = s.b.Conn.SetReadDeadline(time.Time{})
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		return false // still open (or it sent more: the idle watch reads it)
	}
	s.log.Info("session closed: its backend connection was killed")
	s.ending = endClose
	return true
}

// killSession is a Session as package kill sees it (kill.Session and
// kill.Target): a type of its own, so that the methods KILL needs are not
// the exported Session's (an interceptor's API). A *Session converts to
// it and back at no cost.
type killSession Session

var _ kill.Session = (*killSession)(nil)

func (k *killSession) s() *Session { return (*Session)(k) }

// ClientID is the id the session's client was greeted with.
func (k *killSession) ClientID() uint32 { return k.clientID }

// ThreadID is the session's backend thread id now.
func (k *killSession) ThreadID() uint32 { return k.threadID.Load() }

// Owner is the session's proxy user, its backend login and whether it is
// an admin, under its lock (a change user replaces them).
func (k *killSession) Owner() (user, login string, admin bool) {
	k.mu.Lock()
	user, login, admin = k.user, k.account.backendLogin(k.user), k.account.Admin
	k.mu.Unlock()
	return user, login, admin
}

// CloseIfIdle closes the session's client connection if it is idle.
func (k *killSession) CloseIfIdle() { k.closeIfIdle() }

// Lookup finds a session of the server by greeting id, else by thread id.
func (k *killSession) Lookup(id uint32) kill.Target {
	if t := k.srv.lookupSession(id); t != nil {
		return (*killSession)(t)
	}
	return nil
}

// LookupThread finds the session of the server on backend thread tid.
func (k *killSession) LookupThread(tid uint32) kill.Target {
	if t := k.srv.lookupThread(tid); t != nil {
		return (*killSession)(t)
	}
	return nil
}

// QueryThread is the backend thread running query id n, or 0.
func (k *killSession) QueryThread(ctx context.Context, n uint64) uint32 {
	return k.srv.queryThread(ctx, n)
}

// The rest of kill.Session (its doc says what each is): the session's own
// calls, as the KILL files called them when they were package proxy's.
func (k *killSession) MayWait() error                { return k.exec.mayWait() }
func (k *killSession) Kills() *kill.State            { return &k.kills }
func (k *killSession) Log() *slog.Logger             { return k.log }
func (k *killSession) WriteOK(affected uint64) error { return k.s().WriteOK(affected, 0, 0) }
func (k *killSession) Flush() error                  { return k.setFatal(k.c.Flush()) }
func (k *killSession) Fatal(err error) error         { return k.setFatal(err) }
func (k *killSession) Quit() error                   { return errQuit }
func (k *killSession) Reclassify(text []byte)        { k.beginClass(text) }
func (k *killSession) WriteErr(code uint16, state, msg string) error {
	return k.s().writeErrFlush(code, state, msg)
}

// RelayKill relays a KILL as written: COM_PROCESS_KILL answered with OK
// or ERR, a COM_QUERY as any query (its after-effects applied).
func (k *killSession) RelayKill(pkt []byte) (bool, error) {
	s := k.s()
	if pkt[0] == mysql.COM_PROCESS_KILL {
		return s.exec.relay(s, pkt, respSimple, afterAction{})
	}
	return s.exec.relay(s, pkt, respResult, s.queryAfter(pkt))
}

// RelayStatement relays stmt as a COM_QUERY of the proxy's own, built in
// the session's out buffer.
func (k *killSession) RelayStatement(stmt string) (bool, error) {
	s := k.s()
	s.out = append(append(s.out[:0], mysql.COM_QUERY), stmt...)
	ok, err := s.exec.relay(s, s.out, respResult, afterAction{})
	s.trimOut()
	return ok, err
}

// RelayPrepare relays a COM_STMT_PREPARE and says what the backend made
// of it.
func (k *killSession) RelayPrepare(pkt []byte) (uint32, bool, error) {
	res, err := k.s().relayPrepare(pkt)
	return res.StmtID, res.OK, err
}

func (k *killSession) BackendQuery(ctx context.Context, sql string) ([][]*string, error) {
	return k.s().blocking().BackendQuery(ctx, sql)
}

func (k *killSession) BackendExec(ctx context.Context, sql string) error {
	_, _, err := k.s().blocking().BackendExec(ctx, sql)
	return err
}

// BackendCheck prepares sql on the backend and closes it again.
func (k *killSession) BackendCheck(ctx context.Context, sql string) error {
	res, err := k.s().blocking().BackendPrepare(ctx, sql)
	if err != nil {
		return err
	}
	return k.s().blocking().BackendCloseStmt(res.StmtID)
}

// backendLogin is the account name a session of proxy user user is logged
// in to the backend as: the client's own name when the backend
// authenticated it, else BackendUser.
func (a Account) backendLogin(user string) string {
	if a.backendAuth {
		return user
	}
	return a.BackendUser
}

// lookupSession finds a session by proxy id, or else by backend thread id
// (the greeting's id in backend-account mode).
func (srv *Server) lookupSession(id uint32) *Session {
	if id >= sessionIDBase {
		srv.mu.Lock()
		sess := srv.sessions[id]
		srv.mu.Unlock()
		if sess != nil && sess.clientID == id { // not a backend-account session (greeted with its thread id)
			return sess
		}
	}
	return srv.lookupThread(id)
}

// lookupThread finds the session running on a backend thread.
func (srv *Server) lookupThread(tid uint32) *Session {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for _, sess := range srv.sessions {
		if sess.threadID.Load() == tid {
			return sess
		}
	}
	return nil
}

// queryThread looks query id n up in the backend's processlist as the
// proxy's own account (backend.user), on a connection of its own: the
// thread running it, or 0.
func (srv *Server) queryThread(ctx context.Context, n uint64) uint32 {
	timeout := srv.cfg.Backend.ConnectTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	bc, err := srv.connectBackend(ctx, backend.Login{User: srv.cfg.Backend.User, Password: srv.cfg.Backend.Password, Charset: 45})
	if err != nil {
		return 0
	}
	defer bc.Conn.Close()
	_ = bc.Conn.SetDeadline(time.Now().Add(timeout))
	l := wire.NewLeg("backend", bc.Conn, 4<<10, 4<<10)
	if l.WriteCommand(append([]byte{mysql.COM_QUERY}, killsql.ThreadOfQuery(n)...)) != nil || l.Flush() != nil {
		return 0
	}
	var tid uint32
	// column count, one column definition, EOF, rows, EOF (no DEPRECATE_EOF on this leg)
	for i := 0; ; i++ {
		p, err := l.ReadPacket(nil, 64<<10)
		switch {
		case err != nil || wire.IsErr(p) || i == 0 && (len(p) == 0 || p[0] == 0):
			return 0
		case i == 2 && !wire.IsEOF(p, len(p)):
			return 0
		case i > 2 && wire.IsEOF(p, len(p)):
			_, _ = bc.Conn.Write(comQuit[:])
			return tid
		case i > 2:
			if row, err := relay.TextRow(p, 1); err == nil && row[0] != nil {
				if v, err := strconv.ParseUint(*row[0], 10, 32); err == nil {
					tid = uint32(v)
				}
			}
		}
	}
}
