package proxy

import (
	"bytes"

	"github.com/leafproxy/leafproxy/internal/sqltext"
)

// Keyword helpers: cheap prefix checks, no parsing. What is a comment, a
// quoted text or an executable comment is internal/sqltext's, shared with
// the engine and the rewriter.

// skipSpace skips whitespace and comments (not /*! */ which MySQL
// executes).
func skipSpace(q []byte) []byte { return q[sqltext.SkipSpace(q, 0):] }

// startsSet reports whether the statement's first word is SET, past
// whitespace, comments and executable-comment openers (/*!, /*!NNNNN,
// /*M!NNNNNN: their content is code the server may run, as mysqldump's
// /*!40101 SET SQL_MODE=... */). It does not ask whether the server runs
// a versioned comment: a false "yes" only costs a sql_mode re-read.
func startsSet(q []byte) bool { return hasKeyword(firstWord(q), "SET") }

// hasKeyword reports whether q starts with kw (upper case) as a whole word.
func hasKeyword(q []byte, kw string) bool { return sqltext.HasKeyword(q, kw) }

// parseUse reads the database name of `USE name` (rest after USE); ok is
// false when the statement has any other shape.
func parseUse(rest []byte) (string, bool) {
	rest = skipSpace(rest)
	var name []byte
	if len(rest) > 0 && rest[0] == '`' {
		i := 1
		for {
			j := bytes.IndexByte(rest[i:], '`')
			if j < 0 {
				return "", false
			}
			name = append(name, rest[i:i+j]...)
			i += j + 1
			if i < len(rest) && rest[i] == '`' { // `` is a literal backtick
				name = append(name, '`')
				i++
				continue
			}
			break
		}
		rest = rest[i:]
	} else {
		i := 0
		for i < len(rest) && rest[i] != ';' && rest[i] != ' ' && rest[i] != '\t' && rest[i] != '\n' && rest[i] != '\r' {
			i++
		}
		name, rest = rest[:i], rest[i:]
	}
	for _, c := range rest {
		if c != ';' && c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return "", false
		}
	}
	return string(name), len(name) > 0
}

// containsFold reports whether b contains the lower-case ASCII word w in
// any case, without allocating.
func containsFold(b []byte, w string) bool { return sqltext.ContainsFold(b, w) }

// moreStatements reports whether q holds anything the server may run after
// its first statement. Both backslash rules are tried (the session's
// NO_BACKSLASH_ESCAPES is not known here): a false "yes" only costs a
// re-read of the session's database and sql_mode; a false "no" could miss
// a later USE.
func moreStatements(q []byte) bool { return sqltext.MoreStatements(q) }

// firstWord skips whitespace, comments and executable-comment openers
// (/*!, /*!NNNNN, /*M!NNNNNN), whose content the server runs.
func firstWord(q []byte) []byte { return q[sqltext.SkipToCode(q, 0):] }
