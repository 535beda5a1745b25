package rewriter

import (
	"strconv"
	"strings"

	"github.com/leafproxy/leafproxy/internal/sqltext"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// Planning Numbered statements (numbered.go): INSERT ... SELECT and UPDATE.

// cteName is the common table expression a numbered INSERT ... SELECT
// reads its SELECT from.
const cteName = "__leafproxy_q"

// cteCol is the i-th (from 1) column of cteName.
func cteCol(i int) string { return "`__leafproxy_" + strconv.Itoa(i) + "`" }

// numberedStmt collects one numbered statement's parts.
type numberedStmt struct {
	builder  *builder
	start    int // the statement's offset in the text
	counters []Counter
	edits    []numberedEdit
	explicit bool // the count query ends with MAX of the explicit keys
}

func (n *numberedStmt) counter(tag string, key bool) int {
	n.counters = append(n.counters, Counter{Tag: tag, Key: key})
	return len(n.counters) - 1
}

// finish records the statement's plan in the builder: count is the text
// count query; prepCount (prepared statements only) the same count with
// the statement's ? markers, in their order, storing into variables.
func (n *numberedStmt) finish(count, prepCount string) error {
	b := n.builder
	if len(b.edits) > 0 || b.numbering != nil {
		return errMultiNumbered
	}
	num := &numbering{edits: n.edits, count: count, init: initQuery(len(n.counters))}
	if b.prepared {
		if prepCount == "" {
			return errorf(CodeNotSupported, "this prepared statement needs one generated value per row and has a ? where the proxy cannot count its rows "+
				"(in the tables of an UPDATE); send it as a plain query (COM_QUERY)")
		}
		markers := markersIn(b.sql, b.env.Mode)
		if got := markersIn(prepCount, b.env.Mode); got != markers {
			return errorf(CodeNotSupported, "cannot count the rows of this prepared statement (%d parameters, %d in the count); send it as a plain query (COM_QUERY)", markers, got)
		}
		num.count = prepCount
		num.prepared = true
		b.clientParams = markers
	}
	b.numbering = num
	b.counters = n.counters
	b.countsExplicit = n.explicit
	return nil
}

var errMultiNumbered = errorf(CodeNotSupported, "an INSERT ... SELECT into a rule table, or a statement giving NEXTVAL to many rows, "+
	"must be the only statement of its text: the proxy counts its rows first; send it on its own")

// callsIn returns the indexes (into b.calls) of the calls inside
// [from, to) of the whole text.
func (b *builder) callsIn(from, to int) []int {
	var out []int
	for i, c := range b.calls {
		if c.start >= from && c.end <= to {
			out = append(out, i)
		}
	}
	return out
}

// selectSpan finds the SELECT of an INSERT ... SELECT in text (offsets in
// text): from its first token to the end of its last one, before ON
// DUPLICATE KEY UPDATE; colClose is the ')' ending the column list (-1
// without one).
func selectSpan(text string, mode Mode) (selStart, selEnd, colClose int, ok bool) {
	l := lexer{sql: text, mode: mode}
	if _, _, found := l.insertTable(); !found {
		return 0, 0, 0, false
	}
	colClose = -1
	t := l.afterPartition()
	if l.opensColumnList(t) {
		l.skipParens(t)
		colClose = l.pos - 1
		t = l.next()
	}
	if t.kind == tEOF {
		return 0, 0, 0, false
	}
	selStart = t.start
	_, selEnd = l.firstAtTop(l.next(), t.end, func(u token) bool {
		if !l.is(u, "ON") {
			return false
		}
		save, saveBang := l.pos, l.inBang
		if l.is(l.next(), "DUPLICATE") {
			return true
		}
		l.pos, l.inBang = save, saveBang
		return false
	})
	return selStart, selEnd, colClose, true
}

// withCallsZeroed is text[from:to) of the whole sql with every sequence
// call replaced by 0 (for counting rows).
func (b *builder) withCallsZeroed(from, to int) string {
	var sb strings.Builder
	last := from
	for _, i := range b.callsIn(from, to) {
		c := b.calls[i]
		sb.WriteString(b.sql[last:c.start])
		sb.WriteString("0")
		last = c.end
	}
	sb.WriteString(b.sql[last:to])
	return sb.String()
}

// numberInsertSelect plans INSERT / REPLACE ... SELECT (text is the
// statement, at offset start of the whole sql) into a rule table, or with
// NEXTVAL in its select lists.
func (b *builder) numberInsertSelect(start int, text string, ins *ast.InsertStmt, rule Rule, hasRule bool, db, table string) error {
	name := qualify(db, table)
	selStart, selEnd, colClose, ok := selectSpan(text, b.env.Mode)
	if !ok {
		return errorf(CodeNotSupported, "cannot find the SELECT of this INSERT into %s", name)
	}
	if err := b.checkPerRowCalls(start, ins.Select); err != nil {
		return err
	}
	n := numberedStmt{builder: b, start: start}
	b.writes = append(b.writes, SeqName{DB: db, Name: table})
	absSel, absEnd := start+selStart, start+selEnd
	for _, i := range b.callsIn(absSel, absEnd) {
		c := b.calls[i]
		n.edits = append(n.edits, numberedEdit{start: c.start, end: c.end, counter: n.counter(c.tag, false)})
	}

	// How many columns the SELECT gives, and where the key is among them.
	width, key := len(ins.Columns), -1
	if hasRule {
		key = columnIndex(ins.Columns, rule.Column)
	}
	if len(ins.Columns) == 0 {
		cols, err := b.tableColumns(db, table, rule, hasRule)
		if err != nil {
			return err
		}
		width = len(cols)
		if hasRule {
			for i, c := range cols {
				if strings.EqualFold(c, rule.Column) {
					key = i
				}
			}
			if key < 0 {
				return errorf(CodeBadField, "table %s has no column %s to fill (check the tables rule)", name, rule.Column)
			}
		}
	}
	if hasRule && key >= 0 && rule.text {
		// The SELECT gives the keys of a VARCHAR / BINARY key column:
		// nothing the proxy generates belongs there; they are the server's.
		hasRule = false
		if len(n.edits) == 0 {
			return nil
		}
	}
	cols := make([]string, width)
	for i := range cols {
		cols[i] = cteCol(i + 1)
	}
	with := "WITH " + cteName + " (" + strings.Join(cols, ", ") + ") AS ("
	zeroed := b.withCallsZeroed(absSel, absEnd)
	if !hasRule {
		// NEXTVAL alone: the statement keeps its shape; only the count
		// reads the SELECT through the CTE (its own column names may
		// repeat, which a derived table refuses).
		counts := repeatCount(len(n.counters))
		extra := markersIn(text[selEnd:], b.env.Mode)
		return n.finish(with+zeroed+") SELECT "+counts+" FROM "+cteName,
			with+zeroed+") SELECT "+counts+strings.Repeat(", ?", extra)+countInto(len(n.counters), false, extra)+" FROM "+cteName)
	}
	if err := checkOnDuplicate(ins, table); err != nil {
		return err
	}
	countKey := "COUNT(*)"
	var outer []string
	if key >= 0 {
		// The SELECT gives the key: fill it where it is NULL (or 0), as
		// AUTO_INCREMENT does, and count the explicit ones' largest.
		k := cols[key]
		zero := " OR " + k + " = 0"
		countKey = "COUNT(*) - COUNT(NULLIF(" + k + ", 0))"
		if b.env.Mode.NoAutoValueOnZero || rule.keepZero {
			zero, countKey = "", "COUNT(*) - COUNT("+k+")"
		}
		n.explicit = true
		outer = append(outer, cols[:key]...)
		outer = append(outer, "IF("+k+" IS NULL"+zero+", ")
		n.edits = append(n.edits, numberedEdit{start: absSel, end: absSel, counter: -1, pre: with})
		tail := limitFor(ins.Select) + ") SELECT " + strings.Join(outer, ", ")
		rest := ", " + k + ")"
		if key+1 < width {
			rest += ", " + strings.Join(cols[key+1:], ", ")
		}
		n.edits = append(n.edits, numberedEdit{start: absEnd, end: absEnd, counter: n.counter(rule.Tag, true), pre: tail, post: rest + " FROM " + cteName})
	} else {
		if colClose < 0 {
			return errorf(CodeNotSupported, "cannot find the column list of this INSERT into %s", name)
		}
		sep := ", "
		if width == 0 {
			sep = ""
		}
		n.edits = append(n.edits, numberedEdit{start: start + colClose, end: start + colClose, counter: -1, pre: sep + sqltext.QuoteIdent(rule.Column)})
		n.edits = append(n.edits, numberedEdit{start: absSel, end: absSel, counter: -1, pre: with})
		pre := limitFor(ins.Select) + ") SELECT " + strings.Join(cols, ", ") + sep
		n.edits = append(n.edits, numberedEdit{start: absEnd, end: absEnd, counter: n.counter(rule.Tag, true), pre: pre, post: " FROM " + cteName})
	}
	sortEdits(n.edits)
	counts := make([]string, len(n.counters))
	for i, c := range n.counters {
		counts[i] = "COUNT(*)"
		if c.Key {
			counts[i] = countKey
		}
	}
	if n.explicit {
		counts = append(counts, "MAX("+cols[key]+")")
	}
	b.addFilled(Filled{DB: db, Table: table, Column: rule.Column, Tag: rule.Tag})
	list := strings.Join(counts, ", ")
	// Prepared, the count takes the markers after the SELECT (ON DUPLICATE
	// KEY UPDATE), in order, as select items it ignores.
	extra := markersIn(text[selEnd:], b.env.Mode)
	return n.finish(with+zeroed+") SELECT "+list+" FROM "+cteName,
		with+zeroed+") SELECT "+list+strings.Repeat(", ?", extra)+countInto(len(n.counters), n.explicit, extra)+" FROM "+cteName)
}

// countInto stores a prepared count's row in variables (CountsQuery reads
// them): the counts, the largest explicit key, then extra items ignored.
func countInto(counters int, explicit bool, extra int) string {
	var vars []string
	for i := range counters {
		vars = append(vars, "@"+countVar+strconv.Itoa(i))
	}
	if explicit {
		vars = append(vars, "@"+countVar+"x")
	}
	for range extra {
		vars = append(vars, "@"+countVar+"ignored")
	}
	return " INTO " + strings.Join(vars, ", ")
}

// markersIn counts the ? markers of text as the lexer reads them (not
// those in strings or comments).
func markersIn(text string, mode Mode) int {
	l := lexer{sql: text, mode: mode}
	n := 0
	for t := l.next(); t.kind != tEOF; t = l.next() {
		if t.kind == tParam {
			n++
		}
	}
	return n
}

// tableColumns reads the columns of an INSERT ... SELECT's table without a
// column list.
func (b *builder) tableColumns(db, table string, rule Rule, hasRule bool) ([]string, error) {
	name := qualify(db, table)
	if b.env.Columns == nil {
		return nil, errorf(CodeUnknown, "INSERT ... SELECT into %s without a column list: the proxy does not know the table's columns", name)
	}
	cols, err := b.env.Columns(db, table)
	if err != nil {
		e := errorf(CodeUnknown, "reading the columns of %s: %v", name, err)
		e.cause = err
		return nil, e
	}
	if len(cols) == 0 {
		return nil, errorf(CodeUnknown, "reading the columns of %s: no columns", name)
	}
	return cols, nil
}

// limitFor is the LIMIT that keeps the order of a SELECT with ORDER BY and
// no LIMIT once it is a common table expression (the server drops such an
// ORDER BY otherwise, and AUTO_INCREMENT numbers rows in that order).
func limitFor(sel ast.ResultSetNode) string {
	switch s := sel.(type) {
	case *ast.SelectStmt:
		if s.OrderBy != nil && s.Limit == nil && s.LockInfo == nil && s.SelectIntoOpt == nil {
			return " LIMIT 18446744073709551615"
		}
	case *ast.SetOprStmt:
		if s.OrderBy != nil && s.Limit == nil {
			return " LIMIT 18446744073709551615"
		}
	}
	return ""
}

func repeatCount(n int) string {
	return strings.TrimSuffix(strings.Repeat("COUNT(*), ", n), ", ")
}

// checkOnDuplicate refuses an ON DUPLICATE KEY UPDATE that names a column
// of another table than the target: the SELECT's tables are inside the
// common table expression once the rows are numbered, out of its reach.
func checkOnDuplicate(ins *ast.InsertStmt, table string) error {
	for _, a := range ins.OnDuplicate {
		v := &foreignColumn{table: table}
		a.Expr.Accept(v)
		if v.found != "" {
			return errorf(CodeNotSupported, "ON DUPLICATE KEY UPDATE of this INSERT ... SELECT into %s refers to %s, a column of the SELECT's tables: "+
				"the proxy numbers the SELECT's rows in a common table expression, where those tables are out of reach; "+
				"use VALUES(column) to refer to the inserted value", table, v.found)
		}
	}
	return nil
}

// foreignColumn finds a column reference qualified with another table.
type foreignColumn struct {
	table string
	found string
}

func (v *foreignColumn) Enter(n ast.Node) (ast.Node, bool) {
	switch e := n.(type) {
	case *ast.ValuesExpr:
		return n, true
	case *ast.ColumnNameExpr:
		if t := e.Name.Table.O; t != "" && !strings.EqualFold(t, v.table) && v.found == "" {
			v.found = t + "." + e.Name.Name.O
		}
	}
	return n, false
}

func (v *foreignColumn) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// checkPerRowCalls refuses sequence calls in the SELECT of an INSERT ...
// SELECT other than in its select lists (WHERE, subqueries, ...), where
// the proxy cannot give them a value per row.
func (b *builder) checkPerRowCalls(start int, sel ast.ResultSetNode) error {
	if len(b.calls) == 0 {
		return nil
	}
	s := stmtPlan{builder: b, start: start, placed: make([]bool, len(b.calls))}
	v := placer{s: &s}
	var visit func(n ast.Node)
	visit = func(n ast.Node) {
		switch x := n.(type) {
		case *ast.SelectStmt:
			if x.Fields != nil {
				for _, f := range x.Fields.Fields {
					if f.Expr != nil {
						f.Expr.Accept(&v)
					}
				}
			}
		case *ast.SetOprStmt:
			if x.SelectList != nil {
				visit(x.SelectList)
			}
		case *ast.SetOprSelectList:
			for _, sel := range x.Selects {
				visit(sel)
			}
		}
	}
	visit(sel)
	for i, c := range b.calls {
		if !s.placed[i] {
			return errorf(CodeNotSupported, "%s here would repeat one value for many rows or is evaluated where the proxy cannot give it a value; "+
				"use it in the select list of INSERT ... SELECT, in INSERT ... VALUES / SET, UPDATE ... SET, or a SELECT without FROM", b.sql[c.start:c.end])
		}
	}
	return nil
}

func sortEdits(edits []numberedEdit) {
	for i := 1; i < len(edits); i++ {
		for j := i; j > 0 && edits[j].start < edits[j-1].start; j-- {
			edits[j], edits[j-1] = edits[j-1], edits[j]
		}
	}
}
