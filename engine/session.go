package engine

import (
	"context"

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

	// CurrentDB and SQLMode are the session facts plans depend on.
	CurrentDB(ctx context.Context) (string, error)
	SQLMode(ctx context.Context) (string, error)
	// BackendQuery runs a statement of the engine's own (information_schema
	// lookups) on the session's backend connection.
	BackendQuery(ctx context.Context, sql string) ([][]*string, error)

	// Relaying a (rewritten) statement; the backend's answer goes to the
	// client.
	RelayQuery(sql []byte) error
	// RelayQueryInfile is RelayQuery for a LOAD DATA LOCAL INFILE whose
	// file goes through t on its way to the backend.
	RelayQueryInfile(sql []byte, t proxy.InfileTransformer) error
	RelayPrepare(sql []byte) (proxy.PrepareResult, error)
	RelayPrepareHidden(sql []byte, hidden []int, want int) (proxy.PrepareResult, error)
	RelayExecute(pkt []byte) error
	// ExecuteResult runs an execute without relaying its answer.
	ExecuteResult(pkt []byte) (proxy.ExecResult, error)

	// Answers the engine makes itself.
	WriteOK(affected, insertID uint64, warnings uint16) error
	WriteError(code uint16, sqlState, msg string) error
	WriteResultSet(cols []string, rows [][]*int64) error
	WriteBinaryResultSet(cols []string, rows [][]*int64) error
}

var _ Session = (*proxy.Session)(nil)
