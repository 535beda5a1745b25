package rewriter

import (
	"fmt"
	"strings"

	"github.com/leafproxy/leafproxy/internal/sqltext"
	"github.com/leafproxy/leafproxy/internal/tablematch"
)

// Rule says that inserts into Table get Column filled from the sequence Tag.
type Rule struct {
	// Table is "orders" (that name in any database) or "shop.orders";
	// either part may be a shell-style pattern ("shop_*.orders_*",
	// "orders_?", "shop_[0-9].orders"; see internal/tablematch), which
	// gives every table it matches the rule's column and tag.
	Table  string
	Column string
	Tag    string
	// Exclude (pattern rules only): names of tables the pattern leaves
	// alone, each "table" or "db.table", exact or a pattern, compared as
	// Table is.
	Exclude []string
	// PerTable (pattern rules only): every table the pattern fills has a
	// tag of its own, PerTableTag(Tag, db, table), as each table has its
	// own AUTO_INCREMENT counter (one table's explicit keys never move
	// another's); without it the whole family shares Tag.
	PerTable bool
	// Zero is what an explicit key that stores as 0 means (ZeroAuto: as
	// the table's column says; see Zero).
	Zero Zero

	// pattern: the rule's table is a pattern (set by NewRules).
	pattern bool
	// Resolved for one table (Env.TableKey; builder.resolve): keepZero,
	// an explicit 0 is kept; text, the key column is not an integer
	// column, so any value given is kept and never converted.
	keepZero, text bool
}

// Zero is what a rule makes of an explicit key value that stores as 0 in
// an integer key column (0, '0', 0.4, ...).
type Zero string

const (
	// ZeroAuto (the default): as AUTO_INCREMENT would (ZeroFill) on an
	// exact rule and on a pattern-matched table whose key column has
	// AUTO_INCREMENT (a table moved off it keeps its meaning); as the
	// server would without AUTO_INCREMENT (ZeroKeep) on a table a pattern
	// matched whose key column never had it.
	ZeroAuto Zero = ""
	// ZeroFill: an explicit 0 gets a generated key, unless the session's
	// sql_mode has NO_AUTO_VALUE_ON_ZERO.
	ZeroFill Zero = "fill"
	// ZeroKeep: an explicit 0 is stored as 0; only an absent key, NULL
	// and DEFAULT are filled.
	ZeroKeep Zero = "keep"
)

// IsPattern reports whether the rule's table is a pattern (a rule from a
// Rules; false for one built by hand).
func (r Rule) IsPattern() bool { return r.pattern }

// Rules is an immutable set of rules, safe for concurrent use.
//
// Names compare as the backend compares them (WithLowerCaseTableNames):
// byte for byte by default (lower_case_table_names=0, where `Mixed` and
// `mixed` are two tables), case-insensitively for 1 and 2.
//
// Precedence, for a table in a database: an exact "db.table" rule, then
// an exact "table" rule, then the first pattern rule in configuration
// order that matches (a pattern's exact part, as in "shop.orders_*",
// does not make it an exact rule). So a family's pattern can be
// overridden for one member by an exact rule, or by a narrower pattern
// listed before it.
type Rules struct {
	caseFold  bool
	qualified map[string]Rule // "db.table" (lower case when fold)
	anyDB     map[string]Rule // "table" (lower case when fold)
	tables    map[string]bool // the table part of every exact rule (lower case when fold)
	patterns  []patternRule   // in configuration order
	// quoted: every rule's column as the fast path splices it into a
	// column list, alone ([0]) or before others ([1]), built once here
	// instead of per statement.
	quoted map[string][2]string
}

type patternRule struct {
	name    tablematch.Name
	exclude []tablematch.Name
	rule    Rule
}

// RuleProblem is one thing wrong with the Index-th rule of a list: Field
// is "table", "column" or "tag", Msg says what and how to fix it.
type RuleProblem struct {
	Index int
	Field string
	Msg   string
}

func (p RuleProblem) Error() string {
	return fmt.Sprintf("table rule %d, %s: %s", p.Index, p.Field, p.Msg)
}

// CheckRules is the one check of a rule list, used by NewRules and by the
// configuration's validation (which adds the tag name's own rules): every
// field present, the table as "table" or "db.table" with each part a name
// or a valid pattern, no table written twice. Names that differ only in
// case are two rules here (two tables on a backend with
// lower_case_table_names=0); NewRules refuses them when it folds case.
func CheckRules(rules []Rule) []RuleProblem {
	var out []RuleProblem
	seen := map[string]int{}
	for i, rule := range rules {
		if _, err := tablematch.Parse(rule.Table, tablematch.Exact); err != nil {
			out = append(out, RuleProblem{i, "table", err.Error()})
		}
		if rule.Column == "" {
			out = append(out, RuleProblem{i, "column", "empty (the key column to fill)"})
		}
		if rule.Tag == "" {
			out = append(out, RuleProblem{i, "tag", fmt.Sprintf("empty (the sequence tag that generates %s)", rule.Table)})
		}
		pattern := tablematch.IsPattern(rule.Table) // either part
		for k, x := range rule.Exclude {
			if _, err := tablematch.Parse(x, tablematch.Exact); err != nil {
				out = append(out, RuleProblem{i, fmt.Sprintf("exclude[%d]", k), err.Error()})
			}
		}
		if !pattern {
			if len(rule.Exclude) > 0 {
				out = append(out, RuleProblem{i, "exclude", fmt.Sprintf("%q is one table, not a pattern: there is nothing to leave out (remove exclude)", rule.Table)})
			}
			if rule.PerTable {
				out = append(out, RuleProblem{i, "per_table", fmt.Sprintf("%q is one table, not a pattern: it has its tag %q to itself already (remove per_table)", rule.Table, rule.Tag)})
			}
		}
		switch rule.Zero {
		case ZeroAuto, ZeroFill, ZeroKeep:
		default:
			out = append(out, RuleProblem{i, "zero", fmt.Sprintf("%q is not fill or keep (what an explicit key 0 means: fill generates one, keep stores 0)", string(rule.Zero))})
		}
		if j, ok := seen[rule.Table]; ok {
			out = append(out, RuleProblem{i, "table", fmt.Sprintf("%q has two rules (tables[%d] is the other)", rule.Table, j)})
		} else {
			seen[rule.Table] = i
		}
	}
	return out
}

// RulesOption adjusts NewRules.
type RulesOption func(*rulesOptions)

type rulesOptions struct{ lowerCaseTableNames int }

// WithLowerCaseTableNames makes the rules compare names as a backend with
// this lower_case_table_names does: 0 (the default, Linux's) byte for
// byte, 1 and 2 case-insensitively.
func WithLowerCaseTableNames(n int) RulesOption {
	return func(o *rulesOptions) { o.lowerCaseTableNames = n }
}

// NewRules checks (CheckRules) and indexes rules.
func NewRules(rules []Rule, opts ...RulesOption) (*Rules, error) {
	if problems := CheckRules(rules); len(problems) > 0 {
		return nil, problems[0]
	}
	var o rulesOptions
	for _, f := range opts {
		f(&o)
	}
	c := tablematch.CaseOf(o.lowerCaseTableNames)
	r := &Rules{caseFold: c == tablematch.Fold, qualified: map[string]Rule{}, anyDB: map[string]Rule{}, tables: map[string]bool{}, quoted: map[string][2]string{}}
	first := map[string]int{} // rule name as c compares it -> index
	for i, rule := range rules {
		name, _ := tablematch.Parse(rule.Table, c) // CheckRules parsed it
		key := c.Key(rule.Table)
		if j, ok := first[key]; ok {
			return nil, RuleProblem{i, "table", fmt.Sprintf("%q and %q (tables[%d]) are the same table on a backend with lower_case_table_names=%d, "+
				"which compares names case-insensitively: keep one rule", rule.Table, rules[j].Table, j, o.lowerCaseTableNames)}
		}
		first[key] = i
		switch {
		case name.IsPattern():
			rule.pattern = true
			pr := patternRule{name: name, rule: rule}
			for _, x := range rule.Exclude {
				xn, _ := tablematch.Parse(x, c) // CheckRules parsed it
				pr.exclude = append(pr.exclude, xn)
			}
			r.patterns = append(r.patterns, pr)
		case name.Qualified():
			r.qualified[name.DB+"."+name.Table] = rule
			r.tables[name.Table] = true
		default:
			r.anyDB[name.Table] = rule
			r.tables[name.Table] = true
		}
		q := sqltext.QuoteIdent(rule.Column)
		r.quoted[rule.Column] = [2]string{q, q + ", "}
	}
	return r, nil
}

// empty reports whether there is no rule (a nil *Rules has none).
func (r *Rules) empty() bool {
	return r == nil || len(r.qualified) == 0 && len(r.anyDB) == 0 && len(r.patterns) == 0
}

// FoldsCase reports whether the rules compare names case-insensitively.
func (r *Rules) FoldsCase() bool { return r != nil && r.caseFold }

// quotedColumn is column quoted for a column list, followed by ", " when
// more columns follow.
func (r *Rules) quotedColumn(column string, more bool) string {
	var q [2]string
	ok := false
	if r != nil {
		q, ok = r.quoted[column]
	}
	if !ok {
		q[0] = sqltext.QuoteIdent(column)
		q[1] = q[0] + ", "
	}
	if more {
		return q[1]
	}
	return q[0]
}

// anyDBHas reports whether some rule, in any database, is for a table
// named table (an exact name or a pattern's table part): what an
// unqualified name can match when the current database is unknown.
func (r *Rules) anyDBHas(table string) bool {
	if r == nil {
		return false
	}
	if r.caseFold {
		table = strings.ToLower(table) // rare: after a USE the proxy cannot follow
	}
	if r.tables[table] {
		return true
	}
	for i := range r.patterns {
		if r.patterns[i].name.MatchTable(table) {
			return true
		}
	}
	return false
}

// Lookup finds the rule for table in database db (db may be empty when
// the session has no current database), by the precedence on Rules. A
// nil *Rules has no rules. It runs for every INSERT, also into tables
// without a rule, and does not allocate (except to lower a non-ASCII name
// when folding case): exact names are map lookups, a pattern a match
// over the name's bytes that mostly stops at its first differing one.
func (r *Rules) Lookup(db, table string) (Rule, bool) {
	if r == nil || table == "" {
		return Rule{}, false
	}
	if rule, ok := r.lookupExact(db, table); ok {
		return rule, true
	}
	for i := range r.patterns {
		if p := &r.patterns[i]; (db != "" || !p.name.Qualified()) && p.name.Match(db, table) && !p.excludes(db, table) {
			return p.rule, true
		}
	}
	return Rule{}, false
}

// excludes reports whether the pattern leaves db.table out (Rule.Exclude).
func (p *patternRule) excludes(db, table string) bool {
	for i := range p.exclude {
		if x := &p.exclude[i]; (db != "" || !x.Qualified()) && x.Match(db, table) {
			return true
		}
	}
	return false
}

// lookupExact looks db.table up among the exact "db.table" rules, then
// table among the exact "table" rules.
func (r *Rules) lookupExact(db, table string) (Rule, bool) {
	if !r.caseFold {
		if db != "" && len(r.qualified) > 0 {
			var buf [128]byte // a map lookup by string(bytes) does not allocate
			key := append(append(append(buf[:0], db...), '.'), table...)
			if rule, ok := r.qualified[string(key)]; ok {
				return rule, true
			}
		}
		rule, ok := r.anyDB[table]
		return rule, ok
	}
	var buf [128]byte // lower-case keys built here
	if db != "" && len(r.qualified) > 0 {
		key, ok := appendLower(buf[:0], db)
		key = append(key, '.')
		if key, ascii := appendLower(key, table); ok && ascii {
			if rule, ok := r.qualified[string(key)]; ok {
				return rule, true
			}
		} else if rule, ok := r.qualified[strings.ToLower(db)+"."+strings.ToLower(table)]; ok {
			return rule, true
		}
	}
	if key, ascii := appendLower(buf[:0], table); ascii {
		rule, ok := r.anyDB[string(key)]
		return rule, ok
	}
	rule, ok := r.anyDB[strings.ToLower(table)]
	return rule, ok
}

// appendLower appends s in lower case if it is ASCII (as strings.ToLower
// would); ascii is false otherwise.
func appendLower(dst []byte, s string) (out []byte, ascii bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			return dst, false
		}
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst, true
}
