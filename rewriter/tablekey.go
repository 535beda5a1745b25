package rewriter

import (
	"fmt"

	"github.com/leafproxy/leafproxy/internal/tablematch"
)

// TableKey is what the backend says of one table's key column, the
// column a rule fills (Env.TableKey): whether a pattern rule fills the
// table at all (FillsPattern), what an explicit 0 means there, and
// whether given keys are integers to convert.
type TableKey struct {
	// Known: the backend shows the table (information_schema; not a
	// temporary table, not one the account cannot see).
	Known bool
	// Column: the table has the rule's column. The fields below are that
	// column's.
	Column bool
	// Type is the column's type as the server writes it (bigint(20),
	// varchar(191)), for messages.
	Type string
	// Integer: an integer type (or DECIMAL without a fraction): one that
	// can hold generated IDs, and converts given values as KeyValue does.
	Integer bool
	// Key: the column alone is the table's primary key.
	Key bool
	// AutoIncrement: the column has AUTO_INCREMENT.
	AutoIncrement bool
	// Default is the column's own server default as information_schema
	// writes it (nextval(`db`.`s`), uuid(), 7), "" for none.
	Default string
}

// FillsPattern says whether a pattern rule fills a table it matches:
// only one whose rule column is its key (alone the primary key, or with
// AUTO_INCREMENT), an integer column without a server default of its own;
// why says what left the table alone. A table the backend does not show
// (Known false) is left alone too: nothing says it has the column.
func (k TableKey) FillsPattern(column string) (fill bool, why string) {
	switch {
	case !k.Known:
		return false, "the backend does not show the table (a temporary table, or one the proxy's account cannot see)"
	case !k.Column:
		return false, fmt.Sprintf("it has no column %s", column)
	case !k.Key && !k.AutoIncrement:
		return false, fmt.Sprintf("%s is not its primary key (alone) and has no AUTO_INCREMENT", column)
	case k.Default != "":
		return false, fmt.Sprintf("%s has a default of its own, DEFAULT %s, which the server fills", column, k.Default)
	case !k.Integer:
		return false, fmt.Sprintf("%s is %s, not an integer column", column, k.Type)
	}
	return true, ""
}

// KeepsZero says whether an explicit key that stores as 0 is kept in this
// table under rule (see Zero): ZeroAuto keeps it on a table a pattern
// matched whose key column has no AUTO_INCREMENT.
func (k TableKey) KeepsZero(rule Rule) bool {
	switch rule.Zero {
	case ZeroKeep:
		return true
	case ZeroFill:
		return false
	}
	return rule.pattern && k.Known && k.Column && !k.AutoIncrement
}

// resolve is rule as it applies to db.table, as the backend describes it
// (Env.TableKey): ok false when a pattern rule leaves the table alone (the
// statement is then the server's, untouched). Without Env.TableKey, or
// without a database, the rule is taken as it is.
func (b *builder) resolve(db, table string, rule Rule) (r Rule, ok bool, err error) {
	if b.env.TableKey == nil || db == "" {
		return rule, true, nil
	}
	k, err := b.env.TableKey(db, table, rule.Column)
	if err != nil {
		e := errorf(CodeUnknown, "reading the key column %s of %s: %v", rule.Column, qualify(db, table), err)
		e.cause = err
		return Rule{}, false, e
	}
	if rule.pattern {
		if fill, _ := k.FillsPattern(rule.Column); !fill {
			return Rule{}, false, nil
		}
		if rule.PerTable {
			rule.Tag = PerTableTag(rule.Tag, db, table, b.env.Rules.FoldsCase())
		}
	}
	rule.keepZero = k.KeepsZero(rule)
	rule.text = k.Known && k.Column && !k.Integer
	return rule, true, nil
}

// PerTableTag is the tag of db.table under a per_table pattern rule of
// tag: "tag.db.table" (the names in lower case when fold, as the backend
// compares them with lower_case_table_names 1 or 2). NEXTVAL('tag.db.table')
// and SHOW LEAFPROXY SEQUENCES reach it under that name.
func PerTableTag(tag, db, table string, fold bool) string {
	c := tablematch.Exact
	if fold {
		c = tablematch.Fold
	}
	return tablematch.PerTableTag(tag, db, table, c)
}
