package rewriter

import (
	"fmt"
	"github.com/leafproxy/leafproxy/internal/sqltext"
	"strings"
)

// Rule says that inserts into Table get Column filled from the sequence Tag.
type Rule struct {
	// Table is "orders" (that name in any database) or "shop.orders".
	Table  string
	Column string
	Tag    string
}

// Rules is an immutable set of rules, safe for concurrent use. Names match
// case-insensitively; a "db.table" rule wins over a "table" rule.
type Rules struct {
	qualified map[string]Rule // "db.table", lower case
	anyDB     map[string]Rule // "table", lower case
	tables    map[string]bool // the table part of every rule, lower case
	// quoted: every rule's column as the fast path splices it into a
	// column list, alone ([0]) or before others ([1]), built once here
	// instead of per statement.
	quoted map[string][2]string
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
// field present, the table as "table" or "db.table", no table twice
// (names compare case-insensitively).
func CheckRules(rules []Rule) []RuleProblem {
	var out []RuleProblem
	seen := map[string]bool{}
	for i, rule := range rules {
		if _, _, ok := sqltext.SplitTable(rule.Table); !ok {
			out = append(out, RuleProblem{i, "table", fmt.Sprintf("%q must be table or db.table", rule.Table)})
		}
		if rule.Column == "" {
			out = append(out, RuleProblem{i, "column", "empty (the key column to fill)"})
		}
		if rule.Tag == "" {
			out = append(out, RuleProblem{i, "tag", fmt.Sprintf("empty (the sequence tag that generates %s)", rule.Table)})
		}
		key := strings.ToLower(rule.Table)
		if seen[key] {
			out = append(out, RuleProblem{i, "table", fmt.Sprintf("%q has two rules", rule.Table)})
		}
		seen[key] = true
	}
	return out
}

// NewRules checks (CheckRules) and indexes rules.
func NewRules(rules []Rule) (*Rules, error) {
	if problems := CheckRules(rules); len(problems) > 0 {
		return nil, problems[0]
	}
	r := &Rules{qualified: map[string]Rule{}, anyDB: map[string]Rule{}, tables: map[string]bool{}, quoted: map[string][2]string{}}
	for _, rule := range rules {
		key := strings.ToLower(rule.Table)
		m := r.anyDB
		if db, _, _ := sqltext.SplitTable(key); db != "" {
			m = r.qualified
		}
		m[key] = rule
		r.tables[key[strings.IndexByte(key, '.')+1:]] = true
		q := quoteIdent(rule.Column)
		r.quoted[rule.Column] = [2]string{q, q + ", "}
	}
	return r, nil
}

// quotedColumn is column quoted for a column list, followed by ", " when
// more columns follow.
func (r *Rules) quotedColumn(column string, more bool) string {
	var q [2]string
	ok := false
	if r != nil {
		q, ok = r.quoted[column]
	}
	if !ok {
		q[0] = quoteIdent(column)
		q[1] = q[0] + ", "
	}
	if more {
		return q[1]
	}
	return q[0]
}

// anyDBHas reports whether some rule, in any database, is for a table
// named table: what an unqualified name can match when the current
// database is unknown.
func (r *Rules) anyDBHas(table string) bool {
	return r != nil && r.tables[strings.ToLower(table)]
}

// Lookup finds the rule for table in database db (db may be empty when
// the session has no current database). A nil *Rules has no rules.
func (r *Rules) Lookup(db, table string) (Rule, bool) {
	if r == nil || table == "" {
		return Rule{}, false
	}
	var buf [128]byte // lower-case keys built here: a map lookup by string(bytes) does not allocate
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
