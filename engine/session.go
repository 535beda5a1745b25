package engine

import (
	"context"
	"io"

	"github.com/leafproxy/leafproxy/proxy"
)

// Session is what the engine needs of a client session, as vtgate's
// engine sees its session only through a VCursor: per-session state, the
// facts plans depend on, the backend, and answers to the client. The
// proxy's *proxy.Session implements it (the Interceptor methods hand it
// over as a Session); unit tests use a fake.
type Session interface {
	// Value and SetValue hold the engine's per-session state.
	Value() any
	SetValue(v any)
	// Admin reports whether the account may run admin-only statements
	// (SETVAL).
	Admin() bool
	// CommandStart is when the command under way arrived (unix nanos),
	// for timing the proxy's own answers.
	CommandStart() int64

	// CurrentDB and SQLMode are the session facts plans depend on.
	CurrentDB(ctx context.Context) (string, error)
	SQLMode(ctx context.Context) (string, error)
	// BackendQuery runs a statement of the engine's own (information_schema
	// lookups) on the session's backend connection.
	BackendQuery(ctx context.Context, sql string) ([][]*string, error)
	// BackendExec runs a statement of the engine's own that returns no
	// rows (setting the row counters of a numbered statement).
	BackendExec(ctx context.Context, sql string) (affected, insertID uint64, err error)

	// Relaying a (rewritten) statement; the backend's answer goes to the
	// client.
	RelayQuery(sql []byte) error
	// RelayQueryRetry relays sql unless the backend's answer is an ERR
	// that retry accepts, which is dropped instead (retried: the caller
	// may send the statement again).
	RelayQueryRetry(sql []byte, retry func(code uint16, msg string) bool) (retried bool, err error)
	// RelayQueryOr relays sql, or, when the answer is an ERR that
	// r.Retry accepts, runs r.Redo instead (see proxy.Retrier).
	RelayQueryOr(sql []byte, r proxy.Retrier) error
	// RelayQueryPacket and RelayQueryPacketOr are RelayQuery and
	// RelayQueryOr for a COM_QUERY packet (the command byte, then the
	// text) the engine rendered: no copy of a large text.
	RelayQueryPacket(pkt []byte) error
	RelayQueryPacketOr(pkt []byte, r proxy.Retrier) error
	// RelayQueryWriter relays a text of n bytes that src writes in
	// pieces into the backend connection (a Large plan's: never held
	// whole); only on the session's goroutine.
	RelayQueryWriter(n int, src io.WriterTo) error
	// RelayExecuteOr is RelayQueryOr for an execute packet.
	RelayExecuteOr(pkt []byte, r proxy.Retrier) error
	// RelayQueryInsertID and RelayExecuteInsertID relay as RelayQuery
	// and RelayExecute, with insertID in an OK that has rows affected and
	// insert id 0 (only on the session's goroutine: ErrWouldBlock on a
	// loop, before anything is sent).
	RelayQueryInsertID(sql []byte, insertID uint64) error
	RelayExecuteInsertID(pkt []byte, insertID uint64) error
	// RelayQueryInsertIDs is RelayQueryInsertID for a COM_QUERY packet of
	// a multi-statement text: ids[i] for the i-th result's OK.
	RelayQueryInsertIDs(pkt []byte, ids []uint64) error
	// RelayQueryInfile is RelayQuery for a LOAD DATA LOCAL INFILE whose
	// file goes through t on its way to the backend.
	RelayQueryInfile(sql []byte, t proxy.InfileTransformer) error
	RelayPrepare(sql []byte) (proxy.PrepareResult, error)
	RelayPrepareHidden(sql []byte, hidden []int, want int) (proxy.PrepareResult, error)
	RelayExecute(pkt []byte) error
	// ExecuteResult runs an execute without relaying its answer.
	ExecuteResult(pkt []byte) (proxy.ExecResult, error)
	// BackendPrepare and BackendCloseStmt prepare and close statements of
	// the engine's own (the count of a prepared numbered statement).
	BackendPrepare(ctx context.Context, sql string) (proxy.PrepareResult, error)
	BackendCloseStmt(id uint32) error
	// RelayExecuteRetry is RelayQueryRetry for an execute packet.
	RelayExecuteRetry(pkt []byte, retry func(code uint16, msg string) bool) (retried bool, err error)

	// Answers the engine makes itself.
	WriteOK(affected, insertID uint64, warnings uint16) error
	WriteError(code uint16, sqlState, msg string) error
	WriteResultSet(cols []string, rows [][]*int64) error
	WriteBinaryResultSet(cols []string, rows [][]*int64) error
	// WriteRows and WriteBinaryRows answer with typed columns
	// (LEAFPROXY_DECODE's row).
	WriteRows(cols []proxy.Column, rows [][]proxy.Value) error
	WriteBinaryRows(cols []proxy.Column, rows [][]proxy.Value) error
}

var _ Session = (*proxy.Session)(nil)
