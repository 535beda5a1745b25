package engine

import (
	"context"
	"strings"

	"github.com/leafproxy/leafproxy/internal/sqltext"
	"github.com/leafproxy/leafproxy/proxy"
)

// ddl handles text that holds a statement that may change a table's
// columns. A lone DDL statement is relayed as it is (a DEFAULT NEXTVAL(s)
// in CREATE/ALTER TABLE is MariaDB's own sequence, not ours to evaluate);
// a multi-statement text is planned as usual. Cached column lists are
// dropped after the server has run it, so no session re-caches the old
// layout while a long ALTER runs.
func (e *Engine) ddl(ctx context.Context, s Session, sql []byte, text string) (bool, error) {
	if proxy.MustNotBlock(ctx) {
		// On an event loop the relay returns before the server has run the
		// statement, so the cache would be dropped too early. DDL is rare:
		// it runs on the session's goroutine.
		return false, proxy.ErrWouldBlock
	}
	defer e.cols.invalidate()
	defer e.natives.invalidate() // CREATE / DROP SEQUENCE
	if body := strings.TrimRight(text, " \t\r\n;"); !strings.Contains(body, ";") {
		return true, s.RelayQuery(sql)
	}
	e.cols.invalidate()
	if handled, err := e.planAndRun(ctx, s, sql, text); handled || err != nil {
		return handled, err
	}
	return true, s.RelayQuery(sql)
}

// hasDDL reports whether any statement of text (by a cheap split at every
// ';', quote-blind: a false "yes" only costs an invalidation) starts with
// a statement that can change a table's columns.
func hasDDL(text string) bool {
	if isDDL(text) {
		return true
	}
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
