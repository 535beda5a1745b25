package rewriter

import (
	"sort"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	_ "github.com/pingcap/tidb/pkg/parser/test_driver" // value expressions for the parser
)

// stmtPlan plans one parsed statement.
type stmtPlan struct {
	b     *builder
	start int    // offset of text in the whole sql
	text  string // the statement's original text
	// per call of b.calls: placed where an ID can go; consumed as a key
	// value; alias text to append (select items without an alias)
	placed   []bool
	consumed []bool
	alias    []string
	first    int // index into b.edits of this statement's first edit
}

// callAt returns the index of the call starting at statement offset pos.
func (s *stmtPlan) callAt(pos int) int {
	calls := s.b.calls
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
// without FROM. Subqueries are never such a place.
func (s *stmtPlan) placeCalls(stmt ast.StmtNode) {
	if len(s.b.calls) == 0 {
		return
	}
	s.consumed = make([]bool, len(s.b.calls))
	s.alias = make([]string, len(s.b.calls))
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
		for _, f := range n.Fields.Fields {
			if f.Expr == nil {
				continue
			}
			f.Expr.Accept(&v)
			// MariaDB names the column after the call's text; keep that
			// name now that the call becomes a number.
			if _, bare := f.Expr.(ast.ValueExpr); !bare {
				continue
			}
			if i := s.callAt(f.Expr.OriginTextPosition()); i >= 0 {
				c := s.b.calls[i]
				l := lexer{s: s.b.sql, pos: c.end, mode: s.b.env.Mode}
				if t := l.next(); l.is(t, "AS") || l.isAlias(t) {
					continue
				}
				s.alias[i] = " AS `" + strings.ReplaceAll(s.b.sql[c.start:c.end], "`", "``") + "`"
			}
		}
	}
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
// LAST_INSERT_ID(id), so the server reports it like an AUTO_INCREMENT value.
func (s *stmtPlan) wrapFirstKey() {
	edits := s.b.edits[s.first:]
	best := -1
	for i := range edits {
		if edits[i].key && edits[i].slot >= 0 && (best < 0 || edits[i].start < edits[best].start) {
			best = i
		}
	}
	if best >= 0 {
		edits[best].wrap = true
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
