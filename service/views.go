package service

import (
	"context"
	"database/sql"
	"log/slog"
	"sync"
	"time"

	"github.com/leafproxy/leafproxy/engine"
	"github.com/leafproxy/leafproxy/internal/tablematch"
	"github.com/leafproxy/leafproxy/rewriter"
)

// Views over rule tables (issue 38 item 8): AUTO_INCREMENT fills a row
// written through an updatable view, so the proxy fills it too. The views
// are read from information_schema.VIEWS on the backend, on the service's
// own connection (never a client's session): at start, after every DDL
// statement through this proxy (before the session that ran it gets its
// next command, so CREATE VIEW then INSERT through it is filled), at each
// reload, and every viewInterval for views made around the proxy. A view
// of one rule table gets a rule (rewriter.ViewRule): the view's column
// that selects the key, the table's tag; the engine adds it to the
// configured rules (Engine.SetViewRules).

// viewInterval: how often views made around the proxy are looked for.
const viewInterval = 30 * time.Second

// viewReadTimeout bounds one read of information_schema.VIEWS.
const viewReadTimeout = 5 * time.Second

type viewWatch struct {
	db   *sql.DB
	eng  *engine.Engine
	log  *slog.Logger
	mu   sync.Mutex          // one read at a time
	said map[string]struct{} // notes logged once
}

func newViewWatch(db *sql.DB, eng *engine.Engine, log *slog.Logger) *viewWatch {
	return &viewWatch{db: db, eng: eng, log: log, said: map[string]struct{}{}}
}

// refresh reads the views and gives the engine their rules; a failed read
// keeps the rules it has.
func (w *viewWatch) refresh(ctx context.Context) {
	if w == nil || w.db == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	rules := w.eng.ConfiguredRules()
	if rules == nil {
		w.eng.SetViewRules(nil)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, viewReadTimeout)
	defer cancel()
	rows, err := w.db.QueryContext(ctx, "SELECT TABLE_SCHEMA, TABLE_NAME, VIEW_DEFINITION FROM information_schema.VIEWS "+
		"WHERE TABLE_SCHEMA NOT IN ("+tablematch.SystemSchemas+")")
	if err != nil {
		w.log.Debug("could not read the backend's views; INSERTs through views keep the rules they had", "err", err)
		return
	}
	defer rows.Close()
	var found []rewriter.Rule
	for rows.Next() {
		var db, name, def string
		if err := rows.Scan(&db, &name, &def); err != nil {
			return
		}
		rule, ok, why := rewriter.ViewRule(db, name, def, rules)
		if why != "" {
			if _, done := w.said[why]; !done {
				w.said[why] = struct{}{}
				w.log.Warn(why)
			}
		}
		if ok {
			found = append(found, rule)
		}
	}
	if rows.Err() != nil {
		return
	}
	w.eng.SetViewRules(found)
}

// run refreshes every viewInterval until ctx ends.
func (w *viewWatch) run(ctx context.Context) {
	t := time.NewTicker(viewInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.refresh(ctx)
		}
	}
}
