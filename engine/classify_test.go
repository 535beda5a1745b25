package engine

import (
	"context"

	"github.com/leafproxy/leafproxy/internal/sqltext"
)

// queryText and prepareText classify sql as the proxy does, once, before
// the engine sees it (proxy.Session.Class).
func (e *Engine) queryText(ctx context.Context, s Session, sql []byte) (bool, error) {
	return e.query(ctx, s, sql, sqltext.Classify(sql))
}

func (e *Engine) prepareText(ctx context.Context, s Session, sql []byte) (bool, error) {
	return e.prepare(ctx, s, sql, sqltext.Classify(sql))
}
