package engine

import (
	"context"

	"github.com/leafproxy/leafproxy/proxy"
)

// The proxy.Interceptor methods: each hands the *proxy.Session to the
// engine as a Session, the narrow view of it the engine works through (a
// fake in unit tests).

// Query implements proxy.Interceptor (see query). The text's class is the
// one the proxy made for the command (proxy.Session.Class): the engine
// does not read the text again to learn what it is.
func (e *Engine) Query(ctx context.Context, s *proxy.Session, sql []byte) (bool, error) {
	return e.query(ctx, s, sql, s.Class())
}

// SessionReset implements proxy.Interceptor (see sessionReset).
func (e *Engine) SessionReset(s *proxy.Session) { e.sessionReset(s) }

// SessionClosed implements proxy.Interceptor (see sessionClosed).
func (e *Engine) SessionClosed(s *proxy.Session) { e.sessionClosed(s) }

// Prepare implements proxy.Interceptor (see prepare).
func (e *Engine) Prepare(ctx context.Context, s *proxy.Session, sql []byte) (bool, error) {
	return e.prepare(ctx, s, sql, s.Class())
}

// Execute implements proxy.Interceptor (see execute).
func (e *Engine) Execute(ctx context.Context, s *proxy.Session, stmtID uint32, pkt []byte) (bool, error) {
	return e.execute(ctx, s, stmtID, pkt)
}

// BulkExecute implements proxy.Interceptor (see bulkExecute).
func (e *Engine) BulkExecute(ctx context.Context, s *proxy.Session, stmtID uint32, pkt []byte) (bool, error) {
	return e.bulkExecute(ctx, s, stmtID, pkt)
}

// SendLongData implements proxy.Interceptor (see sendLongData).
func (e *Engine) SendLongData(s *proxy.Session, stmtID uint32, pkt []byte) {
	e.sendLongData(s, stmtID, pkt)
}

// StmtReset implements proxy.Interceptor (see stmtReset).
func (e *Engine) StmtReset(s *proxy.Session, stmtID uint32) { e.stmtReset(s, stmtID) }

// StmtClosed implements proxy.Interceptor (see stmtClosed).
func (e *Engine) StmtClosed(s *proxy.Session, stmtID uint32) { e.stmtClosed(s, stmtID) }
