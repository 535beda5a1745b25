// Package sqltext holds the comment- and quote-aware primitives that the
// proxy's keyword tracking (USE, SET sql_mode, KILL), the engine's DDL
// detection and the rewriter's lexer share, so that all three agree on
// what is white space, a comment, an executable comment, a quoted string
// and a statement boundary:
//
//   - white space: space, \t, \n, \r, \f, \v;
//   - comments: /* ... */, # to the end of the line, and -- followed by
//     white space or a control character (or the end of the text) to the
//     end of the line;
//   - executable comments: /*!, /*!NNNNN, /*M!, /*M!NNNNNN open a comment
//     whose content the server may run, so it is read as code
//     (BangOpener, BangCertain);
//   - quoted text: '...', "..." and `...`, a doubled quote standing for
//     itself, a backslash escaping the next byte in '...' and "..." unless
//     NO_BACKSLASH_ESCAPES (or ANSI_QUOTES for "...") says otherwise.
//
// It also owns the one quoting of identifiers (QuoteIdent,
// AppendQuotedIdent: `name`, backquotes doubled).
//
// Every function works on string and []byte alike and none allocates,
// except QuoteIdent, which returns a new string.
// Nothing here knows SQL grammar beyond that.
package sqltext

// Text is what the functions read: a string or a byte slice.
type Text interface{ ~string | ~[]byte }

// IsSpace reports whether c is white space to MySQL's lexer.
func IsSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// IsDigit reports whether c is an ASCII digit.
func IsDigit(c byte) bool { return c >= '0' && c <= '9' }

// IsIdentByte reports whether c may be part of an unquoted identifier or
// keyword (any byte >= 0x80 counts: multi-byte UTF-8).
func IsIdentByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$' || c >= 0x80
}

// LineComment reports whether a comment that runs to the end of the line
// starts at s[i]: # or -- followed by white space, a control character or
// the end of the text.
func LineComment[T Text](s T, i int) bool {
	switch s[i] {
	case '#':
		return true
	case '-':
		return i+1 < len(s) && s[i+1] == '-' && (i+2 == len(s) || s[i+2] <= ' ')
	}
	return false
}

// LineEnd returns the offset of the newline at or after i, or len(s).
func LineEnd[T Text](s T, i int) int {
	for i < len(s) && s[i] != '\n' {
		i++
	}
	return i
}

// CommentEnd returns the offset just past the "*/" closing the comment
// whose "/*" is at s[i], or len(s) when it is not closed.
func CommentEnd[T Text](s T, i int) int {
	if j := Index(s, "*/", i+2); j >= 0 {
		return j + 2
	}
	return len(s)
}

// Index returns the offset of the first sub in s at or after from, or -1.
func Index[T Text](s T, sub string, from int) int {
	for i := from; i+len(sub) <= len(s); i++ {
		if s[i] == sub[0] && string(s[i:i+len(sub)]) == sub {
			return i
		}
	}
	return -1
}

// BangOpener returns the length of an executable-comment opener at the
// start of s ("/*!", "/*!50001", "/*M!", "/*M!100100"), or 0. s starts
// with "/*".
func BangOpener[T Text](s T) int {
	i := 2
	if i < len(s) && s[i] == 'M' {
		i++
	}
	if i >= len(s) || s[i] != '!' {
		return 0
	}
	i++
	for i < len(s) && IsDigit(s[i]) {
		i++
	}
	return i
}

// BangCertain reports whether every server runs the content of the
// executable comment opened by op (a BangOpener match). MySQL and MariaDB
// both run `/*!` and `/*!NNNNN` with a 5-digit version below 50700.
// Undecidable without the server's version: 5-digit versions from 50700
// (MariaDB skips them all, MySQL runs those up to its version), 6-digit
// versions (/*!MMmmpp, compared with the server's), and every `/*M!`
// (MySQL never runs it; the TiDB parser reads it as a comment). `/*!` with
// 1-4 or 7+ digits is also refused: the servers read some of the digits as
// code, which the planner does not model.
func BangCertain[T Text](op T) bool {
	if op[2] == 'M' {
		return false
	}
	d := op[3:]
	switch len(d) {
	case 0:
		return true
	case 5:
		return string(d) < "50700"
	}
	return false
}

// QuotedEnd returns the offset just past the quoted text starting at
// s[start] (the quote character) and whether it is closed. A doubled quote
// stands for itself; a backslash escapes the next byte when escapes is
// set. Unterminated text runs to the end.
func QuotedEnd[T Text](s T, start int, escapes bool) (end int, closed bool) {
	q := s[start]
	for i := start + 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if escapes {
				i++
			}
		case q:
			if i+1 < len(s) && s[i+1] == q {
				i++
				continue
			}
			return i + 1, true
		}
	}
	return len(s), false
}

// SkipSpace returns the offset of the first byte at or after i that is
// neither white space nor inside a comment. It stops at an executable
// comment's opener: what follows is code.
func SkipSpace[T Text](s T, i int) int {
	for i < len(s) {
		switch c := s[i]; {
		case IsSpace(c):
			i++
		case c == '#' || c == '-' && LineComment(s, i):
			i = LineEnd(s, i)
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			if BangOpener(s[i:]) > 0 {
				return i
			}
			i = CommentEnd(s, i)
		default:
			return i
		}
	}
	return i
}

// SkipToCode is SkipSpace that also passes executable-comment openers, so
// it returns the offset of the first word the server may run (whether it
// runs a versioned comment is not asked).
func SkipToCode[T Text](s T, i int) int {
	for {
		i = SkipSpace(s, i)
		if i+1 >= len(s) || s[i] != '/' || s[i+1] != '*' {
			return i
		}
		i += BangOpener(s[i:]) // SkipSpace stops only at an opener
	}
}

// EqualFold reports whether s is the upper-case ASCII keyword kw in any
// case.
func EqualFold[T Text](s T, kw string) bool {
	if len(s) != len(kw) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != kw[i] {
			return false
		}
	}
	return true
}

// HasKeyword reports whether s starts with the upper-case ASCII keyword kw,
// in any case, as a whole word.
func HasKeyword[T Text](s T, kw string) bool {
	return len(s) >= len(kw) && EqualFold(s[:len(kw)], kw) && (len(s) == len(kw) || !IsIdentByte(s[len(kw)]))
}

// ContainsFold reports whether s contains the lower-case ASCII text w in
// any case. It runs on every filled INSERT (the engine's LAST_INSERT_ID and
// ON DUPLICATE KEY checks), so positions whose byte cannot start w are
// passed over with one comparison: for a letter, c|0x20 is its lower case
// and no other byte maps onto a lower-case letter that way.
func ContainsFold[T Text](s T, w string) bool {
	if len(w) == 0 {
		return true
	}
	first := w[0]
	letter := 'a' <= first && first <= 'z'
	for i := 0; i+len(w) <= len(s); i++ {
		if c := s[i]; c != first && (!letter || c|0x20 != first) {
			continue
		}
		if FoldAt(s, i, w) {
			return true
		}
	}
	return false
}

// FoldAt reports whether s holds the lower-case ASCII text w at offset i,
// in any case.
func FoldAt[T Text](s T, i int, w string) bool {
	if i < 0 || i+len(w) > len(s) {
		return false
	}
	for j := 0; j < len(w); j++ {
		c := s[i+j]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != w[j] {
			return false
		}
	}
	return true
}

// StatementEnd returns the offset of the ';' that ends the statement
// starting at from, or len(s): semicolons in quoted text and comments do
// not count, an executable comment's content is code. escapes says
// whether a backslash escapes in '...' and "..." (false under
// NO_BACKSLASH_ESCAPES); "..." is skipped the same way whether it is a
// string or, under ANSI_QUOTES, a name.
func StatementEnd[T Text](s T, from int, escapes bool) int {
	for i := from; i < len(s); {
		switch c := s[i]; {
		case c == '\'' || c == '"':
			i, _ = QuotedEnd(s, i, escapes)
		case c == '`':
			i, _ = QuotedEnd(s, i, false)
		case c == '#' || c == '-' && LineComment(s, i):
			i = LineEnd(s, i)
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			if n := BangOpener(s[i:]); n > 0 {
				i += n
			} else {
				i = CommentEnd(s, i)
			}
		case c == ';':
			return i
		default:
			i++
		}
	}
	return len(s)
}

// MoreStatements reports whether s holds anything the server may run
// after its first statement. Both backslash rules are tried (a caller
// that does not know the session's NO_BACKSLASH_ESCAPES asks this): a
// false "yes" is the cautious answer.
func MoreStatements[T Text](s T) bool {
	semi := false
	for i := 0; i < len(s) && !semi; i++ {
		semi = s[i] == ';'
	}
	if !semi {
		return false
	}
	for _, escapes := range [2]bool{true, false} {
		if end := StatementEnd(s, 0, escapes); end < len(s) && SkipSpace(s, end+1) < len(s) {
			return true
		}
	}
	return false
}
