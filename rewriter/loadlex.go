package rewriter

import (
	"github.com/leafproxy/leafproxy/internal/sqltext"
)

// The words of LOAD DATA that load.go and the filter (classify.go) read.

// loadHead is what LOAD DATA / LOAD XML say up to the table name.
type loadHead struct {
	xml, local bool
	db, table  string
}

// loadHead reads LOAD {DATA | XML} [LOW_PRIORITY | CONCURRENT] [LOCAL]
// INFILE 'file' [REPLACE | IGNORE] INTO TABLE [db.]table from l.pos.
func (l *lexer) loadHead() (h loadHead, ok bool) {
	l.next() // LOAD
	t := l.next()
	h.xml = l.is(t, "XML")
	if !h.xml && !l.is(t, "DATA") {
		return h, false
	}
	t = l.next()
	if l.is(t, "LOW_PRIORITY") || l.is(t, "CONCURRENT") {
		t = l.next()
	}
	if h.local = l.is(t, "LOCAL"); h.local {
		t = l.next()
	}
	if !l.is(t, "INFILE") || l.next().kind != tString {
		return h, false
	}
	if t = l.next(); l.is(t, "REPLACE") || l.is(t, "IGNORE") {
		t = l.next()
	}
	if !l.is(t, "INTO") || !l.is(l.next(), "TABLE") {
		return h, false
	}
	h.db, h.table, ok = l.tableName()
	return h, ok
}

// tableName reads [db.]table.
func (l *lexer) tableName() (db, table string, ok bool) { return l.qualifiedName(l.next()) }

// qualifiedName reads [db.]table starting at t, the token already read.
func (l *lexer) qualifiedName(t token) (db, table string, ok bool) {
	if t.kind != tWord && t.kind != tQuoted {
		return "", "", false
	}
	table = unquote(l.text(t), t.kind, l.mode)
	save, saveBang := l.pos, l.inBang
	if l.isPunct(l.next(), '.') {
		t = l.next()
		if t.kind != tWord && t.kind != tQuoted {
			return "", "", false
		}
		return table, unquote(l.text(t), t.kind, l.mode), true
	}
	l.pos, l.inBang = save, saveBang
	return "", table, true
}

// textString reads MariaDB's text_string at t when it is one token: a
// string literal as the server reads it in the session's sql_mode, or a
// hex / bit number (0x2c, 0b0101).
func (l *lexer) textString(t token) (string, bool) {
	switch w := l.text(t); {
	case t.kind == tString:
		return loadUnescape(w, !l.mode.NoBackslashEscapes), true
	case t.kind == tWord && len(w) > 2 && w[0] == '0' && (w[1] == 'x' || w[1] == 'b'):
		return radixString(w[2:], w[1] == 'x')
	}
	return "", false
}

// radixString decodes hex digits or bits into bytes (left-padded with
// zeros), sqltext.AppendRadix; ok false for any other byte.
func radixString(digits string, hex bool) (string, bool) {
	b, ok := sqltext.AppendRadix(nil, digits, hex)
	if !ok {
		return "", false
	}
	return string(b), true
}

// loadUnescape is a string literal's value as MariaDB reads it: doubled
// quotes, and with escapes the backslash sequences (\% and \_ keep their
// backslash), sqltext.AppendUnquoted.
func loadUnescape(text string, escapes bool) string {
	esc := sqltext.NoEscapes
	if escapes {
		esc = sqltext.BackslashLike
	}
	return string(sqltext.AppendUnquoted(nil, text, esc))
}
