package proxy

import (
	"context"
	"fmt"
	"log/slog"
	"net"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/internal/nonblock"
)

// ErrWouldBlock is what an Interceptor returns (possibly wrapped) when it
// is called on an event loop (MustNotBlock) and would have to wait: for an
// ID source, a store, or the backend's answer to a statement of its own
// (BackendQuery, RelayPrepare, ExecuteResult and CurrentDB/SQLMode when
// they must re-read return it themselves). It must not have written
// anything to the client or the backend yet. The command is then run again
// from the start on the session's own goroutine, where waiting is fine.
var ErrWouldBlock = nonblock.ErrWouldBlock

// MustNotBlock reports whether an Interceptor call runs on an event loop,
// which serves many sessions at once: anything that may wait must return
// ErrWouldBlock instead (see ErrWouldBlock).
func MustNotBlock(ctx context.Context) bool { return nonblock.Requested(ctx) }

// Interceptor is consulted before the core relays a COM_QUERY,
// COM_STMT_PREPARE or COM_STMT_EXECUTE. See the package documentation for
// the contract. Embed BaseInterceptor to implement only what you need.
type Interceptor interface {
	// Query sees a COM_QUERY's text (valid only during the call). It may
	// answer itself (Write*), relay other text (RelayQuery), or return
	// handled=false to have the original relayed unchanged.
	Query(ctx context.Context, s *Session, sql []byte) (handled bool, err error)
	// Prepare sees a COM_STMT_PREPARE's text; RelayPrepare relays a
	// rewritten one and reports the backend's statement id.
	Prepare(ctx context.Context, s *Session, sql []byte) (handled bool, err error)
	// Execute sees a COM_STMT_EXECUTE: the whole payload, command byte
	// first (pkt[1:5] is stmtID), valid only during the call.
	// A stmtID of 0xFFFFFFFF (MariaDB's "last prepared") arrives resolved.
	Execute(ctx context.Context, s *Session, stmtID uint32, pkt []byte) (handled bool, err error)
	// BulkExecute sees MariaDB's COM_STMT_BULK_EXECUTE (one packet, many
	// rows of parameters); handled=false relays it unchanged.
	BulkExecute(ctx context.Context, s *Session, stmtID uint32, pkt []byte) (handled bool, err error)
	// StmtClosed runs before a COM_STMT_CLOSE is relayed.
	StmtClosed(s *Session, stmtID uint32)
	// SessionReset runs after a successful COM_RESET_CONNECTION: every
	// prepared statement and user variable of the session is gone.
	SessionReset(s *Session)
	// SessionClosed runs once when a session whose backend was connected ends.
	SessionClosed(s *Session)
}

// BaseInterceptor relays everything; embed it and override what you need.
type BaseInterceptor struct{}

func (BaseInterceptor) Query(context.Context, *Session, []byte) (bool, error)   { return false, nil }
func (BaseInterceptor) Prepare(context.Context, *Session, []byte) (bool, error) { return false, nil }
func (BaseInterceptor) Execute(context.Context, *Session, uint32, []byte) (bool, error) {
	return false, nil
}
func (BaseInterceptor) BulkExecute(context.Context, *Session, uint32, []byte) (bool, error) {
	return false, nil
}
func (BaseInterceptor) StmtClosed(*Session, uint32) {}
func (BaseInterceptor) SessionReset(*Session)       {}
func (BaseInterceptor) SessionClosed(*Session)      {}

// SQLError is an error that carries MySQL's error code and SQLSTATE; an
// interceptor returning one (or a *mysql.MyError from go-mysql) sends it to
// the client as that ERR packet. Other errors become ERR 1105 (HY000).
type SQLError interface {
	error
	Code() uint16
	SQLState() string
}

// PrepareResult is what the backend answered to a relayed prepare. OK is
// false when it answered ERR (already relayed to the client).
type PrepareResult struct {
	OK      bool
	StmtID  uint32
	Params  uint16
	Columns uint16
}

// ID is the connection id the client was greeted with: a proxy session id
// (from 2^30 up) with users configured, the backend thread id in
// backend-account mode.
func (s *Session) ID() uint32 { return s.clientID }

// ThreadID is the backend connection's thread id (CONNECTION_ID()).
func (s *Session) ThreadID() uint32 { return s.threadID.Load() }

// Admin reports whether the session's account is marked admin.
func (s *Session) Admin() bool { return s.account.Admin }

// ExtCapabilities are the MariaDB extended capability flags negotiated with
// the client (bulk execute, extended type metadata).
func (s *Session) ExtCapabilities() uint32 { return s.extCaps }

// User is the account the client logged in with.
func (s *Session) User() string { return s.user }

// RemoteAddr is the client's address (host:port, or "unix").
func (s *Session) RemoteAddr() string { return s.remote }

// Logger is the session's logger (carries the session id).
func (s *Session) Logger() *slog.Logger { return s.log }

// Capabilities are the client's capability flags (mysql.CLIENT_*).
func (s *Session) Capabilities() uint32 { return s.caps }

// Value returns the interceptor's per-session state (nil at first).
func (s *Session) Value() any { return s.value }

// SetValue stores the interceptor's per-session state.
func (s *Session) SetValue(v any) { s.value = v }

// Status is the backend's last reported status flags (SERVER_STATUS_*).
func (s *Session) Status() uint16 { return s.status }

// InTransaction reports the backend's last reported in-transaction flag.
func (s *Session) InTransaction() bool { return s.status&mysql.SERVER_STATUS_IN_TRANS != 0 }

// DB is the session's current database ("" if none): from the handshake,
// COM_INIT_DB and successful `USE x`. After a multi-statement query or a
// USE whose name the proxy cannot read it is re-read from the backend
// (SELECT DATABASE()) on the next call: a statement in the client's
// session, which it sees in its Questions and the general log, so ask only
// when an answer depends on it.
func (s *Session) DB() string {
	db, _ := s.CurrentDB(s.ctx)
	return db
}

// CurrentDB is DB with the error of the re-read: a caller that resolves
// table names must not plan against a database it could not confirm.
func (s *Session) CurrentDB(ctx context.Context) (string, error) {
	if err := s.exec.mayWait(); !s.dbOK && err != nil {
		return s.db, err
	}
	if !s.dbOK && s.b != nil && s.fatal == nil {
		rows, err := s.blocking().BackendQuery(ctx, "SELECT DATABASE()")
		if err != nil {
			return s.db, fmt.Errorf("read the current database: %w", err)
		}
		if len(rows) == 1 && len(rows[0]) == 1 {
			db := ""
			if rows[0][0] != nil {
				db = *rows[0][0]
			}
			s.setDB(db)
		}
	}
	return s.db, nil
}

// SQLMode returns the session's @@sql_mode, read from the backend on first
// use and again after a COM_QUERY starting with SET (also inside a leading
// executable comment, as mysqldump writes it) whose text names sql_mode, a
// multi-statement query or COM_RESET_CONNECTION. (A prepared SET executed
// via COM_STMT_EXECUTE is not noticed.) A read is a statement in the
// client's session (SELECT @@SESSION.sql_mode), as with DB.
func (s *Session) SQLMode(ctx context.Context) (string, error) {
	if mode, ok := s.cachedMode(); ok {
		return mode, nil
	}
	if err := s.exec.mayWait(); err != nil {
		return "", err
	}
	rows, err := s.blocking().BackendQuery(ctx, "SELECT @@SESSION.sql_mode")
	if err != nil {
		return "", err
	}
	mode := ""
	if len(rows) == 1 && len(rows[0]) == 1 && rows[0][0] != nil {
		mode = *rows[0][0]
	}
	s.cacheMode(mode)
	return mode, nil
}

// adminError is MariaDB's 1227 for an operation that needs a privilege the
// account lacks; here the proxy account's admin flag.
type adminError struct{ what string }

func (e *adminError) Error() string {
	return "Access denied; you need (at least one of) the leafproxy admin privilege(s) for this operation (" + e.what +
		"; mark the account admin: true in users)"
}
func (e *adminError) Code() uint16     { return mysql.ER_SPECIFIC_ACCESS_DENIED_ERROR }
func (e *adminError) SQLState() string { return "42000" }

// ErrNeedAdmin is the error for what an account without admin: true may not do.
func ErrNeedAdmin(what string) error { return &adminError{what: what} }

type proxyError string

func (e proxyError) Error() string { return string(e) }

func errorf(msg string) error { return proxyError("leafproxy: " + msg) }

// CommandStart is when the command under way arrived, in unix nanoseconds
// (on an event loop: when the runner took the batch of events it came
// in), for timing what an interceptor answers itself.
func (s *Session) CommandStart() int64 { return s.since.Load() }

// Who names the session's account for audit logs: user@host, the host
// being the client's address without its port ("unix" for a Unix socket).
func (s *Session) Who() string {
	host := s.remote
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return s.userName() + "@" + host
}
