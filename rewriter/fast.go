package rewriter

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/leafproxy/leafproxy/internal/sqltext"
)

// The fast path plans the common ORM shape of an INSERT / REPLACE on a rule
// table with the lexer alone, skipping the TiDB parser (most of a plan's
// cost). It recognises, strictly,
//
//	INSERT [IGNORE] [INTO] [db.]table (col, ...) VALUES|VALUE (row), ...
//	    [ON DUPLICATE KEY UPDATE ...] [RETURNING ...]
//	REPLACE [INTO] [db.]table (col, ...) VALUES|VALUE (row), ... [RETURNING ...]
//
// where the key column is absent from the column list, or every row's key
// value is a single token: a number, a string, NULL, TRUE / FALSE, DEFAULT
// or (PlanPrepare only) ?. The key is classified by keyFills, as on the
// parser path. Other values may be any expressions: rows and values are
// delimited by parenthesis depth and top-level commas, found by the quote-
// and comment-aware lexer. Anything else makes it decline, and the
// statement goes to the parser as before: sequence calls or the words
// NEXTVAL / LASTVAL, any executable comment (/*! or /*M!) in the text,
// SELECT / TABLE / WITH (subqueries), ? outside PlanPrepare, { }, no column
// list, PARTITION, SET, ROW(...), a row alias (VALUES ... AS new), a value
// count that is not the column count (the parser path makes it error
// 1136), an empty value, a qualified column name, unbalanced parentheses,
// an unterminated string or comment, LOW_PRIORITY / DELAYED /
// HIGH_PRIORITY, REPLACE ... ON DUPLICATE KEY UPDATE.
//
// It adds exactly the edits the parser path adds for the same statement
// (column first in the list, value first in each row, or the key values
// replaced; see fillKey and keyValue). What it gives up is the parser's
// syntax check of the other values: a statement the TiDB parser cannot
// read (so far error 1235 on a rule table) is rewritten and left to the
// server, which reads its rows and values with the same lexing rules.

// bigRows: past this many bytes of rows, fastRows sizes its edits at
// once, and Render and AssignIDs size their output exactly.
const bigRows = 64 << 10

// LargeRows: an INSERT longer than this whose key column is absent from
// its column list is planned as its rows' offsets alone (rowRun: 4 bytes
// a row, not an edit and a slot), and its IDs are one batch the renderer
// takes in order (Plan.Large). Above the engine's retry size
// (maxRetryText), so a statement the 1062 retry copies always has slots.
const LargeRows = 256 << 10

// rowRun is a large INSERT's rows whose key column is absent: each row
// gets the next ID (then post) just past its '(' at[i]; the first row's
// in LAST_INSERT_ID(...) when wrap. tag and post index the plan's texts.
type rowRun struct {
	at        []uint32
	tag, post uint32
	wrap      bool
}

// fastInsert plans sql[start:end), an INSERT / REPLACE on rule's table db.table
// with no sequence call, if it has the fast path's shape. ok false: it
// added nothing, parse the statement.
func (b *builder) fastInsert(start, end int, rule Rule, db, table string) (ok bool) {
	l := lexer{sql: b.sql[:end], pos: start, mode: b.env.Mode}
	h, ok := b.fastHead(&l, rule)
	large := ok && end-start > LargeRows && !b.prepared && h.keyIndex < 0 && len(b.edits) == 0 && b.rows == nil
	if ok && !large && end-start > bigRows && b.charge.fullRows(b.env, start, b.sql[start:end]) != nil {
		return false // its rows as edits do not fit: the parser path says so (parseCost)
	}
	if !ok || !b.fastRows(&l, h, rule, db, table, large) {
		return false
	}
	b.head = h
	return true
}

// insertHead is what the fast path reads of an INSERT before its rows, up
// to VALUES: the same for every text that starts with the same bytes, read
// in the same mode, when the byte after VALUES cannot continue the word
// (the Planner's memo, memo.go, relies on it).
type insertHead struct {
	replace, ignore       bool
	colOpen               int // the column list's '('
	columnCount, keyIndex int // the number of columns listed; the key column's index, -1: absent
	end                   int // just past VALUES / VALUE
}

// fastHead reads an INSERT / REPLACE up to VALUES with l.
func (b *builder) fastHead(l *lexer, rule Rule) (h insertHead, ok bool) {
	t := l.next()
	h.replace = l.is(t, "REPLACE")
	if !h.replace && !l.is(t, "INSERT") {
		return h, false
	}
	t = l.next()
	if !h.replace && l.is(t, "IGNORE") {
		h.ignore = true
		t = l.next()
	}
	if l.is(t, "INTO") {
		t = l.next()
	}
	if !b.fastName(l, t) {
		return h, false
	}
	t = l.next()
	if l.isPunct(t, '.') {
		if t = l.next(); !b.fastName(l, t) {
			return h, false
		}
		t = l.next()
	}

	// (col, ...): plain names only.
	if !l.isPunct(t, '(') {
		return h, false
	}
	h.colOpen = t.start
	h.keyIndex = -1
	t = l.next()
	for !l.isPunct(t, ')') || h.columnCount > 0 {
		if !b.fastName(l, t) || l.is(t, "VALUES") {
			return h, false
		}
		if h.keyIndex < 0 && strings.EqualFold(unquote(l.text(t), t.kind, l.mode), rule.Column) {
			h.keyIndex = h.columnCount
		}
		h.columnCount++
		if t = l.next(); l.isPunct(t, ')') {
			break
		}
		if !l.isPunct(t, ',') {
			return h, false
		}
		t = l.next()
	}
	if t = l.next(); !l.is(t, "VALUES") && !l.is(t, "VALUE") {
		return h, false
	}
	h.end = t.end
	return h, true
}

// fastRows plans the rows and what follows them, from l (just past
// VALUES), for the head h; on false it added nothing. large: the rows go
// into a rowRun (b.rows), not one edit each.
func (b *builder) fastRows(l *lexer, h insertHead, rule Rule, db, table string, large bool) bool {
	first, firstMark := len(b.edits), len(b.marks)
	b.edits = slices.Grow(b.edits, 2) // one row's edits, without growing
	rows := 0
	if rest := l.sql[l.pos:]; len(rest) > bigRows {
		// A many-row INSERT: room for its rows at once, rather than
		// growing by a quarter at a time (which allocated five times what
		// the edits end up taking), as many as it was charged for
		// (estimateRows).
		rows = estimateRows(rest) + 1
	}
	r := fastRow{tag: b.text(rule.Tag)}
	if h.keyIndex < 0 {
		// The key column is absent: first in the list and in each row.
		pre := b.env.Rules.quotedColumn(rule.Column, h.columnCount > 0)
		if h.columnCount > 0 {
			r.post = b.text(", ")
		}
		b.edits = append(b.edits, edit{start: h.colOpen + 1, end: h.colOpen + 1, slot: -1, pre: b.text(pre)})
	}
	switch {
	case large:
		b.rows = &rowRun{at: make([]uint32, 0, rows), tag: r.tag, post: r.post}
	case rows > 0:
		b.edits = slices.Grow(b.edits, rows)
	}
	var last token  // the statement's last token
	var lastRow int // the index of the last row's first edit
	for {
		lastRow = len(b.edits)
		end, ok := b.fastRow(l, &h, &rule, r)
		if !ok {
			return b.fastFail(first, firstMark)
		}
		last = end // the row's ')'
		save := l.pos
		if t := l.next(); !l.isPunct(t, ',') {
			l.pos = save
			break
		}
	}
	if !b.fastTail(l, h.replace, last) {
		return b.fastFail(first, firstMark)
	}
	if b.rows != nil {
		b.rows.wrap = len(b.rows.at) > 0
	}
	if len(b.edits) > first {
		b.addFilled(Filled{DB: db, Table: table, Column: rule.Column, Tag: rule.Tag})
		s := stmtPlan{builder: b, first: first, lastRow: lastRow}
		s.wrapFirstKey()
	}
	return true
}

// fastFail drops what fastRows added since edit first and explicit mark
// firstMark (the parser plans the statement again and notes them again).
func (b *builder) fastFail(first, firstMark int) bool {
	b.edits, b.rows, b.marks = b.edits[:first], nil, b.marks[:firstMark]
	return false
}

// fastRow is what every row of a fast-path INSERT shares: the tag's text
// and the text after an inserted ID.
type fastRow struct{ tag, post uint32 }

// fastRow plans one row, (value, ...), from l; end is its ')'.
func (b *builder) fastRow(l *lexer, h *insertHead, rule *Rule, r fastRow) (end token, ok bool) {
	open := l.next()
	if !l.isPunct(open, '(') {
		return end, false
	}
	n := 0
	t := l.next()
	if !l.isPunct(t, ')') {
		// Values split at commas at depth 0 (inside the row).
		for {
			// One value: to the ',' or ')' at depth 0.
			v, tokens, depth := t, 0, 0
			for depth > 0 || !l.isPunct(t, ',') && !l.isPunct(t, ')') {
				switch {
				case t.kind == tEOF || b.fastStop(l, t) || l.is(t, "VALUES") || l.is(t, "ROW"):
					return end, false
				case l.isPunct(t, '('):
					depth++
				case l.isPunct(t, ')'):
					depth--
				}
				tokens++
				t = l.next()
			}
			if tokens == 0 {
				return end, false // (a,,b), (a,)
			}
			if n == h.keyIndex && !b.fastKey(l, v, tokens, h, rule, r.tag) {
				return end, false
			}
			n++
			if l.isPunct(t, ')') {
				break
			}
			t = l.next()
		}
	}
	if n != h.columnCount {
		return end, false // the parser path makes it error 1136
	}
	if h.keyIndex < 0 {
		if b.rows != nil {
			b.rows.at = append(b.rows.at, uint32(open.end))
		} else {
			b.edits = append(b.edits, edit{start: open.end, end: open.end, tag: r.tag, key: true, post: r.post})
		}
	}
	return t, true
}

// fastKey plans a row's key value v (tokens long): false, the parser
// decides.
func (b *builder) fastKey(l *lexer, v token, tokens int, h *insertHead, rule *Rule, tag uint32) bool {
	if tokens != 1 {
		return false // an expression
	}
	form := keyLiteral
	switch {
	case l.is(v, "DEFAULT"):
		form = keyDefault
	case v.kind == tParam:
		form = keyParam
	case v.kind == tNumber || v.kind == tString || l.is(v, "NULL") || l.is(v, "TRUE") || l.is(v, "FALSE"):
	default:
		return false // a name, a keyword
	}
	kl := lexer{sql: l.sql, pos: v.end, mode: b.env.Mode}
	fill, param, _, err := b.keyFills(&kl, 0, v, form, *rule, h.ignore)
	if err != nil {
		return false // the parser path says why
	}
	if fill {
		b.edits = append(b.edits, edit{start: v.start, end: v.end, tag: tag, key: true, param: param, ignore: h.ignore, keepZero: rule.keepZero})
	}
	return true
}

// fastTail reads what may follow the rows (last: the last row's ')'):
// nothing, ON DUPLICATE KEY UPDATE ..., RETURNING ... (sent as they are).
func (b *builder) fastTail(l *lexer, replace bool, last token) bool {
	t := l.next()
	switch {
	case t.kind == tEOF:
	case l.is(t, "ON") && !replace:
		if !l.is(l.next(), "DUPLICATE") || !l.is(l.next(), "KEY") || !l.is(l.next(), "UPDATE") {
			return false
		}
		if t = l.next(); t.kind == tEOF {
			return false
		}
	case l.is(t, "RETURNING"):
		last = t
		t = l.next()
	default:
		return false // VALUES ... AS new, anything unknown
	}
	depth := 0
	for ; t.kind != tEOF; t = l.next() {
		switch {
		case b.fastStop(l, t):
			return false
		case l.isPunct(t, '('):
			depth++
		case l.isPunct(t, ')'):
			depth--
		}
		if depth < 0 {
			return false
		}
		last = t
	}
	return depth == 0 && l.endsClosed(last)
}

// fastName reports whether t is a name the fast path reads: a word or a
// non-empty quoted name.
func (b *builder) fastName(l *lexer, t token) bool {
	// A name that is not valid UTF-8 is the parser's: it may read such
	// bytes otherwise (FuzzFastPath found `orders(\x85)`, one column to the
	// lexer and none to the parser).
	return (t.kind == tWord && !b.fastStop(l, t) || t.kind == tQuoted && t.end-t.start > 2) && utf8.ValidString(l.text(t))
}

// fastStop reports a token the fast path never plans around: a ? outside
// PlanPrepare, braces (ODBC escapes), the words that start a subquery, a
// sequence function's name.
func (b *builder) fastStop(l *lexer, t token) bool {
	switch t.kind {
	case tParam:
		return !b.prepared
	case tPunct:
		c := l.sql[t.start]
		return c == '{' || c == '}'
	case tWord:
		return l.is(t, "SELECT") || l.is(t, "TABLE") || l.is(t, "WITH") || l.is(t, "NEXTVAL") || l.is(t, "LASTVAL")
	}
	return false
}

// endsClosed reports whether the text ends cleanly after last, its final
// token: no string or quoted name left open (it would run to the end) and
// no comment left open after it.
func (l *lexer) endsClosed(last token) bool {
	s := l.sql
	if last.end == len(s) {
		if q := strings.IndexAny(s[last.start:last.end], "'\"`"); q >= 0 && (last.kind == tString || last.kind == tQuoted || last.kind == tVar) {
			q += last.start
			escapes := last.kind == tString && !l.mode.NoBackslashEscapes || last.kind == tVar && s[q] != '`' && !l.mode.NoBackslashEscapes
			return quoteClosed(s[q:], escapes)
		}
		return true
	}
	// Only white space, comments and the end of an executable comment
	// follow last (the lexer found no token there); a comment left open
	// is not a clean end.
	for i := last.end; i < len(s); {
		switch c := s[i]; {
		case c == '#' || c == '-' && sqltext.LineComment(s, i):
			i = sqltext.LineEnd(s, i)
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			if sqltext.Index(s, "*/", i+2) < 0 {
				return false
			}
			i = sqltext.CommentEnd(s, i)
		default:
			i++
		}
	}
	return true
}

// quoteClosed reports whether the quoted text s (from its opening quote
// to the end) has its closing quote as its last byte.
func quoteClosed(s string, escapes bool) bool {
	end, closed := sqltext.QuotedEnd(s, 0, escapes)
	return closed && end == len(s)
}
