package engine

import (
	"context"

	"github.com/leafproxy/leafproxy/internal/sqltext"
	"github.com/leafproxy/leafproxy/proxy"
	"github.com/leafproxy/leafproxy/rewriter"
)

// ddl handles text that holds a statement that may change a table's
// columns. A lone DDL statement is relayed as it is (a DEFAULT NEXTVAL(s)
// in CREATE/ALTER TABLE is MariaDB's own sequence, not ours to evaluate);
// a multi-statement text is planned as usual. The cached column lists of
// the tables the text names (rewriter.DDLTargets; all of them when it
// cannot name them) are dropped after the server has run it, so no session
// re-caches the old layout while a long ALTER runs; the other tables'
// entries stay.
func (e *Engine) ddl(ctx context.Context, s Session, sql []byte, text string, c sqltext.Class) (bool, error) {
	if proxy.MustNotBlock(ctx) {
		// On an event loop the relay returns before the server has run the
		// statement, so the cache would be dropped too early. DDL is rare:
		// it runs on the session's goroutine.
		return false, proxy.ErrWouldBlock
	}
	targets, all := rewriter.DDLTargets(text) // borrows text: used only during this call
	forget := func() {
		if all {
			e.columns.invalidate()
		} else {
			e.columns.forget(targets)
		}
	}
	defer forget()
	defer e.natives.invalidate() // CREATE / DROP SEQUENCE
	defer e.ddlSeen()
	if e.onTableReset != nil && !all && c.Lone() && rewriter.EmptiesTables(text) {
		// After the statement: a table dropped or truncated starts its
		// per_table tag again (resetTables).
		defer e.resetTables(ctx, s, targets)
	}
	if c.Lone() {
		if err := e.autoIncrementStart(ctx, s, text); err != nil {
			return false, err
		}
		return true, s.RelayQuery(sql)
	}
	forget()
	if handled, err := e.planAndRun(ctx, s, sql, text, c); handled || err != nil {
		return handled, err
	}
	return true, s.RelayQuery(sql)
}

// OnDDL sets what the engine calls after a statement that may have changed
// a table's columns has run (the runway re-reads the key columns' types).
// Set it before serving.
func (e *Engine) OnDDL(f func()) { e.onDDL = f }

// ForgetColumns drops every cached column list and type (a configuration
// reload: the rules may name other tables now).
func (e *Engine) ForgetColumns() { e.columns.invalidate() }

func (e *Engine) ddlSeen() {
	if e.onDDL != nil {
		e.onDDL()
	}
}

// autoIncrementStart: `ALTER TABLE t AUTO_INCREMENT = n` (or CREATE TABLE
// with the option) on a rule table raises the rule's tag so that its next
// key is at least n, as the table's counter would be: a range reserved
// that way and filled around the proxy does not collide later. Before the
// statement is sent: a statement that fails leaves the tag raised (a gap,
// never a duplicate); the tag never moves down (AUTO_INCREMENT does not
// either, below the table's largest key).
func (e *Engine) autoIncrementStart(ctx context.Context, s Session, text string) error {
	rules := e.rules.Load()
	if rules == nil {
		return nil
	}
	mode := rewriter.Mode{}
	if st := stateOf(s); st != nil {
		mode = st.env.Mode
	}
	ref, n, ok := rewriter.AutoIncrementStart(text, mode)
	if !ok || n <= 1 || n > 1<<63-1 {
		return nil
	}
	db := ref.DB
	if db == "" {
		var err error
		if db, err = s.CurrentDB(ctx); err != nil {
			return err
		}
	}
	rule, ok := rules.Lookup(db, ref.Table)
	if !ok {
		return nil
	}
	tag := rule.Tag
	if rule.PerTable {
		tag = rewriter.PerTableTag(rule.Tag, db, ref.Table, rules.FoldsCase())
	}
	return e.advance(ctx, tag, int64(n-1))
}

// OnTableReset sets what is called with a per_table rule's tag of a table
// that DROP TABLE or TRUNCATE named through this proxy (a lone statement),
// after it ran: the tag starts again above the table's largest key (when
// it is next used), as AUTO_INCREMENT does for a re-created or truncated
// table. CREATE TABLE restarts nothing: CREATE TABLE IF NOT EXISTS of a
// table with rows must not reuse the keys of rows deleted at its top.
func (e *Engine) OnTableReset(f func(ctx context.Context, tag string)) { e.onTableReset = f }

// resetTables calls onTableReset with the per_table tag of each table of
// refs (an unqualified name in the session's current database) that a
// per_table pattern fills.
func (e *Engine) resetTables(ctx context.Context, s Session, refs []rewriter.SchemaRef) {
	rules := e.rules.Load()
	for _, r := range refs {
		if r.Table == "" {
			continue // DROP DATABASE: its tables' tags stay
		}
		db := r.DB
		if db == "" {
			cur, err := s.CurrentDB(ctx)
			if err != nil || cur == "" {
				continue
			}
			db = cur
		}
		if rule, ok := rules.Lookup(db, r.Table); ok && rule.PerTable && rule.IsPattern() {
			e.onTableReset(ctx, rewriter.PerTableTag(rule.Tag, db, r.Table, rules.FoldsCase()))
		}
	}
}
