package sqltext

import "strings"

// The one quoting of identifiers: every package that puts a name it did
// not write itself (a table, a column, a sequence's column label) into SQL
// text quotes it with these, so that all agree on what reaches the server.

// QuoteIdent returns name as a backquoted identifier, each backquote in it
// doubled: `name`. It is safe whatever the sql_mode (ANSI_QUOTES changes
// what "..." means, never `...`). Unlike the rest of the package it
// returns a new string.
func QuoteIdent(name string) string {
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

// AppendQuotedIdent appends QuoteIdent(name) to dst and returns the
// extended slice, allocating only when dst must grow.
func AppendQuotedIdent(dst []byte, name string) []byte {
	dst = append(dst, '`')
	for i := 0; i < len(name); i++ {
		if name[i] == '`' {
			dst = append(dst, '`')
		}
		dst = append(dst, name[i])
	}
	return append(dst, '`')
}
