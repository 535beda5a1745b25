package rewriter

import (
	"fmt"
	"maps"
	"strings"

	"github.com/leafproxy/leafproxy/internal/sqltext"
	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// Views over rule tables (issue 38 item 8). AUTO_INCREMENT fills a row
// written through an updatable view; the proxy does the same when it knows
// the view: ViewRule reads a view's definition (information_schema.VIEWS,
// as MariaDB stores it: `select `db`.`t`.`id` AS `k`,... from `db`.`t``)
// and, for a view over one rule table, makes the rule that fills the
// view's column selecting the table's key with the table's tag. Rules.With
// adds such rules to the configured ones.

// ViewRule is the rule for the view db.name whose definition is def, if
// it is a view of exactly one table that rules fill: the view's name, the
// view's column that selects the key column, the rule's tag. A view that
// does not select the key column gets the key column's name: an INSERT
// through it is then refused by the server (1054, the view has no such
// column) before anything is written, where AUTO_INCREMENT would fill it;
// a view over several tables one of which rules fill, or that the parser
// cannot read, gets no rule (ok false, why says so when it touches a rule
// table).
func ViewRule(db, name, def string, rules *Rules) (rule Rule, ok bool, why string) {
	if rules.empty() {
		return Rule{}, false, ""
	}
	p := parsers.Get().(*parser.Parser)
	broken := false
	stmts, err := parse(p, def, &broken)
	if !broken {
		parsers.Put(p)
	}
	if err != nil || len(stmts) != 1 {
		return Rule{}, false, ""
	}
	sel, isSel := stmts[0].(*ast.SelectStmt)
	if !isSel || sel.From == nil || sel.From.TableRefs == nil {
		return Rule{}, false, ""
	}
	var tables []*ast.TableName
	if !baseTables(sel.From.TableRefs, &tables) {
		return Rule{}, false, ""
	}
	var base *ast.TableName
	var baseRule Rule
	for _, tn := range tables {
		tdb := tn.Schema.O
		if tdb == "" {
			tdb = db
		}
		if r, found := rules.Lookup(tdb, tn.Name.O); found {
			if base != nil || len(tables) > 1 {
				return Rule{}, false, fmt.Sprintf("view %s.%s joins rule table %s.%s with other tables: an INSERT through it is not filled", db, name, tdb, tn.Name.O)
			}
			base, baseRule = tn, r
		}
	}
	if base == nil {
		return Rule{}, false, ""
	}
	rule = Rule{Table: db + "." + name, Column: baseRule.Column, Tag: baseRule.Tag}
	if baseRule.PerTable {
		bdb := base.Schema.O
		if bdb == "" {
			bdb = db
		}
		rule.Tag = PerTableTag(baseRule.Tag, bdb, base.Name.O, rules.FoldsCase())
	}
	if sel.Fields == nil {
		return rule, true, ""
	}
	for _, f := range sel.Fields.Fields {
		if f.WildCard != nil {
			return rule, true, "" // SELECT *: the key keeps its name
		}
		c, isCol := f.Expr.(*ast.ColumnNameExpr)
		if !isCol || !strings.EqualFold(c.Name.Name.O, baseRule.Column) {
			continue
		}
		if f.AsName.O != "" {
			rule.Column = f.AsName.O
		}
		return rule, true, ""
	}
	return rule, true, fmt.Sprintf("view %s.%s does not select %s.%s's key column %s: an INSERT through it is refused (AUTO_INCREMENT would fill it)", db, name, base.Schema.O, base.Name.O, baseRule.Column)
}

// baseTables collects the tables of a FROM clause; false when it holds
// anything but tables and joins of tables (a derived table).
func baseTables(n ast.ResultSetNode, out *[]*ast.TableName) bool {
	switch x := n.(type) {
	case *ast.Join:
		if x.Left != nil && !baseTables(x.Left, out) {
			return false
		}
		return x.Right == nil || baseTables(x.Right, out)
	case *ast.TableSource:
		tn, ok := x.Source.(*ast.TableName)
		if ok {
			*out = append(*out, tn)
		}
		return ok
	}
	return false
}

// With returns the rules with extra exact rules added after the
// configured ones (a configured rule for the same name wins; extra rules
// that are not exact names are ignored). r is not changed.
func (r *Rules) With(extra []Rule) *Rules {
	if len(extra) == 0 {
		return r
	}
	n := &Rules{}
	if r != nil {
		*n = *r
	}
	n.qualified = maps.Clone(n.qualified)
	n.tables = maps.Clone(n.tables)
	n.quoted = maps.Clone(n.quoted)
	if n.qualified == nil {
		n.qualified = map[string]Rule{}
	}
	if n.tables == nil {
		n.tables = map[string]bool{}
	}
	if n.quoted == nil {
		n.quoted = map[string][2]string{}
	}
	if n.anyDB == nil {
		n.anyDB = map[string]Rule{}
	}
	for _, x := range extra {
		db, table, ok := splitQualified(x.Table)
		if !ok || x.Column == "" || x.Tag == "" {
			continue
		}
		if n.caseFold {
			db, table = strings.ToLower(db), strings.ToLower(table)
		}
		key := db + "." + table
		if _, taken := n.qualified[key]; taken {
			continue
		}
		n.qualified[key] = x
		n.tables[table] = true
		if _, ok := n.quoted[x.Column]; !ok {
			q := sqltext.QuoteIdent(x.Column)
			n.quoted[x.Column] = [2]string{q, q + ", "}
		}
	}
	return n
}

// splitQualified splits "db.table" (no quoting, no pattern).
func splitQualified(name string) (db, table string, ok bool) {
	for i := 0; i < len(name); i++ {
		if name[i] == '.' {
			return name[:i], name[i+1:], i > 0 && i < len(name)-1
		}
	}
	return "", "", false
}
