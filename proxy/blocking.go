package proxy

import (
	"context"
	"io"

	"github.com/leafproxy/leafproxy/internal/nonblock"
)

// BlockingSession is what a Session offers an Interceptor that may wait:
// statements of its own on the backend connection and relays that wait
// for the backend's answer before they return. Only Blocking hands it
// out, and only where waiting is allowed (the session's own goroutine), so
// an interceptor running on an event loop cannot reach a waiting call by
// forgetting a check: it gets ErrWouldBlock from Blocking before it has
// called anything.
type BlockingSession interface {
	// BackendQuery runs a statement of the interceptor's own
	// (information_schema lookups) on the session's backend connection.
	BackendQuery(ctx context.Context, sql string) ([][]*string, error)
	// BackendExec runs a statement of its own that returns no rows.
	BackendExec(ctx context.Context, sql string) (affected, insertID uint64, err error)
	// BackendPrepare and BackendCloseStmt prepare and close statements of
	// its own.
	BackendPrepare(ctx context.Context, sql string) (PrepareResult, error)
	BackendCloseStmt(id uint32) error
	// RelayQueryRetry relays sql unless the backend's answer is an ERR
	// that retry accepts, which is dropped instead (retried: the caller
	// may send the statement again); RelayExecuteRetry, for an execute.
	RelayQueryRetry(sql []byte, retry func(code uint16, msg string) bool) (retried bool, err error)
	RelayExecuteRetry(pkt []byte, retry func(code uint16, msg string) bool) (retried bool, err error)
	// RelayQueryWriter relays a text of n bytes that src writes in pieces
	// into the backend connection.
	RelayQueryWriter(n int, src io.WriterTo) error
	// RelayQueryInsertID and RelayExecuteInsertID relay as RelayQuery and
	// RelayExecute, with insertID in an OK that has rows affected and
	// insert id 0.
	RelayQueryInsertID(sql []byte, insertID uint64) error
	RelayExecuteInsertID(pkt []byte, insertID uint64) error
	// RelayQueryInsertIDs is RelayQueryInsertID for a COM_QUERY packet of
	// a multi-statement text: ids[i] for the i-th result's OK.
	RelayQueryInsertIDs(pkt []byte, ids []uint64) error
	// RelayQueryInfile is RelayQuery for a LOAD DATA LOCAL INFILE whose
	// file goes through t on its way to the backend. ok: the backend
	// answered OK, with affected rows (the client has it).
	RelayQueryInfile(sql []byte, t InfileTransformer) (affected uint64, ok bool, err error)
	// RelayPrepare and RelayPrepareHidden relay a prepare and report the
	// backend's answer.
	RelayPrepare(sql []byte) (PrepareResult, error)
	RelayPrepareHidden(sql []byte, hidden []int, want int) (PrepareResult, error)
	// ExecuteResult runs an execute without relaying its answer.
	ExecuteResult(pkt []byte) (ExecResult, error)
}

// blocking is a Session's BlockingSession: the calls that may wait are
// its methods, not the Session's, so that code holding a *Session (an
// interceptor on an event loop) cannot call one without going through
// Blocking's check. The proxy's own goroutine-only paths (KILL, change
// user) take it with s.blocking().
type blocking struct{ *Session }

var _ BlockingSession = blocking{}

// blocking is s's calls that may wait, for the proxy's own code that runs
// only on the session's goroutine.
func (s *Session) blocking() blocking { return blocking{s} }

// Blocking returns the session's calls that may wait, or ErrWouldBlock
// when the command runs on an event loop (the session's lane, or a ctx
// marked MustNotBlock): the caller returns it before writing anything and
// the command runs again on the session's goroutine.
func (s *Session) Blocking(ctx context.Context) (BlockingSession, error) {
	if nonblock.Requested(ctx) {
		return nil, ErrWouldBlock
	}
	if err := s.exec.mayWait(); err != nil {
		return nil, err
	}
	return blocking{s}, nil
}

// Statements with parameters the client does not know about: an
// interceptor may prepare a text with extra ? markers (generated values it
// binds itself at every execute) and rewrite each COM_STMT_EXECUTE, COM_STMT_SEND_LONG_DATA
// and COM_STMT_BULK_EXECUTE to carry them.

// StmtDataInterceptor is an optional extension of Interceptor for such
// statements: when the installed Interceptor implements it, the core
// consults it before relaying the two statement commands that have no
// response. Neither may write to the client.
type StmtDataInterceptor interface {
	// SendLongData sees a COM_STMT_SEND_LONG_DATA payload (command byte
	// first; pkt[1:5] statement id, pkt[5:7] parameter index), valid only
	// during the call, and may rewrite it in place (the parameter index)
	// before it is relayed.
	SendLongData(s *Session, stmtID uint32, pkt []byte)
	// StmtReset runs before a COM_STMT_RESET is relayed (the server drops
	// the statement's long data).
	StmtReset(s *Session, stmtID uint32)
}
