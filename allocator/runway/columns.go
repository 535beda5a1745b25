package runway

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/leafproxy/leafproxy/allocator"
	"github.com/leafproxy/leafproxy/internal/tablematch"
)

// readColumns is Options.Columns' default: ReadColumns on the monitor's
// own backend connection (opened on first use).
func (m *Monitor) readColumns(ctx context.Context, cfg *allocator.Config) (map[string]Column, error) {
	if len(cfg.Rules) == 0 {
		return map[string]Column{}, nil
	}
	m.mu.Lock()
	if m.db == nil {
		db, err := sql.Open("mysql", cfg.BackendDSN)
		if err != nil {
			m.mu.Unlock()
			return nil, err
		}
		db.SetMaxOpenConns(1)
		db.SetMaxIdleConns(1)
		// A session of the proxy's own on the backend closes when idle
		// (docs/PROTOCOL.md): the columns are read at start, on reload
		// and DDL, not held open between.
		db.SetConnMaxIdleTime(allocator.BackendIdle)
		m.db = db
	}
	db := m.db
	m.mu.Unlock()
	return ReadColumns(ctx, db, cfg.Rules)
}

func (m *Monitor) closeDB() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.db != nil {
		m.db.Close()
		m.db = nil
	}
}

// ReadColumns finds, for each tag of rules, the key column with the
// smallest maximum among every table the rules naming the tag match on the
// backend db (patterns too, as the rewriter matches them, with the
// backend's lower_case_table_names), from information_schema.
func ReadColumns(ctx context.Context, db *sql.DB, rules []allocator.Rule) (map[string]Column, error) {
	c, _, err := allocator.NameCase(ctx, db)
	if err != nil {
		c = tablematch.Fold
	}
	out := map[string]Column{}
	for _, r := range rules {
		tables, err := allocator.MatchingTables(ctx, db, r, c)
		if err != nil {
			return nil, fmt.Errorf("rule %s: %w", r.Table, err)
		}
		for _, t := range tables {
			mx, ok := ColumnMax(t.Type)
			if !ok {
				continue
			}
			name := fmt.Sprintf("%s.%s.%s %s", t.DB, t.Table, t.Column, t.Type)
			cur, seen := out[r.Tag]
			if !seen {
				cur = Column{Name: name, Max: mx, Widest: mx, WidestName: name}
			}
			if mx < cur.Max {
				cur.Name, cur.Max = name, mx
			}
			if mx > cur.Widest {
				cur.Widest, cur.WidestName = mx, name
			}
			out[r.Tag] = cur
		}
	}
	return out, nil
}
