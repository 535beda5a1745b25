package engine

import (
	"context"
	"fmt"

	"github.com/leafproxy/leafproxy/internal/sqltext"
	"github.com/leafproxy/leafproxy/rewriter"
)

// The session's LAST_INSERT_ID(), as AUTO_INCREMENT would leave it.
//
// A filled statement of one text (or an EXECUTE) carries its keys as plain
// values (rewriter.Env.ReportKeys), so the server leaves LAST_INSERT_ID()
// alone, and the statement's own reads of it see the value from before it,
// as with AUTO_INCREMENT. The engine reports the first generated key in
// the OK packet (dupRetry.OnOK) and keeps it as the session's value in
// state.lastID: the server's is then stale. Before a statement that may
// read the value or that may change it on the server, the engine makes the
// server's value the session's (syncLastID: DO LAST_INSERT_ID(<key>), one
// round trip, on the session's goroutine). A stream of filled INSERTs and
// the statements that cannot read it (SELECT, UPDATE, DELETE, COMMIT, ...
// without the words LAST_INSERT_ID or IDENTITY) costs nothing more.
//
// What may read or change it: a text naming LAST_INSERT_ID or IDENTITY
// (@@identity, @@last_insert_id), a multi-statement text, CALL, EXECUTE,
// an INSERT / REPLACE / LOAD that the engine does not fill with a
// ReportsKey plan (into a table without a rule, which may have an
// AUTO_INCREMENT of its own; INSERT ... SELECT; LOAD DATA), and an
// EXECUTE of a statement the engine did not plan once the session has
// prepared such a statement that may (noteUnplanned). Not seen: a stored function,
// trigger or view that reads LAST_INSERT_ID() from a statement that names
// none of these (README, Differences from AUTO_INCREMENT).

// readsLastID reports whether text names LAST_INSERT_ID or IDENTITY, in
// any case (a read, a LAST_INSERT_ID(expr) that sets it, @@identity).
func readsLastID(text string) bool {
	// One pass for both words (it runs before every statement while the
	// session's value is the proxy's): only an L or an I is looked at.
	for i := 0; i < len(text); i++ {
		switch text[i] | 0x20 {
		case 'l':
			if sqltext.FoldAt(text, i, "last_insert_id") {
				return true
			}
		case 'i':
			if sqltext.FoldAt(text, i, "identity") {
				return true
			}
		}
	}
	return false
}

// startsWithCall: text's first word is CALL.
func startsWithCall(text string) bool {
	i := 0
	for i < len(text) && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r' || text[i] == '(') {
		i++
	}
	return sqltext.HasKeyword(text[i:], "CALL")
}

// queryNeedsSync: a COM_QUERY text of class c may read or change the
// session's LAST_INSERT_ID() before the engine has planned it.
func queryNeedsSync(text string, c sqltext.Class) bool {
	if c.Multi() || readsLastID(text) || startsWithCall(text) {
		return true
	}
	switch c.Word() {
	case sqltext.Execute:
		return true
	}
	return false
}

// writesLastID: the INSERT / REPLACE / LOAD of class c may set the
// server's LAST_INSERT_ID() itself (an AUTO_INCREMENT of a table without a
// rule) unless plan says the engine fills it with plain keys or it gives
// every key of a rule table.
func writesLastID(c sqltext.Class, plan *rewriter.Plan) bool {
	switch c.Word() {
	case sqltext.Insert, sqltext.Replace, sqltext.Load:
	default:
		return plan != nil && (plan.Kind == rewriter.Numbered || plan.Kind == rewriter.LoadData)
	}
	if plan == nil {
		return true
	}
	switch plan.Kind {
	case rewriter.Rewrite:
		return !plan.ReportsKey
	case rewriter.PassThrough:
		return plan.LastKey == 0 && plan.Explicit == nil && plan.StmtKeys == nil
	case rewriter.Sequence:
		return false
	}
	return true
}

// syncLastID makes the server's LAST_INSERT_ID() the session's, when a
// filled statement left it stale. On an event loop it returns
// ErrWouldBlock before anything is sent (the command runs on the session's
// goroutine).
func (e *Engine) syncLastID(ctx context.Context, s Session, st *state) error {
	if st == nil || st.lastID == 0 {
		return nil
	}
	bs, err := s.Blocking(ctx)
	if err != nil {
		return err
	}
	if _, _, err := bs.BackendExec(ctx, rewriter.SetLastInsertID(st.lastID)); err != nil {
		return fmt.Errorf("set LAST_INSERT_ID() to the last generated key %d: %w", st.lastID, err)
	}
	st.lastID = 0
	return nil
}

// stateOf is the session's engine state, if it has one (no state: no
// filled statement yet, nothing to sync).
func stateOf(s Session) *state {
	st, _ := s.Value().(*state)
	return st
}

// reportOK gives the OK packet of a ReportsKey statement its insert id:
// the first generated key when a row was written (the session's
// LAST_INSERT_ID() from now on), else the server's (0, or a client's
// LAST_INSERT_ID(expr), as an ON DUPLICATE KEY UPDATE id =
// LAST_INSERT_ID(id) of an existing row sets it). A one-row ON DUPLICATE
// KEY UPDATE inserted nothing when 2 rows were affected (updated) or when
// the server reports an insert id other than the key (its update clause
// called LAST_INSERT_ID(expr)), which tells an unchanged row from an
// inserted one under CLIENT_FOUND_ROWS, where both count 1.
func (d *dupRetry) reportOK(affected, insertID uint64) uint64 {
	if !d.plain || d.firstID <= 0 || affected == 0 {
		return insertID
	}
	if d.odku && len(d.keys) == 1 && (affected > 1 || insertID != 0 && insertID != uint64(d.firstID)) {
		return insertID
	}
	d.session.lastID = d.firstID
	return uint64(d.firstID)
}

// OnRows: a ReportsKey statement with RETURNING wrote its rows. It does
// not block.
func (d *dupRetry) OnRows() {
	if d.plain && d.firstID > 0 {
		d.session.lastID = d.firstID
	}
}

// noteUnplanned remembers that the session prepared a statement the
// engine does not plan (its EXECUTEs reach the engine with an id it does
// not know) that may read or change LAST_INSERT_ID(): from then on every
// EXECUTE of an unknown statement is preceded by syncLastID. A session
// whose unplanned statements are all plain SELECTs, UPDATEs, DELETEs...
// executes them without it.
func (e *Engine) noteUnplanned(s Session, text string, c sqltext.Class, plan *rewriter.Plan) {
	if queryNeedsSync(text, c) || writesLastID(c, plan) {
		e.state(s).unplannedReads = true
	}
}

// executeNeedsSync: an EXECUTE of p (nil: a statement the engine did not
// plan) may read or change the session's LAST_INSERT_ID().
func (st *state) executeNeedsSync(p *prepared) bool {
	if p == nil {
		return st.unplannedReads
	}
	if p.readsLast {
		return true
	}
	switch p.plan.Kind {
	case rewriter.Rewrite:
		return !p.plan.ReportsKey
	case rewriter.PassThrough, rewriter.Sequence:
		return false
	}
	return true
}
