package rewriter

import (
	"strconv"

	"github.com/pingcap/tidb/pkg/parser/ast"
)

// Numbered UPDATE statements: NEXTVAL in the SET list, one value per row
// (numbered.go).

// numberUpdate plans an UPDATE with NEXTVAL in its SET list: one value
// per row it updates.
func (b *builder) numberUpdate(start int, text string, up *ast.UpdateStmt) error {
	if up.With != nil {
		return errorf(CodeNotSupported, "%s in an UPDATE with a WITH clause is not supported", b.sql[b.calls[0].start:b.calls[0].end])
	}
	s := stmtPlan{builder: b, start: start, placed: make([]bool, len(b.calls))}
	s.placeCalls(up)
	for i, c := range b.calls {
		if !s.placed[i] {
			return errorf(CodeNotSupported, "%s here would repeat one value for many rows or is evaluated where the proxy cannot give it a value; "+
				"use it as a value in UPDATE ... SET", b.sql[c.start:c.end])
		}
	}
	refsStart, refsEnd, tail, ok := updateParts(text, b.env.Mode)
	if !ok {
		return errorf(CodeNotSupported, "cannot find the tables and SET list of this UPDATE around %s", b.sql[b.calls[0].start:b.calls[0].end])
	}
	n := numberedStmt{builder: b, start: start}
	for _, c := range b.calls {
		n.edits = append(n.edits, numberedEdit{start: c.start, end: c.end, counter: n.counter(c.tag, false)})
	}
	if up.TableRefs != nil {
		v := &tableNames{db: b.db}
		up.TableRefs.Accept(v)
		b.writes = append(b.writes, v.names...)
	}
	counts := repeatCount(len(n.counters))
	count := "SELECT " + counts + " FROM (SELECT 1 FROM " + text[refsStart:refsEnd] + " " + text[tail:] + ") AS " + cteName
	// Prepared: the SET list's markers come between the tables' and the
	// WHERE's; the count takes them, in order, as items of its inner
	// SELECT, which only works when the tables have none.
	prep := ""
	if markersIn(text[refsStart:refsEnd], b.env.Mode) == 0 {
		items := ""
		for i := range markersIn(text[refsEnd:tail], b.env.Mode) {
			items += "? AS `__leafproxy_p" + strconv.Itoa(i+1) + "`, "
		}
		prep = "SELECT " + counts + countInto(len(n.counters), false, 0) + " FROM (SELECT " + items + "1 FROM " + text[refsStart:refsEnd] + " " + text[tail:] + ") AS " + cteName
	}
	return n.finish(count, prep)
}

// updateParts finds, in an UPDATE's text, its table references
// [refsStart, refsEnd) (between the modifiers and SET) and where the part
// after the SET list starts (WHERE, ORDER BY, LIMIT; len(text) without).
func updateParts(text string, mode Mode) (refsStart, refsEnd, tail int, ok bool) {
	l := lexer{sql: text, mode: mode}
	l.next() // UPDATE
	t := l.next()
	for l.is(t, "LOW_PRIORITY") || l.is(t, "IGNORE") {
		t = l.next()
	}
	refsStart = t.start
	set, _ := l.firstAtTop(t, 0, func(t token) bool { return l.is(t, "SET") })
	if set.kind == tEOF {
		return 0, 0, 0, false
	}
	refsEnd = set.start
	after, _ := l.firstAtTop(l.next(), 0, func(u token) bool {
		return l.is(u, "WHERE") || l.is(u, "ORDER") || l.is(u, "LIMIT")
	})
	if after.kind == tEOF {
		return refsStart, refsEnd, len(text), true
	}
	return refsStart, refsEnd, after.start, true
}

// tableNames collects the tables a statement names (not in subqueries).
type tableNames struct {
	db    string
	names []SeqName
}

func (v *tableNames) Enter(n ast.Node) (ast.Node, bool) {
	switch t := n.(type) {
	case *ast.SubqueryExpr:
		return n, true
	case *ast.TableName:
		db := t.Schema.O
		if db == "" {
			db = v.db
		}
		v.names = append(v.names, SeqName{DB: db, Name: t.Name.O})
	}
	return n, false
}

func (v *tableNames) Leave(n ast.Node) (ast.Node, bool) { return n, true }
