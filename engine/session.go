package engine

import (
	"context"

	"github.com/leafproxy/leafproxy/proxy"
	"github.com/leafproxy/leafproxy/proxy/wire"
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

	// CurrentDB and SQLMode are the session facts plans depend on. They
	// do not wait on an event loop: a value that must be re-read from the
	// backend is proxy.ErrWouldBlock there, before anything is sent.
	CurrentDB(ctx context.Context) (string, error)
	SQLMode(ctx context.Context) (string, error)
	// Blocking is the only way to the calls that may wait (statements of
	// the engine's own, relays that wait for the backend's answer): on an
	// event loop (ctx marked nonblock, or the session's lane) it is
	// proxy.ErrWouldBlock, which the engine returns before it has written
	// or drawn anything, and the command runs again on the session's
	// goroutine. Nothing else in Session waits.
	Blocking(ctx context.Context) (proxy.BlockingSession, error)

	// Relaying a (rewritten) statement; the backend's answer goes to the
	// client.
	RelayQuery(sql []byte) error
	// RelayQueryOr relays sql with w watching the answer: an ERR w
	// retries has w.Redo run instead (see proxy.AnswerWatcher).
	RelayQueryOr(sql []byte, w proxy.AnswerWatcher) error
	// RelayQueryPacket and RelayQueryPacketOr are RelayQuery and
	// RelayQueryOr for a COM_QUERY packet (the command byte, then the
	// text) the engine rendered: no copy of a large text.
	RelayQueryPacket(pkt []byte) error
	RelayQueryPacketOr(pkt []byte, w proxy.AnswerWatcher) error
	// RelayExecuteOr is RelayQueryOr for an execute packet.
	RelayExecuteOr(pkt []byte, w proxy.AnswerWatcher) error
	RelayExecute(pkt []byte) error

	// Answers the engine makes itself.
	WriteOK(affected, insertID uint64, warnings uint16) error
	WriteError(code uint16, sqlState, msg string) error
	WriteResultSet(cols []string, rows [][]*int64) error
	WriteBinaryResultSet(cols []string, rows [][]*int64) error
	// WriteRows and WriteBinaryRows answer with typed columns
	// (LEAFPROXY_DECODE's row).
	WriteRows(cols []wire.Column, rows [][]wire.Value) error
	WriteBinaryRows(cols []wire.Column, rows [][]wire.Value) error
}

var _ Session = (*proxy.Session)(nil)
