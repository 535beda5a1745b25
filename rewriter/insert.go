package rewriter

import (
	"slices"
	"strings"

	"github.com/leafproxy/leafproxy/internal/sqltext"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// insertTable reads `INSERT|REPLACE [LOW_PRIORITY|DELAYED|HIGH_PRIORITY]
// [IGNORE] [INTO] [db.]table`; db is empty when unqualified.
func (l *lexer) insertTable() (db, table string, ok bool) {
	l.next() // INSERT / REPLACE
	t := l.next()
	for l.is(t, "LOW_PRIORITY") || l.is(t, "DELAYED") || l.is(t, "HIGH_PRIORITY") || l.is(t, "IGNORE") || l.is(t, "INTO") {
		t = l.next()
	}
	return l.qualifiedName(t)
}

// returningAt finds the RETURNING clause of an INSERT / REPLACE text
// (MariaDB 10.5+, where RETURNING is a reserved word and the clause comes
// last): the first unquoted RETURNING at parenthesis depth 0, not after a
// '.', outside strings and comments. It returns its offset (-1 without one)
// and whether it sits inside an executable comment.
func returningAt(text string, mode Mode) (at int, inBang bool) {
	if !hasReturning(text) {
		return -1, false // the common case: no lex
	}
	l := lexer{sql: text, mode: mode}
	depth := 0
	prev := token{kind: tEOF}
	for {
		t := l.next()
		switch {
		case t.kind == tEOF:
			return -1, false
		case l.isPunct(t, '('):
			depth++
		case l.isPunct(t, ')'):
			if depth > 0 {
				depth--
			}
		case depth == 0 && l.is(t, "RETURNING") && !l.isPunct(prev, '.'):
			return t.start, l.inBang
		}
		prev = t
	}
}

// hasReturning reports whether "returning" appears in text in any case
// (quote-blind: a false "maybe" costs a lex, never a false "no").
func hasReturning(text string) bool {
	for i := 0; i+9 <= len(text); i++ {
		if text[i]|0x20 == 'r' && text[i+1]|0x20 == 'e' && sqltext.EqualFold(text[i:i+9], "RETURNING") {
			return true
		}
	}
	return false
}

// insertParts are the offsets (in the statement) the lexer finds in an
// INSERT: the parser gives none for these.
type insertParts struct {
	colOpen int   // '(' of the column list, -1 without one
	values  int   // start of the VALUES / VALUE keyword, -1 without one
	setEnd  int   // end of the SET keyword, -1 without one
	rows    []int // '(' of each VALUES row
}

// scanInsert finds the column list, VALUES rows and SET keyword after the
// table name.
func scanInsert(text string, mode Mode) insertParts {
	p := insertParts{colOpen: -1, values: -1, setEnd: -1}
	l := lexer{sql: text, mode: mode}
	if _, _, ok := l.insertTable(); !ok {
		return p
	}
	t := l.afterPartition()
	if l.isPunct(t, '(') {
		if !l.opensColumnList(t) {
			return p
		}
		p.colOpen = t.start
		l.skipParens(t)
		t = l.next()
	}
	switch {
	case l.is(t, "VALUES") || l.is(t, "VALUE"):
		p.values = t.start
		for {
			t = l.next()
			if l.is(t, "ROW") {
				t = l.next()
			}
			if !l.isPunct(t, '(') {
				return p
			}
			p.rows = append(p.rows, t.start)
			l.skipParens(t)
			save, saveBang := l.pos, l.inBang
			if !l.isPunct(l.next(), ',') {
				l.pos, l.inBang = save, saveBang
				return p
			}
		}
	case l.is(t, "SET"):
		p.setEnd = t.end
	}
	return p
}

// afterPartition reads the token after an INSERT's table name, past a
// PARTITION (...) clause when there is one.
func (l *lexer) afterPartition() token {
	t := l.next()
	if l.is(t, "PARTITION") {
		l.skipParens(l.next())
		t = l.next()
	}
	return t
}

// opensColumnList reports whether t, the token after an INSERT's table
// name (and partitions), is the '(' of a column list, not of a
// parenthesized SELECT / WITH / TABLE / VALUES. It leaves the lexer where
// it was.
func (l *lexer) opensColumnList(t token) bool {
	if !l.isPunct(t, '(') {
		return false
	}
	save, saveBang := l.pos, l.inBang
	u := l.next()
	l.pos, l.inBang = save, saveBang
	return !(l.is(u, "SELECT") || l.is(u, "WITH") || l.is(u, "TABLE") || l.is(u, "VALUES") || l.isPunct(u, '('))
}

// firstAtTop reads tokens from t on, keeping count of parentheses, up to
// the first at depth 0 for which stop holds (a '(' or ')' is never
// offered to stop), and returns it, or the tEOF token. end is the end of
// the last token read before it (the end given when there was none).
func (l *lexer) firstAtTop(t token, end int, stop func(token) bool) (found token, lastEnd int) {
	depth := 0
	for ; t.kind != tEOF; t = l.next() {
		switch {
		case l.isPunct(t, '('):
			depth++
		case l.isPunct(t, ')'):
			depth--
		case depth == 0 && stop(t):
			return t, end
		}
		end = t.end
	}
	return t, end
}

// skipParens moves past the ')' matching open (a '(' token).
func (l *lexer) skipParens(open token) {
	if !l.isPunct(open, '(') {
		return
	}
	for depth := 1; depth > 0; {
		t := l.next()
		switch {
		case t.kind == tEOF:
			return
		case l.isPunct(t, '('):
			depth++
		case l.isPunct(t, ')'):
			depth--
		}
	}
}

func columnIndex(cols []*ast.ColumnName, name string) int {
	for i, c := range cols {
		if strings.EqualFold(c.Name.O, name) {
			return i
		}
	}
	return -1
}

// fillKey adds the edits that fill rule.Column of an INSERT / REPLACE.
func (s *stmtPlan) fillKey(ins *ast.InsertStmt, rule Rule, db, table string) error {
	name := qualify(db, table)
	if ins.Select != nil {
		if len(ins.Columns) == 0 || columnIndex(ins.Columns, rule.Column) >= 0 {
			return nil // the SELECT gives the key explicitly
		}
		return errorf(CodeNoDefault, "INSERT ... SELECT into %s does not list its key column %s, which the proxy can only fill in VALUES or SET rows; list %s and select a value for it", name, rule.Column, rule.Column)
	}
	if len(ins.Lists) == 0 {
		return nil
	}
	parts := scanInsert(s.text, s.builder.env.Mode)
	s.builder.edits = slices.Grow(s.builder.edits, len(ins.Lists)+1)
	col := sqltext.QuoteIdent(rule.Column)
	if ins.Setlist {
		if k := columnIndex(ins.Columns, rule.Column); k >= 0 {
			return s.keyValue(ins.Lists[0][k], rule, ins.IgnoreErr)
		}
		if parts.setEnd < 0 {
			return errorf(CodeNotSupported, "cannot find the SET list of this INSERT into %s", name)
		}
		at := s.start + parts.setEnd
		s.builder.edits = append(s.builder.edits, edit{start: at, end: at, tag: s.builder.text(rule.Tag), key: true, pre: s.builder.text(" " + col + " = "), post: s.builder.text(",")})
		return nil
	}

	width := len(ins.Columns)
	k := columnIndex(ins.Columns, rule.Column)
	if parts.colOpen < 0 {
		if allEmpty(ins.Lists) {
			// VALUES () means all defaults: give the key a column list.
			if parts.values < 0 || len(parts.rows) != len(ins.Lists) {
				return errorf(CodeNotSupported, "cannot find the VALUES rows of this INSERT into %s", name)
			}
			at := s.start + parts.values
			s.builder.edits = append(s.builder.edits, edit{start: at, end: at, slot: -1, pre: s.builder.text("(" + col + ") ")})
			tag := s.builder.text(rule.Tag)
			for _, r := range parts.rows {
				at := s.start + r + 1
				s.lastRow = len(s.builder.edits)
				s.builder.edits = append(s.builder.edits, edit{start: at, end: at, tag: tag, key: true})
			}
			return nil
		}
		if s.builder.env.Columns == nil {
			return errorf(CodeUnknown, "INSERT into %s without a column list: the proxy does not know the table's columns", name)
		}
		cols, err := s.builder.env.Columns(db, table)
		if err != nil {
			e := errorf(CodeUnknown, "reading the columns of %s to fill %s: %v", name, rule.Column, err)
			e.cause = err
			return e
		}
		width, k = len(cols), -1
		for i, c := range cols {
			if strings.EqualFold(c, rule.Column) {
				k = i
				break
			}
		}
		if k < 0 {
			return errorf(CodeBadField, "table %s has no column %s to fill (check the tables rule)", name, rule.Column)
		}
	}
	for i, row := range ins.Lists {
		if len(row) != width {
			// Never leave it to the server: if it reads the text otherwise
			// (a comment the parser ran and the server skips), it stores
			// the row without a generated key.
			return errorf(CodeWrongValueCount, "Column count doesn't match value count at row %d "+
				"(INSERT into %s: the proxy reads %d value(s) for %d column(s) and cannot fill its key column %s)", i+1, name, len(row), width, rule.Column)
		}
	}
	if k >= 0 {
		for _, row := range ins.Lists {
			s.lastRow = len(s.builder.edits)
			if err := s.keyValue(row[k], rule, ins.IgnoreErr); err != nil {
				return err
			}
		}
		return nil
	}
	// The key column is absent: put it first in the list and in each row.
	if len(parts.rows) != len(ins.Lists) {
		return errorf(CodeNotSupported, "cannot find the VALUES rows of this INSERT into %s", name)
	}
	pre := col
	if width > 0 {
		pre += ", "
	}
	at := s.start + parts.colOpen + 1
	s.builder.edits = append(s.builder.edits, edit{start: at, end: at, slot: -1, pre: s.builder.text(pre)})
	post, tag := uint32(0), s.builder.text(rule.Tag)
	if width > 0 {
		post = s.builder.text(", ")
	}
	for _, r := range parts.rows {
		at := s.start + r + 1
		s.lastRow = len(s.builder.edits)
		s.builder.edits = append(s.builder.edits, edit{start: at, end: at, tag: tag, key: true, post: post})
	}
	return nil
}

func allEmpty(rows [][]ast.ExprNode) bool {
	for _, r := range rows {
		if len(r) != 0 {
			return false
		}
	}
	return true
}

// keyValue fills the key value e when AUTO_INCREMENT would generate one
// there (keyFills) or, when preparing, it is a ? (decided at each
// EXECUTE). A NEXTVAL call there becomes the key's ID. A literal that is
// kept moves the tag past it; an expression is refused: the proxy cannot
// tell the key it stores.
func (s *stmtPlan) keyValue(e ast.ExprNode, rule Rule, ignore bool) error {
	pos := e.OriginTextPosition()
	if i := s.callAt(pos); i >= 0 {
		if _, ok := e.(ast.ValueExpr); ok && s.placed[i] {
			c := s.builder.calls[i]
			s.consumed[i] = true
			s.builder.edits = append(s.builder.edits, edit{start: c.start, end: c.end, tag: s.builder.text(c.tag), key: true})
		}
		return nil
	}
	mode := s.builder.env.Mode
	l := lexer{sql: s.text, pos: pos, mode: mode}
	t := l.next()
	form := keyLiteral
	switch v := e.(type) {
	case *ast.DefaultExpr:
		if v.Name == nil || strings.EqualFold(v.Name.Name.O, rule.Column) {
			form = keyDefault // DEFAULT(id) is id's DEFAULT
			if v.Name != nil {
				l.skipParens(l.next()) // past (id)
				t.end = l.pos
			}
		}
	case ast.ParamMarkerExpr:
		form = keyParam
	}
	fill, param, end, err := s.builder.keyFills(&l, s.start, t, form, rule, ignore)
	if err != nil {
		return err
	}
	if fill {
		s.builder.edits = append(s.builder.edits, edit{start: s.start + t.start, end: s.start + end, tag: s.builder.text(rule.Tag), key: true, param: param, ignore: ignore, keepZero: rule.keepZero})
	}
	return nil
}

// keyForm is how a key value was written.
type keyForm uint8

const (
	keyLiteral keyForm = iota // a literal, or (refused) an expression
	keyDefault                // DEFAULT (not DEFAULT(col))
	keyParam                  // ?
)

// keyFills decides whether the key value starting at token t (read as
// form) gets a generated ID, as AUTO_INCREMENT would: NULL; DEFAULT, and a
// value that stores as 0 ('00', 0.4, -0, 0x00, ...: KeyValue), unless
// NO_AUTO_VALUE_ON_ZERO; when preparing, a ? (param: the engine decides at
// each EXECUTE from the bound value). A kept literal is noted for the tag
// to move past. end is where the value ends in l's text. A value that is
// not a literal is error 1235. Both the parser path and the fast path
// decide here.
func (b *builder) keyFills(l *lexer, base int, t token, form keyForm, rule Rule, ignore bool) (fill, param bool, end int, err error) {
	mode := b.env.Mode
	b.keyed = true
	defer func() {
		if fill {
			b.keyFilled = true
		}
	}()
	switch form {
	case keyDefault:
		// DEFAULT of an AUTO_INCREMENT column is 0: generated, or under
		// NO_AUTO_VALUE_ON_ZERO stored as 0, which the rule table's key
		// (no default) would answer with 1364: it is written as 0.
		if mode.NoAutoValueOnZero {
			b.edits = append(b.edits, edit{start: base + t.start, end: base + t.end, slot: -1, pre: b.text("0")})
			b.lastKey, b.lastKeyAt = 0, base+t.start
		}
		return !mode.NoAutoValueOnZero, false, t.end, nil
	case keyParam:
		// A ? in a key column that is not an integer column is the
		// client's to bind: nothing the proxy could generate goes there.
		return b.prepared && t.kind == tParam && !rule.text, true, t.end, nil
	}
	start := t.start
	if rule.text {
		return b.textKey(l, t, rule)
	}
	if rule.keepZero {
		mode.NoAutoValueOnZero = true // an explicit 0 is stored, as the server stores it
	}
	v, last, ok := readKeyLiteral(l, t)
	if ok {
		after := l.next()
		ok = after.kind == tEOF || l.isPunct(after, ',') || l.isPunct(after, ')') || l.is(after, "ON") || l.is(after, "RETURNING")
	}
	if !ok {
		text := valueText(l.sql, start, l.mode)
		return false, false, 0, errorf(CodeNotSupported, "the key column %s of a rule table is given as an expression (%s): the proxy cannot tell "+
			"which key it stores, to generate one where AUTO_INCREMENT would or to move sequence %q past it; give the key as a literal, "+
			"a ? bound at execute time, NULL or DEFAULT", rule.Column, strings.TrimSpace(text), rule.Tag)
	}
	if v.Generates(mode, ignore) {
		return true, false, last.end, nil
	}
	b.lastKey, b.lastKeyAt = v.Explicit(mode, ignore), base+start
	if v.V < 0 && !v.Null && !v.Overflow && !(v.Bad && mode.Strict && !ignore) {
		b.lastKey = v.V // stored as it is: MariaDB reports it as the insert id
	}
	b.noteExplicit(rule.Tag, b.lastKey, base+start)
	return false, false, last.end, nil
}

// textKey decides a key value written in a rule table whose key column
// is not an integer column (a VARCHAR or BINARY key, Rule.text): NULL is
// filled (and refused by the caller's type check: a generated ID does not
// belong there), anything else, literal or expression, is the client's key
// and kept as written; it moves no tag.
func (b *builder) textKey(l *lexer, t token, rule Rule) (fill, param bool, end int, err error) {
	if l.is(t, "NULL") {
		save := l.pos
		if after := l.next(); after.kind == tEOF || l.isPunct(after, ',') || l.isPunct(after, ')') || l.is(after, "ON") || l.is(after, "RETURNING") {
			l.pos = save
			return true, false, t.end, nil
		}
		l.pos = save
	}
	end, depth := t.end, 0
	for tk := t; tk.kind != tEOF; tk = l.next() {
		if depth == 0 && (l.isPunct(tk, ',') || l.isPunct(tk, ')')) {
			break
		}
		if l.isPunct(tk, '(') {
			depth++
		} else if l.isPunct(tk, ')') {
			depth--
		}
		end = tk.end
	}
	b.lastKey, b.lastKeyAt = 0, 0
	return false, false, end, nil
}

// ExplicitKey is the largest explicit integer key a plan's statement
// writes into rule tables filled from Tag: the tag must move past it, as
// AUTO_INCREMENT does.
type ExplicitKey struct {
	Tag string
	Max int64
}

// noteExplicit records the explicit key v (when positive), written at
// byte at of the text, for the tag to move past.
func (b *builder) noteExplicit(tag string, v int64, at int) {
	if v <= 0 {
		return
	}
	if b.filledBefore(tag) {
		b.marks = append(b.marks, explicitMark{tag: tag, v: v, at: at})
		return
	}
	b.noteMax(tag, v)
}

// noteMax raises tag's largest explicit key to v.
func (b *builder) noteMax(tag string, v int64) {
	for i := range b.explicit {
		if b.explicit[i].Tag == tag {
			b.explicit[i].Max = max(b.explicit[i].Max, v)
			return
		}
	}
	b.explicit = append(b.explicit, ExplicitKey{Tag: tag, Max: v})
}

// filledBefore reports whether an ID of tag is generated earlier in the
// text: an explicit key after it must not lift it (AUTO_INCREMENT gives
// the rows before an explicit key keys below it). Edits come in text
// order but for a fast path that declined (it drops its edits).
func (b *builder) filledBefore(tag string) bool {
	if b.scanned > len(b.edits) {
		b.scanned, b.fillTags = 0, b.fillTags[:0]
	}
	for ; b.scanned < len(b.edits); b.scanned++ {
		if e := &b.edits[b.scanned]; e.slot >= 0 && !slices.Contains(b.fillTags, b.texts[e.tag]) {
			b.fillTags = append(b.fillTags, b.texts[e.tag])
		}
	}
	return slices.Contains(b.fillTags, tag)
}

// valueText is the value starting at start, up to the ',' or ')' that
// ends it (at most 60 bytes), for a message.
func valueText(sql string, start int, mode Mode) string {
	l := lexer{sql: sql, pos: start, mode: mode}
	end, depth := start, 0
	for t := l.next(); t.kind != tEOF; t = l.next() {
		if depth == 0 && (l.isPunct(t, ',') || l.isPunct(t, ')')) {
			break
		}
		if l.isPunct(t, '(') {
			depth++
		} else if l.isPunct(t, ')') {
			depth--
		}
		end = t.end
	}
	if end-start > 60 {
		return sql[start:start+60] + "..."
	}
	return sql[start:end]
}

// explicitMark is one explicit key in the text, in text order.
type explicitMark struct {
	tag string
	v   int64
	at  int
}

// insertRule reads the target of an INSERT / REPLACE text and looks up
// its rule; db is resolved against the current database (b.db). hide
// skips versioned executable comments as comments. An unqualified name
// that some rule could match while the current database is unknown is
// error 1235.
func (b *builder) insertRule(text string, mode Mode, hide bool) (rule Rule, ok bool, db, table string, err error) {
	l := lexer{sql: text, mode: mode, hideVersioned: hide}
	save := l
	if t := l.next(); !l.is(t, "INSERT") && !l.is(t, "REPLACE") {
		return Rule{}, false, "", "", nil
	}
	l = save
	d, t, found := l.insertTable()
	if !found {
		return Rule{}, false, "", "", nil
	}
	if d == "" {
		if b.dbUnknown && b.env.Rules.anyDBHas(t) {
			return Rule{}, false, "", t, errorf(CodeNotSupported, "cannot tell which database %s is in: an earlier USE in the same text "+
				"is one the proxy cannot follow (inside an executable comment not every server runs, built at run time, or not a plain name); "+
				"send the USE on its own or qualify the table as db.%s", t, t)
		}
		d = b.db
	}
	rule, ok = b.env.Rules.Lookup(d, t)
	return rule, ok, d, t, nil
}

func qualify(db, table string) string {
	if db == "" {
		return table
	}
	return db + "." + table
}
