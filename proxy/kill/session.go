package kill

import (
	"context"
	"log/slog"
)

// What carrying out a KILL needs from package proxy, which implements
// these (proxy/killglue.go) on its sessions and its server. Nothing here
// runs per command: Decide is a plain function, and a Session is handed
// to Run only for a command that is (or holds) a KILL.

// Session is the session a KILL runs on (the caller). Its methods run on
// the session's owner, as the command does; the statements of KILL's own
// (Backend*) may wait and are called only after MayWait said so.
type Session interface {
	Target   // the caller may name itself
	Registry // the sessions of the caller's server

	// MayWait is nil where the session may wait for the backend (its own
	// goroutine); on an event loop it is the error to return before
	// anything is written (the command then runs again on the goroutine).
	MayWait() error
	// Kills is the session's part of KILL beyond one command.
	Kills() *State
	// Log is the session's logger.
	Log() *slog.Logger

	// WriteErr answers the client with an ERR, flushed.
	WriteErr(code uint16, state, msg string) error
	// WriteOK answers the client with an OK of affected rows, flushed.
	WriteOK(affected uint64) error
	// Flush flushes what a relay left in the client leg's writer.
	Flush() error
	// Fatal ends the session with err when err is not nil, and returns it.
	Fatal(err error) error
	// Quit is the error that ends the session as a client's COM_QUIT does.
	Quit() error

	// RelayKill relays the KILL command pkt as written (a COM_QUERY of
	// one KILL, or COM_PROCESS_KILL), unflushed; ok: the backend answered
	// OK.
	RelayKill(pkt []byte) (ok bool, err error)
	// RelayStatement relays stmt as a COM_QUERY of the proxy's own and its
	// answer to the client, unflushed; ok: the backend answered OK.
	RelayStatement(stmt string) (ok bool, err error)
	// RelayPrepare relays the COM_STMT_PREPARE pkt and its answer; ok: the
	// backend prepared it, as statement id.
	RelayPrepare(pkt []byte) (id uint32, ok bool, err error)
	// Reclassify makes text (a multi-statement text with its KILLs
	// mapped) the command's text, as the interceptor and the backend
	// will see it.
	Reclassify(text []byte)

	// BackendQuery, BackendExec and BackendCheck run statements of KILL's
	// own on the session's backend connection; nothing reaches the
	// client, and a backend ERR is a *mysql.MyError. BackendQuery returns
	// the rows as text (nil: NULL); BackendCheck prepares sql and closes
	// it again.
	BackendQuery(ctx context.Context, sql string) ([][]*string, error)
	BackendExec(ctx context.Context, sql string) error
	BackendCheck(ctx context.Context, sql string) error
}

// Target is a session of the proxy a KILL may name.
type Target interface {
	// ClientID is the id its client was greeted with.
	ClientID() uint32
	// ThreadID is its backend connection's thread id now.
	ThreadID() uint32
	// Owner is its proxy user, the account it is logged in to the
	// backend as, and whether the proxy user is an admin (read under the
	// session's lock: a change user replaces them).
	Owner() (user, login string, admin bool)
	// CloseIfIdle closes its client connection if no command is under
	// way (the backend has been told to end its thread).
	CloseIfIdle()
}

// Registry finds the proxy's sessions: the only threads a KILL through
// the proxy may reach. A lookup that finds none returns a nil Target.
type Registry interface {
	// Lookup finds a session by the id its client was greeted with, or
	// else by its backend thread id.
	Lookup(id uint32) Target
	// LookupThread finds the session running on backend thread tid.
	LookupThread(tid uint32) Target
	// QueryThread is the backend thread running query id n, as the
	// proxy's own account sees the processlist, or 0.
	QueryThread(ctx context.Context, n uint64) uint32
}
