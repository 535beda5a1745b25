package rewriter

// A small MySQL lexer: just enough to find statement boundaries, keywords,
// sequence calls and the byte ranges of values, with the session's quoting
// rules. It never allocates.

type tokKind uint8

const (
	tEOF    tokKind = iota
	tWord           // unquoted identifier or keyword (also 1abc, 0x1f)
	tNumber         // 12, 1.5, 1e3
	tString         // '...' (and "..." without ANSI_QUOTES)
	tQuoted         // `...` (and "..." with ANSI_QUOTES)
	tParam          // ?
	tVar            // @x, @@x, @'x', @`x`
	tPunct          // any other single byte
)

type token struct {
	kind       tokKind
	start, end int
}

type lexer struct {
	s    string
	pos  int
	mode Mode
	// inBang is set inside /*! ... */ (and MariaDB's /*M! ... */), whose
	// content the server executes, so it is lexed as code.
	inBang bool
	// versioned counts the executable comments passed whose execution
	// depends on the server (see bangCertain). With hideVersioned they
	// are skipped as plain comments instead of lexed as code.
	versioned     int
	hideVersioned bool
	// bangVersioned: the executable comment inBang is in is one of those.
	bangVersioned bool
}

func isIdentByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$' || c >= 0x80
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// skipSpace skips whitespace, comments and executable-comment markers.
func (l *lexer) skipSpace() {
	s := l.s
	for l.pos < len(s) {
		c := s[l.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			l.pos++
		case c == '#':
			l.skipLine()
		case c == '-' && l.pos+1 < len(s) && s[l.pos+1] == '-' && (l.pos+2 == len(s) || s[l.pos+2] <= ' '):
			l.skipLine()
		case c == '/' && l.pos+1 < len(s) && s[l.pos+1] == '*':
			if n := bangOpener(s[l.pos:]); n > 0 && !l.inBang {
				certain := bangCertain(s[l.pos : l.pos+n])
				if !certain {
					l.versioned++
				}
				if certain || !l.hideVersioned {
					l.inBang, l.bangVersioned = true, !certain
					l.pos += n
					continue
				}
			}
			end := indexStr(s, "*/", l.pos+2)
			if end < 0 {
				l.pos = len(s)
			} else {
				l.pos = end + 2
			}
		case c == '*' && l.inBang && l.pos+1 < len(s) && s[l.pos+1] == '/':
			l.inBang = false
			l.pos += 2
		default:
			return
		}
	}
}

// bangOpener returns the length of an executable-comment opener at the
// start of s ("/*!", "/*!50001", "/*M!", "/*M!100100"), or 0.
func bangOpener(s string) int {
	i := 2
	if i < len(s) && s[i] == 'M' {
		i++
	}
	if i >= len(s) || s[i] != '!' {
		return 0
	}
	i++
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}

// bangCertain reports whether every server runs the content of the
// executable comment opened by op (a bangOpener match). MySQL and MariaDB
// both run `/*!` and `/*!NNNNN` with a 5-digit version below 50700.
// Undecidable without the server's version: 5-digit versions from 50700
// (MariaDB skips them all, MySQL runs those up to its version), 6-digit
// versions (/*!MMmmpp, compared with the server's), and every `/*M!`
// (MySQL never runs it; the TiDB parser reads it as a comment). `/*!` with
// 1-4 or 7+ digits is also refused: the servers read some of the digits as
// code, which the planner does not model.
func bangCertain(op string) bool {
	if op[2] == 'M' {
		return false
	}
	d := op[3:]
	switch len(d) {
	case 0:
		return true
	case 5:
		return d < "50700"
	}
	return false
}

func (l *lexer) skipLine() {
	for l.pos < len(l.s) && l.s[l.pos] != '\n' {
		l.pos++
	}
}

func indexStr(s, sub string, from int) int {
	for i := from; i+len(sub) <= len(s); i++ {
		if s[i] == sub[0] && s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// next returns the next token; tEOF at the end of the text.
func (l *lexer) next() token {
	l.skipSpace()
	s := l.s
	start := l.pos
	if start >= len(s) {
		return token{kind: tEOF, start: len(s), end: len(s)}
	}
	c := s[start]
	switch {
	case c == '\'':
		l.pos = l.skipQuoted(start, '\'', !l.mode.NoBackslashEscapes)
		return token{tString, start, l.pos}
	case c == '"':
		if l.mode.ANSIQuotes {
			l.pos = l.skipQuoted(start, '"', false)
			return token{tQuoted, start, l.pos}
		}
		l.pos = l.skipQuoted(start, '"', !l.mode.NoBackslashEscapes)
		return token{tString, start, l.pos}
	case c == '`':
		l.pos = l.skipQuoted(start, '`', false)
		return token{tQuoted, start, l.pos}
	case isDigit(c):
		return l.number(start)
	case c == '.' && start+1 < len(s) && isDigit(s[start+1]) && (start == 0 || !isIdentByte(s[start-1]) && s[start-1] != '`' && s[start-1] != '"'):
		return l.number(start)
	case isIdentByte(c):
		i := start + 1
		for i < len(s) && isIdentByte(s[i]) {
			i++
		}
		l.pos = i
		return token{tWord, start, i}
	case c == '?':
		l.pos++
		return token{tParam, start, l.pos}
	case c == '@':
		i := start + 1
		if i < len(s) && s[i] == '@' {
			i++
		}
		if i < len(s) && (s[i] == '\'' || s[i] == '"' || s[i] == '`') {
			i = l.skipQuoted(i, s[i], s[i] != '`' && !l.mode.NoBackslashEscapes)
		} else {
			for i < len(s) && (isIdentByte(s[i]) || s[i] == '.') {
				i++
			}
		}
		l.pos = i
		return token{tVar, start, i}
	}
	l.pos++
	return token{tPunct, start, l.pos}
}

// number lexes digits[.digits][e[+-]digits]; if identifier bytes follow
// (1abc, 0x1f, 0b01) the whole run is a word.
func (l *lexer) number(start int) token {
	s := l.s
	i := start
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && isDigit(s[j]) {
			for j < len(s) && isDigit(s[j]) {
				j++
			}
			i = j
		}
	}
	kind := tNumber
	for i < len(s) && isIdentByte(s[i]) {
		i++
		kind = tWord
	}
	l.pos = i
	return token{kind, start, i}
}

// skipQuoted returns the offset just past the quoted text starting at
// s[start] == q. Unterminated text runs to the end.
func (l *lexer) skipQuoted(start int, q byte, escapes bool) int {
	end, _ := quotedEnd(l.s, start, escapes)
	return end
}

// quotedEnd returns the offset just past the quoted text starting at
// s[start] (the quote character) and whether it is closed. A doubled quote
// stands for itself; backslash escapes the next byte when escapes is set.
// Unterminated text runs to the end.
func quotedEnd(s string, start int, escapes bool) (end int, closed bool) {
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

// text returns the token's source text.
func (l *lexer) text(t token) string { return l.s[t.start:t.end] }

// is reports whether t is the unquoted keyword kw (upper case), in any case.
func (l *lexer) is(t token, kw string) bool {
	return t.kind == tWord && eqFold(l.s[t.start:t.end], kw)
}

// isPunct reports whether t is the single byte c.
func (l *lexer) isPunct(t token, c byte) bool {
	return t.kind == tPunct && l.s[t.start] == c
}

// eqFold compares s with the upper-case ASCII keyword kw, ignoring case.
func eqFold(s, kw string) bool {
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

// unquote returns the value of a string, quoted identifier or word token.
// It allocates only when the text has doubled quotes or escapes.
func unquote(text string, kind tokKind, mode Mode) string {
	if kind != tString && kind != tQuoted || len(text) < 2 {
		return text
	}
	q := text[0]
	body := text[1:]
	if len(body) > 0 && body[len(body)-1] == q {
		body = body[:len(body)-1]
	}
	escapes := kind == tString && !mode.NoBackslashEscapes
	plain := true
	for i := 0; i < len(body); i++ {
		if body[i] == q || escapes && body[i] == '\\' {
			plain = false
			break
		}
	}
	if plain {
		return body
	}
	out := make([]byte, 0, len(body))
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case c == q && i+1 < len(body) && body[i+1] == q:
			i++
		case escapes && c == '\\' && i+1 < len(body):
			i++
			c = unescape(body[i])
		}
		out = append(out, c)
	}
	return string(out)
}

// unescape maps the byte after a backslash to its value (MySQL's table;
// \% and \_ keep their backslash in MySQL, which only matters for LIKE).
func unescape(c byte) byte {
	switch c {
	case '0':
		return 0
	case 'b':
		return '\b'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'Z':
		return 26
	}
	return c
}
