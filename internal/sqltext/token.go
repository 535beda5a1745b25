package sqltext

// TokenKind is what a token is to MySQL's lexer.
type TokenKind uint8

// The token kinds NextToken tells apart.
const (
	TokEOF    TokenKind = iota
	TokWord             // unquoted identifier or keyword (also 1abc, 0x1f)
	TokNumber           // 12, 1.5, 1e3, .5
	TokString           // '...' (and "..." without ANSI_QUOTES)
	TokQuoted           // `...` (and "..." with ANSI_QUOTES)
	TokParam            // ?
	TokVar              // @x, @@x, @'x', @`x`
	TokPunct            // any other single byte
)

// Token is one token of a text: its kind and byte range. Closed reports,
// for TokString and TokQuoted, that the closing quote is there
// (unterminated text runs to the end).
type Token struct {
	Kind       TokenKind
	Start, End int
	Closed     bool
}

// Quoting is the sql_mode's say in how quotes read: ANSIQuotes makes
// "..." a name, NoBackslashEscapes makes a backslash in a string itself.
type Quoting struct {
	ANSIQuotes, NoBackslashEscapes bool
}

// NextToken reads the token starting at start, which the caller has moved
// past white space and comments (SkipSpace, or its own lexer's rules for
// executable comments): the one tokenizer of the module (the rewriter's
// lexer, the admin statements). TokEOF at the end of the text.
func NextToken[T Text](s T, start int, q Quoting) Token {
	if start >= len(s) {
		return Token{Kind: TokEOF, Start: len(s), End: len(s)}
	}
	quoted := func(kind TokenKind, escapes bool) Token {
		end, closed := QuotedEnd(s, start, escapes)
		return Token{Kind: kind, Start: start, End: end, Closed: closed}
	}
	switch c := s[start]; {
	case c == '\'':
		return quoted(TokString, !q.NoBackslashEscapes)
	case c == '"':
		if q.ANSIQuotes {
			return quoted(TokQuoted, false)
		}
		return quoted(TokString, !q.NoBackslashEscapes)
	case c == '`':
		return quoted(TokQuoted, false)
	case IsDigit(c):
		return number(s, start)
	case c == '.' && start+1 < len(s) && IsDigit(s[start+1]) && (start == 0 || !IsIdentByte(s[start-1]) && s[start-1] != '`' && s[start-1] != '"'):
		return number(s, start)
	case IsIdentByte(c):
		return Token{Kind: TokWord, Start: start, End: wordEnd(s, start+1)}
	case c == '?':
		return Token{Kind: TokParam, Start: start, End: start + 1}
	case c == '@':
		i := start + 1
		if i < len(s) && s[i] == '@' {
			i++
		}
		if i < len(s) && (s[i] == '\'' || s[i] == '"' || s[i] == '`') {
			i, _ = QuotedEnd(s, i, s[i] != '`' && !q.NoBackslashEscapes)
		} else {
			for i < len(s) && (IsIdentByte(s[i]) || s[i] == '.') {
				i++
			}
		}
		return Token{Kind: TokVar, Start: start, End: i}
	}
	return Token{Kind: TokPunct, Start: start, End: start + 1}
}

// number lexes digits[.digits][e[+-]digits]; if identifier bytes follow
// (1abc, 0x1f, 0b01) the whole run is a word.
func number[T Text](s T, start int) Token {
	i := start
	for i < len(s) && IsDigit(s[i]) {
		i++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && IsDigit(s[i]) {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && IsDigit(s[j]) {
			for j < len(s) && IsDigit(s[j]) {
				j++
			}
			i = j
		}
	}
	kind := TokNumber
	for i < len(s) && IsIdentByte(s[i]) {
		i++
		kind = TokWord
	}
	return Token{Kind: kind, Start: start, End: i}
}
