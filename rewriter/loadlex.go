package rewriter

import (
	"strconv"
	"strings"
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

// radixString decodes hex digits or bits into bytes (left-padded with zeros).
func radixString(digits string, hex bool) (string, bool) {
	bits := 1
	if hex {
		bits = 4
	}
	if len(digits)*bits%8 != 0 {
		digits = strings.Repeat("0", (8-len(digits)*bits%8)/bits) + digits
	}
	out := make([]byte, 0, len(digits)*bits/8)
	var acc, n int
	for i := 0; i < len(digits); i++ {
		v, err := strconv.ParseUint(digits[i:i+1], 1<<bits, 8)
		if err != nil {
			return "", false
		}
		acc, n = acc<<bits|int(v), n+bits
		if n == 8 {
			out, acc, n = append(out, byte(acc)), 0, 0
		}
	}
	return string(out), true
}

// loadUnescape is a string literal's value as MariaDB reads it: doubled
// quotes, and with escapes the backslash sequences (\% and \_ keep their
// backslash).
func loadUnescape(text string, escapes bool) string {
	q := text[0]
	body := text[1:]
	if len(body) > 0 && body[len(body)-1] == q {
		body = body[:len(body)-1]
	}
	out := make([]byte, 0, len(body))
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case c == q && i+1 < len(body) && body[i+1] == q:
			i++
		case escapes && c == '\\' && i+1 < len(body):
			i++
			if body[i] == '%' || body[i] == '_' {
				out = append(out, '\\')
			}
			c = unescape(body[i])
		}
		out = append(out, c)
	}
	return string(out)
}
