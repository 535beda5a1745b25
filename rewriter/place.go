package rewriter

import (
	"sort"

	"github.com/leafproxy/leafproxy/internal/sqltext"
	"github.com/pingcap/tidb/pkg/parser/ast"
	_ "github.com/pingcap/tidb/pkg/parser/test_driver" // value expressions for the parser
)

// stmtPlan plans one parsed statement.
type stmtPlan struct {
	builder *builder
	start   int    // offset of text in the whole sql
	text    string // the statement's original text
	// per call of builder.calls: placed where an ID can go; consumed as a key
	// value
	placed   []bool
	consumed []bool
	first    int // index into builder.edits of this statement's first edit
	// lastRow: index into builder.edits of the first edit of the
	// statement's last VALUES row (0: the statement has one row)
	lastRow int
	// itemLex reads the select items nameItem names, in order, so that a
	// list of many items is lexed once, not once per item.
	itemLex *lexer
}

// callAt returns the index of the call starting at statement offset pos.
func (s *stmtPlan) callAt(pos int) int {
	calls := s.builder.calls
	abs := s.start + pos
	i := sort.Search(len(calls), func(i int) bool { return calls[i].start >= abs })
	if i < len(calls) && calls[i].start == abs {
		return i
	}
	return -1
}

// placeCalls marks the calls that sit where one value per occurrence is
// right: INSERT rows and SET lists, ON DUPLICATE KEY UPDATE of a one-row
// INSERT, UPDATE ... SET, SET @v = ..., and the select list of a SELECT
// without FROM (whose items keep their names, see nameItem). Subqueries
// are never such a place.
func (s *stmtPlan) placeCalls(stmt ast.StmtNode) {
	if len(s.builder.calls) == 0 {
		return
	}
	s.consumed = make([]bool, len(s.builder.calls))
	v := placer{s: s}
	switch n := stmt.(type) {
	case *ast.InsertStmt:
		for _, row := range n.Lists {
			for _, e := range row {
				e.Accept(&v)
			}
		}
		if len(n.Lists) == 1 && n.Select == nil {
			for _, a := range n.OnDuplicate {
				a.Expr.Accept(&v)
			}
		}
	case *ast.UpdateStmt:
		for _, a := range n.List {
			a.Expr.Accept(&v)
		}
	case *ast.SetStmt:
		for _, a := range n.Variables {
			if a.Value != nil {
				a.Value.Accept(&v)
			}
		}
	case *ast.SelectStmt:
		if n.From != nil || n.Where != nil || n.GroupBy != nil || n.Having != nil || n.WindowSpecs != nil || n.Fields == nil {
			return
		}
		for i, f := range n.Fields.Fields {
			if f.Expr == nil {
				continue
			}
			f.Expr.Accept(&v)
			if f.AsName.O == "" {
				limit := s.start + len(s.text)
				if i+1 < len(n.Fields.Fields) {
					limit = s.start + n.Fields.Fields[i+1].Offset
				}
				s.nameItem(s.start+f.Offset, limit)
			}
		}
	}
}

// nameItem keeps the name MariaDB gives the select item starting at
// offset from (which has no alias) when the item holds a call: the item's
// text exactly as written, which the server would no longer see once the
// call is a number (`SELECT NEXTVAL('t') + 1` must not come back as a
// column named `1001 + 1`). The item is aliased with that text; the
// server shortens a long alias as it shortens a long item's text.
func (s *stmtPlan) nameItem(from, limit int) {
	calls := s.builder.calls
	i := sort.Search(len(calls), func(i int) bool { return calls[i].start >= from })
	if i == len(calls) || calls[i].start >= limit {
		return // no call before the next item: the server names it as written
	}
	end, aliased := s.itemEnd(from)
	if aliased {
		return // an empty alias, which the parser reports as none
	}
	if calls[i].start >= end {
		return // no call: the server names it as written
	}
	name := s.builder.sql[from:end]
	s.builder.edits = append(s.builder.edits, edit{start: end, end: end, slot: -1, pre: s.builder.text(" AS " + sqltext.QuoteIdent(name))})
}

// itemEnd returns where the select item starting at offset from ends: at
// the end of its last token before a ',' or ')' outside its parentheses,
// a word that ends the select list (FROM, INTO, LIMIT, ...) or the end of
// the statement. Sequence calls are read whole (NEXT VALUE FOR t).
// aliased: the item ends with an alias after all, an empty one: AS and
// an empty quoted name or string, or an empty quoted name or string after
// an operand.
func (s *stmtPlan) itemEnd(from int) (end int, aliased bool) {
	// Lex from the statement's start, so that the lexer knows whether the
	// item lies inside an executable comment; items come in order, so the
	// lexer goes on from the last item's end.
	l := s.itemLex
	if l == nil || l.pos > from {
		l = &lexer{sql: s.builder.sql[:s.start+len(s.text)], pos: s.start, mode: s.builder.env.Mode}
		s.itemLex = l
	}
	t := l.next()
	for t.kind != tEOF && t.start < from {
		t = l.next()
	}
	end = from
	depth := 0
	var prev, last, beforeLast token // the last two tokens at depth 0
	for ; t.kind != tEOF; t = l.next() {
		if c, ok := l.call(t, prev); ok {
			end = c.end
			prev = token{kind: tWord, start: c.start, end: c.end}
			if depth == 0 {
				beforeLast, last = last, prev
			}
			continue
		}
		switch {
		case l.isPunct(t, '('):
			depth++
		case l.isPunct(t, ')'):
			if depth == 0 {
				return end, emptyAlias(l, beforeLast, last)
			}
			depth--
		case depth > 0:
		case l.isPunct(t, ',') || l.isPunct(t, ';') || t.kind == tWord && l.endsSelectList(t):
			return end, l.is(t, "AS") || emptyAlias(l, beforeLast, last)
		}
		end, prev = t.end, t
		if depth == 0 || l.isPunct(t, '(') && depth == 1 {
			beforeLast, last = last, t
		}
	}
	return end, emptyAlias(l, beforeLast, last)
}

// emptyAlias reports an item whose last token is an empty quoted name or
// string after an operand, not after an operator: MariaDB takes it as an
// empty alias.
func emptyAlias(l *lexer, before, last token) bool {
	if (last.kind != tQuoted && last.kind != tString) || last.end-last.start != 2 {
		return false
	}
	return before.kind != tPunct || l.isPunct(before, ')')
}

// endsSelectList reports a word that cannot continue a select item without
// an alias: a clause keyword (FROM, INTO, ...) or AS.
func (l *lexer) endsSelectList(t token) bool {
	for _, w := range notAlias {
		if l.is(t, w) {
			return true
		}
	}
	return l.is(t, "PROCEDURE")
}

// placer marks calls found in an expression, not entering subqueries.
type placer struct{ s *stmtPlan }

func (v *placer) Enter(n ast.Node) (ast.Node, bool) {
	switch e := n.(type) {
	case *ast.SubqueryExpr:
		return n, true
	case ast.ValueExpr:
		if i := v.s.callAt(e.OriginTextPosition()); i >= 0 {
			v.s.placed[i] = true
		}
	}
	return n, false
}

func (v *placer) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// wrapFirstKey renders this statement's first generated key as
// LAST_INSERT_ID(id), so the server reports it like an AUTO_INCREMENT value,
// and notes whether it is in the statement's last row (Plan.WrapLast).
func (s *stmtPlan) wrapFirstKey() {
	edits := s.builder.edits[s.first:]
	best := -1
	for i := range edits {
		if edits[i].key && edits[i].slot >= 0 && (best < 0 || edits[i].start < edits[best].start) {
			best = i
		}
	}
	s.builder.wrapLast, s.builder.wrapMarked = false, false
	if best >= 0 {
		edits[best].wrap = true
		s.builder.wrapLast = s.first+best >= s.lastRow
		if !s.builder.wrapLast {
			s.markNextRow(edits, best)
		}
	}
}

// markNextRow opens the key of the row after the wrapped key's
// (edits[w]) with markOpen (a client's ? or a positive explicit key: in
// markIf), so that after an ERR the engine can tell whether the row
// with the wrapped key was written: the server reads a row's values only
// after it wrote the row before (Plan.WrapMarked).
func (s *stmtPlan) markNextRow(edits []edit, w int) {
	b, from := s.builder, edits[w].end
	next := -1
	for i := range edits {
		if i != w && edits[i].key && edits[i].slot >= 0 && edits[i].start >= from &&
			(next < 0 || edits[i].start < edits[next].start) {
			next = i
		}
	}
	lit := -1 // the next explicit key, if before
	for i, m := range b.marks {
		if m.at >= from && (next < 0 || m.at < edits[next].start) && (lit < 0 || m.at < b.marks[lit].at) {
			lit = i
		}
	}
	if lit >= 0 {
		if b.oneRowApart(from, b.marks[lit].at) {
			b.markLiteral(b.marks[lit].at)
		}
		return
	}
	if next < 0 || !b.oneRowApart(from, edits[next].start) {
		return
	}
	e := &edits[next]
	if e.param {
		// COALESCE(?,?) keeps its type (a string bound converts as
		// it would directly): the assignment in an IF around it.
		e.pre, e.post = b.text(b.texts[e.pre]+markIf), b.text(")"+b.texts[e.post])
	} else {
		e.pre = b.text(b.texts[e.pre] + markOpen)
	}
	b.wrapMarked = true
}

// markLiteral puts the explicit key literal at byte at in markIf (its
// type kept: '5' converts as it would directly).
func (b *builder) markLiteral(at int) {
	l := lexer{sql: b.sql, pos: at, mode: b.env.Mode}
	_, last, ok := readKeyLiteral(&l, l.next())
	if !ok {
		return
	}
	b.edits = append(b.edits, edit{start: at, end: at, slot: -1, pre: b.text(markIf)},
		edit{start: last.end, end: last.end, slot: -1, pre: b.text(")")})
	b.wrapMarked = true
}

// oneRowApart: text [from, to) of a VALUES list ends one row and opens
// the next, once: one ')' closing the row from's value is in.
func (b *builder) oneRowApart(from, to int) bool {
	l := lexer{sql: b.sql[:to], pos: from, mode: b.env.Mode}
	depth, ends := 0, 0
	for {
		t := l.next()
		switch {
		case t.kind == tEOF:
			return ends == 1 && depth == 0
		case l.isPunct(t, '('):
			depth++
		case l.isPunct(t, ')'):
			if depth--; depth < 0 {
				ends++
			}
		}
	}
}

// addFilled records a table whose key the plan fills, once.
func (b *builder) addFilled(f Filled) {
	for _, g := range b.filled {
		if g == f {
			return
		}
	}
	b.filled = append(b.filled, f)
}
