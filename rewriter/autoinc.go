package rewriter

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// AutoIncrementStart is what a lone `ALTER TABLE t ... AUTO_INCREMENT [=]
// n` or `CREATE TABLE t (...) AUTO_INCREMENT [=] n` says of t's counter:
// its next value is at least n. For a rule table the engine raises the
// rule's tag past n-1 before the statement is sent (issue 38 item 7: a
// range reserved that way and filled around the proxy must not collide
// later); ok false for any other text (several statements, another
// statement, no such table option, a text the parser cannot read). Text
// that does not start with ALTER or CREATE is not parsed.
func AutoIncrementStart(text string, mode Mode) (ref SchemaRef, n uint64, ok bool) {
	if !strings.Contains(strings.ToLower(text), "auto_increment") {
		return SchemaRef{}, 0, false
	}
	p := parsers.Get().(*parser.Parser)
	p.SetSQLMode(mode.parserMode())
	broken := false
	stmts, err := parse(p, text, &broken)
	if !broken {
		parsers.Put(p)
	}
	if err != nil || len(stmts) != 1 {
		return SchemaRef{}, 0, false
	}
	var opts []*ast.TableOption
	var table *ast.TableName
	switch st := stmts[0].(type) {
	case *ast.AlterTableStmt:
		table = st.Table
		for _, spec := range st.Specs {
			if spec.Tp == ast.AlterTableOption {
				opts = append(opts, spec.Options...)
			}
		}
	case *ast.CreateTableStmt:
		table, opts = st.Table, st.Options
	default:
		return SchemaRef{}, 0, false
	}
	for _, o := range opts {
		if o.Tp == ast.TableOptionAutoIncrement && table != nil {
			ref = SchemaRef{DB: table.Schema.O, Table: table.Name.O}
			n, ok = o.UintValue, true
		}
	}
	return ref, n, ok
}
