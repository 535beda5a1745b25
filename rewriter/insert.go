package rewriter

import (
	"slices"
	"strconv"
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
	t := l.next()
	if l.is(t, "PARTITION") {
		l.skipParens(l.next())
		t = l.next()
	}
	if l.isPunct(t, '(') {
		save, saveBang := l.pos, l.inBang
		u := l.next()
		l.pos, l.inBang = save, saveBang
		if l.is(u, "SELECT") || l.is(u, "WITH") || l.is(u, "TABLE") || l.is(u, "VALUES") || l.isPunct(u, '(') {
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

func quoteIdent(name string) string {
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
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
	col := quoteIdent(rule.Column)
	if ins.Setlist {
		if k := columnIndex(ins.Columns, rule.Column); k >= 0 {
			s.keyValue(ins.Lists[0][k], rule)
			return nil
		}
		if parts.setEnd < 0 {
			return errorf(CodeNotSupported, "cannot find the SET list of this INSERT into %s", name)
		}
		at := s.start + parts.setEnd
		s.builder.edits = append(s.builder.edits, edit{start: at, end: at, tag: rule.Tag, key: true, pre: " " + col + " = ", post: ","})
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
			s.builder.edits = append(s.builder.edits, edit{start: at, end: at, slot: -1, pre: "(" + col + ") "})
			for _, r := range parts.rows {
				at := s.start + r + 1
				s.builder.edits = append(s.builder.edits, edit{start: at, end: at, tag: rule.Tag, key: true})
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
			s.keyValue(row[k], rule)
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
	s.builder.edits = append(s.builder.edits, edit{start: at, end: at, slot: -1, pre: pre})
	post := ""
	if width > 0 {
		post = ", "
	}
	for _, r := range parts.rows {
		at := s.start + r + 1
		s.builder.edits = append(s.builder.edits, edit{start: at, end: at, tag: rule.Tag, key: true, post: post})
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

// keyValue fills the key value e when it is NULL, DEFAULT, 0 / '0' / FALSE
// (unless NO_AUTO_VALUE_ON_ZERO) or, when preparing, a ?. A NEXTVAL call
// there becomes the key's ID. Anything else is an explicit value and stays.
func (s *stmtPlan) keyValue(e ast.ExprNode, rule Rule) {
	pos := e.OriginTextPosition()
	if i := s.callAt(pos); i >= 0 {
		if _, ok := e.(ast.ValueExpr); ok && s.placed[i] {
			c := s.builder.calls[i]
			s.consumed[i] = true
			s.builder.edits = append(s.builder.edits, edit{start: c.start, end: c.end, tag: c.tag, key: true})
		}
		return
	}
	mode := s.builder.env.Mode
	l := lexer{sql: s.text, pos: pos, mode: mode}
	t := l.next()
	if after := l.next(); !(after.kind == tEOF || l.isPunct(after, ',') || l.isPunct(after, ')') || l.is(after, "ON")) {
		return // more than one token: an expression
	}
	form := keyOther
	switch v := e.(type) {
	case *ast.DefaultExpr:
		if v.Name == nil {
			form = keyDefault
		}
	case ast.ParamMarkerExpr:
		form = keyParam
	case ast.ValueExpr:
		form = keyLiteral
	}
	fill, param := keyFills(&l, t, form, mode, s.builder.prepared)
	if !fill {
		if form == keyLiteral {
			s.builder.noteExplicit(&l, t, rule.Tag)
		}
		return
	}
	s.builder.edits = append(s.builder.edits, edit{start: s.start + t.start, end: s.start + t.end, tag: rule.Tag, key: true,
		param: param, zeroIsNull: param && !mode.NoAutoValueOnZero})
}

// keyForm is what a key value that is a single token was read as.
type keyForm uint8

const (
	keyOther   keyForm = iota
	keyDefault         // DEFAULT (not DEFAULT(col))
	keyParam           // ?
	keyLiteral         // a literal: NULL, TRUE / FALSE, a number, a string
)

// keyFills decides whether the key value t, a single token read as form,
// gets a generated ID: NULL, DEFAULT and, unless NO_AUTO_VALUE_ON_ZERO,
// 0 / 0.0 / '0' / FALSE; when preparing, a ? (param: the bound value wins,
// see edit.param). Both the parser path and the fast path decide here.
func keyFills(l *lexer, t token, form keyForm, mode Mode, prepared bool) (fill, param bool) {
	switch form {
	case keyDefault:
		return l.is(t, "DEFAULT"), false
	case keyParam:
		return prepared && t.kind == tParam, true
	case keyLiteral:
		switch {
		case l.is(t, "NULL"):
		case mode.NoAutoValueOnZero:
			return false, false
		case l.is(t, "FALSE"):
		case t.kind == tNumber && isZeroNumber(l.text(t)):
		case t.kind == tString && unquote(l.text(t), t.kind, mode) == "0":
		default:
			return false, false
		}
		return true, false
	}
	return false, false
}

// isZeroNumber reports whether a number token's value is zero (0, 00, 0.0,
// .0, 0e5).
func isZeroNumber(text string) bool {
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case c == '0' || c == '.':
		case c == 'e' || c == 'E':
			return true
		default:
			return false
		}
	}
	return true
}

// ExplicitKey is the largest explicit integer key a plan's statement
// writes into rule tables filled from Tag: the tag must move past it, as
// AUTO_INCREMENT does.
type ExplicitKey struct {
	Tag string
	Max int64
}

// noteExplicit records the key value t (a literal the planner keeps) when
// it is a positive integer, written as a number or a string.
func (b *builder) noteExplicit(l *lexer, t token, tag string) {
	text := l.text(t)
	switch t.kind {
	case tString:
		text = unquote(text, t.kind, l.mode)
	case tNumber:
	default:
		return
	}
	v, err := strconv.ParseInt(text, 10, 64)
	if err != nil || v <= 0 {
		return
	}
	for i := range b.explicit {
		if b.explicit[i].Tag == tag {
			b.explicit[i].Max = max(b.explicit[i].Max, v)
			return
		}
	}
	b.explicit = append(b.explicit, ExplicitKey{Tag: tag, Max: v})
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
