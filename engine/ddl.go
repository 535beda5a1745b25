package engine

import (
	"context"
	"strings"

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
func (e *Engine) ddl(ctx context.Context, s Session, sql []byte, text string) (bool, error) {
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
	if loneStatement(text) {
		return true, s.RelayQuery(sql)
	}
	forget()
	if handled, err := e.planAndRun(ctx, s, sql, text); handled || err != nil {
		return handled, err
	}
	return true, s.RelayQuery(sql)
}

// loneStatement reports whether text holds one statement (a trailing ';'
// and comments after it aside) under both backslash rules.
func loneStatement(text string) bool {
	for _, escapes := range [2]bool{true, false} {
		end := sqltext.StatementEnd(text, 0, escapes)
		for end < len(text) && text[end] == ';' {
			end = sqltext.SkipSpace(text, end+1)
		}
		if end < len(text) {
			return false
		}
	}
	return true
}

// hasDDL reports whether any statement of text starts with a statement
// that can change a table's columns. It runs on every query, so the common
// text, one statement that is not DDL, costs the first word and one
// IndexByte, and a text whose every ';' is followed by no DDL word costs a
// quote-blind look after each ';' (every statement boundary is a ';', so
// this finds no DDL only where there is none). Where it finds one, the
// statement boundaries are confirmed with internal/sqltext's rules (a ';' in
// quoted text or a comment is none) under both backslash rules, as the
// session's NO_BACKSLASH_ESCAPES is not known here: a false "yes" only costs
// the DDL path and the invalidation of the tables the text names.
func hasDDL(text string) bool {
	if isDDL(text) {
		return true
	}
	if !ddlAfterSemicolon(text) {
		return false
	}
	for _, escapes := range [2]bool{true, false} {
		for end := sqltext.StatementEnd(text, 0, escapes); end < len(text); end = sqltext.StatementEnd(text, end+1, escapes) {
			if isDDL(text[end+1:]) {
				return true
			}
		}
		if strings.IndexByte(text, '\\') < 0 {
			break // both rules split the same way
		}
	}
	return false
}

// ddlAfterSemicolon reports whether isDDL holds after any ';' of text.
func ddlAfterSemicolon(text string) bool {
	for i := strings.IndexByte(text, ';'); i >= 0; {
		if isDDL(text[i+1:]) {
			return true
		}
		j := strings.IndexByte(text[i+1:], ';')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return false
}

// isDDL reports whether text starts (past white space, comments, the
// openers of executable comments and opening parentheses; the comment
// rules are internal/sqltext's) with a statement that can change a table's
// columns, so cached column lists are dropped.
func isDDL(text string) bool {
	i := sqltext.SkipToCode(text, 0)
	for i < len(text) && text[i] == '(' {
		i = sqltext.SkipToCode(text, i+1)
	}
	w := text[i:]
	for _, kw := range [...]string{"ALTER", "DROP", "CREATE", "RENAME", "TRUNCATE"} {
		if sqltext.HasKeyword(w, kw) {
			return true
		}
	}
	return false
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
