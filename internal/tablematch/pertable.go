package tablematch

import "strings"

// PerTableTag is the tag of table db.table under a per_table pattern rule
// whose tag is tag: "tag.db.table", the names as c compares them (lower
// case when it folds, so that every spelling of one table reaches one
// tag). The rewriter names the tag it fills from with it, the allocator
// reads it back (SplitPerTableTag) to start the tag above the table's
// largest key.
func PerTableTag(tag, db, table string, c Case) string {
	return tag + "." + c.Key(db) + "." + c.Key(table)
}

// SplitPerTableTag is the database and table of a per-table tag of tag
// (PerTableTag), ok false when name is not one. A database name with a dot
// in it is not told apart.
func SplitPerTableTag(name, tag string) (db, table string, ok bool) {
	rest, found := strings.CutPrefix(name, tag+".")
	if !found {
		return "", "", false
	}
	db, table, ok = strings.Cut(rest, ".")
	return db, table, ok && db != "" && table != ""
}

// Escape is name written so that Parse reads it as exact: every *, ?, [
// and \ after a \.
func Escape(name string) string {
	if !IsPattern(name) {
		return name
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		if strings.IndexByte(`*?[\`, name[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(name[i])
	}
	return b.String()
}
