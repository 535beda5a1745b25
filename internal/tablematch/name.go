package tablematch

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Name is a rule's table name, `table` or `db.table`, each part an exact
// name or a pattern, compiled for one Case.
type Name struct {
	Text      string // as configured
	DB, Table string // the parts as Case.Key gives them; DB "" = any database
	Case      Case
	// dbPattern / tablePattern: the part is a pattern (else exact).
	dbPattern, tablePattern bool
	// The literal start and end of each pattern part: a name that does
	// not start and end so is rejected without running Match.
	dbPre, dbSuf, tablePre, tableSuf string
}

// Split splits a rule's table name, `table` or `db.table`, as configured
// (unquoted): ok is false for an empty name or part, or more than one dot.
func Split(name string) (db, table string, ok bool) {
	db, table, qualified := strings.Cut(name, ".")
	if !qualified {
		return "", name, name != ""
	}
	return db, table, db != "" && table != "" && !strings.Contains(table, ".")
}

// Parse compiles a rule's table name for case c. Its error says which
// part is wrong and how.
func Parse(text string, c Case) (Name, error) {
	db, table, ok := Split(text)
	if !ok {
		return Name{}, fmt.Errorf("%q must be table or db.table", text)
	}
	n := Name{Text: text, DB: c.Key(db), Table: c.Key(table), Case: c, dbPattern: IsPattern(db), tablePattern: IsPattern(table)}
	if n.dbPattern {
		if err := Check(db); err != nil {
			return Name{}, fmt.Errorf("%q: the database part %q is not a valid pattern: %v (patterns: %s)", text, db, err, Syntax)
		}
	}
	if n.tablePattern {
		if err := Check(table); err != nil {
			return Name{}, fmt.Errorf("%q: the table part %q is not a valid pattern: %v (patterns: %s)", text, table, err, Syntax)
		}
	}
	n.dbPre, n.dbSuf = Prefix(n.DB), suffix(n.DB)
	n.tablePre, n.tableSuf = Prefix(n.Table), suffix(n.Table)
	if c == Fold {
		// Lower case can change a character's length in bytes: keep the
		// ASCII ends only, whose bytes a name must have (or be non-ASCII).
		n.dbPre, n.dbSuf = asciiStart(n.dbPre), asciiEnd(n.dbSuf)
		n.tablePre, n.tableSuf = asciiStart(n.tablePre), asciiEnd(n.tableSuf)
	}
	return n, nil
}

func asciiStart(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return s[:i]
		}
	}
	return s
}

func asciiEnd(s string) string {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] >= utf8.RuneSelf {
			return s[i+1:]
		}
	}
	return s
}

// suffix is the literal end of pattern, after its last wildcard ("" when
// it has a \: escapes are left to Match).
func suffix(pattern string) string {
	if strings.IndexByte(pattern, '\\') >= 0 {
		return ""
	}
	if i := strings.LastIndexAny(pattern, "*?]"); i >= 0 {
		return pattern[i+1:]
	}
	return pattern
}

// IsPattern reports whether either part is a pattern.
func (n Name) IsPattern() bool { return n.dbPattern || n.tablePattern }

// Qualified reports whether the name has a database part.
func (n Name) Qualified() bool { return n.DB != "" }

// Match reports whether table in database db is one the name stands for.
// An unqualified name stands for its table in every database.
func (n *Name) Match(db, table string) bool {
	// The table first: for a table without a rule it is what differs.
	return n.MatchTable(table) && (n.DB == "" || matchPart(n.DB, n.dbPattern, n.dbPre, n.dbSuf, db, n.Case))
}

// MatchTable reports whether the table part matches table (whatever the
// database).
func (n *Name) MatchTable(table string) bool {
	return matchPart(n.Table, n.tablePattern, n.tablePre, n.tableSuf, table, n.Case)
}

func matchPart(part string, pattern bool, pre, suf, name string, c Case) bool {
	if !pattern && c == Exact {
		return part == name
	}
	if len(name) < len(pre) || !hasPrefix(name, pre, c) || len(name) < len(suf) || !hasPrefix(name[len(name)-len(suf):], suf, c) {
		return false
	}
	return Match(part, name, c) // an exact part has no wildcard: compared character by character
}

// hasPrefix reports whether s may start with pre as c compares: with Fold
// (pre in lower case), a byte of s that is not ASCII leaves it to Match.
func hasPrefix(s, pre string, c Case) bool {
	if c == Exact {
		return s[:len(pre)] == pre
	}
	for i := 0; i < len(pre); i++ {
		if s[i] >= utf8.RuneSelf {
			return true
		}
		if lower(s[i]) != pre[i] {
			return false
		}
	}
	return true
}

// Like is a LIKE pattern (without ESCAPE) that selects from
// information_schema at least the names each part matches, whatever the
// server's case rules and sql_mode: the part's literal start followed by
// %, or the exact name, with _ for each % or \ in it (_ matches any
// character, the literal too; no escape character is needed, which
// NO_BACKSLASH_ESCAPES would change); "" for a part that can be anything
// (a pattern that starts with a wildcard, or an absent database part).
// information_schema compares names with LIKE case-insensitively, so the
// rows are a superset: filter them with Match.
func (n Name) Like() (db, table string) {
	return like(n.DB, n.dbPattern), like(n.Table, n.tablePattern)
}

// SystemSchemas is the SQL list of the databases that never hold
// application tables, for information_schema queries that look for the
// tables a rule may fill: TABLE_SCHEMA NOT IN (SystemSchemas).
const SystemSchemas = "'mysql','information_schema','performance_schema','sys'"

// FilterLike appends to q, an information_schema query that ends in its
// WHERE clause's conditions, " AND TABLE_SCHEMA LIKE ?" and " AND
// TABLE_NAME LIKE ?" for the parts Like narrows, and their patterns to
// args. The rows are then a superset of what n stands for: filter them
// with Match.
func (n Name) FilterLike(q string, args []any) (string, []any) {
	dbLike, tableLike := n.Like()
	if dbLike != "" {
		q += " AND TABLE_SCHEMA LIKE ?"
		args = append(args, dbLike)
	}
	if tableLike != "" {
		q += " AND TABLE_NAME LIKE ?"
		args = append(args, tableLike)
	}
	return q, args
}

func like(part string, pattern bool) string {
	lit := part
	if pattern {
		lit = Prefix(part)
		if lit == "" {
			return ""
		}
	}
	lit = strings.NewReplacer("%", "_", "\\", "_").Replace(lit)
	if pattern {
		lit += "%"
	}
	return lit
}
