package killsql

import (
	"bytes"

	"github.com/leafproxy/leafproxy/internal/sqltext"
)

// Text helpers over internal/sqltext's rules (white space, comments,
// executable comments, quoted text, statement ends).

// skipSpace skips whitespace and comments (not /*! */ which the server
// executes).
func skipSpace(q []byte) []byte { return q[sqltext.SkipSpace(q, 0):] }

// firstWord skips whitespace, comments and executable-comment openers
// (/*!, /*!NNNNN, /*M!NNNNNN), whose content the server runs.
func firstWord(q []byte) []byte { return q[sqltext.SkipToCode(q, 0):] }

// hasKeyword reports whether q starts with kw (upper case) as a whole word.
func hasKeyword(q []byte, kw string) bool { return sqltext.HasKeyword(q, kw) }

// splitStatements splits a text at the semicolons that end statements,
// skipping quoted strings, quoted names and comments (an executable
// comment's content counts as code). Backslash escapes are assumed (a
// false split only makes a KILL among statements refused).
func splitStatements(q []byte) [][]byte {
	var out [][]byte
	start := 0
	for {
		end := sqltext.StatementEnd(q, start, true)
		if end == len(q) {
			break
		}
		out = append(out, q[start:end])
		start = end + 1
	}
	if len(bytes.TrimSpace(q[start:])) > 0 || len(out) == 0 {
		out = append(out, q[start:])
	}
	return out
}

// trimStatementEnd drops the statement's trailing semicolons and
// whitespace (the server ignores them).
func trimStatementEnd(q []byte) []byte {
	q = bytes.TrimRight(q, " \t\r\n")
	for len(q) > 0 && q[len(q)-1] == ';' {
		q = bytes.TrimRight(q[:len(q)-1], " \t\r\n")
	}
	return q
}

// hasCodeWord reports whether q has one of words (upper case) as a word
// outside quotes and comments.
func hasCodeWord(q []byte, words ...string) bool {
	for i := sqltext.SkipToCode(q, 0); i < len(q); i = sqltext.SkipToCode(q, i) {
		switch c := q[i]; {
		case c == '\'' || c == '"' || c == '`':
			i, _ = sqltext.QuotedEnd(q, i, c != '`')
		case sqltext.IsIdentByte(c):
			j := i
			for j < len(q) && sqltext.IsIdentByte(q[j]) {
				j++
			}
			for _, w := range words {
				if sqltext.EqualFold(q[i:j], w) {
					return true
				}
			}
			i = j
		default:
			i++
		}
	}
	return false
}

// hasParamMarker reports whether q has a ? outside quotes and comments.
func hasParamMarker(q []byte) bool {
	for i := sqltext.SkipToCode(q, 0); i < len(q); i = sqltext.SkipToCode(q, i) {
		switch c := q[i]; c {
		case '\'', '"', '`':
			i, _ = sqltext.QuotedEnd(q, i, c != '`')
		case '?':
			return true
		default:
			i++
		}
	}
	return false
}
