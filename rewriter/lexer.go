package rewriter

// A small MySQL lexer: just enough to find statement boundaries, keywords,
// sequence calls and the byte ranges of values, with the session's quoting
// rules. It never allocates. What is white space, a comment, an executable
// comment and quoted text is internal/sqltext's, shared with the proxy and
// the engine.

import "github.com/leafproxy/leafproxy/internal/sqltext"

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
	sql  string
	pos  int
	mode Mode
	// inBang is set inside /*! ... */ (and MariaDB's /*M! ... */), whose
	// content the server executes, so it is lexed as code.
	inBang bool
	// versioned counts the executable comments passed whose execution
	// depends on the server (see sqltext.BangCertain). With hideVersioned they
	// are skipped as plain comments instead of lexed as code.
	versioned     int
	hideVersioned bool
	// bangVersioned: the executable comment inBang is in is one of those.
	bangVersioned bool
}

// skipSpace skips whitespace, comments and executable-comment markers.
func (l *lexer) skipSpace() {
	s := l.sql
	for l.pos < len(s) {
		c := s[l.pos]
		switch {
		case sqltext.IsSpace(c):
			l.pos++
		case c == '#' || c == '-' && sqltext.LineComment(s, l.pos):
			l.pos = sqltext.LineEnd(s, l.pos)
		case c == '/' && l.pos+1 < len(s) && s[l.pos+1] == '*':
			if n := sqltext.BangOpener(s[l.pos:]); n > 0 && !l.inBang {
				certain := sqltext.BangCertain(s[l.pos : l.pos+n])
				if !certain {
					l.versioned++
				}
				if certain || !l.hideVersioned {
					l.inBang, l.bangVersioned = true, !certain
					l.pos += n
					continue
				}
			}
			l.pos = sqltext.CommentEnd(s, l.pos)
		case c == '*' && l.inBang && l.pos+1 < len(s) && s[l.pos+1] == '/':
			l.inBang = false
			l.pos += 2
		default:
			return
		}
	}
}

// next returns the next token; tEOF at the end of the text.
func (l *lexer) next() token {
	l.skipSpace()
	s := l.sql
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
	case sqltext.IsDigit(c):
		return l.number(start)
	case c == '.' && start+1 < len(s) && sqltext.IsDigit(s[start+1]) && (start == 0 || !sqltext.IsIdentByte(s[start-1]) && s[start-1] != '`' && s[start-1] != '"'):
		return l.number(start)
	case sqltext.IsIdentByte(c):
		i := start + 1
		for i < len(s) && sqltext.IsIdentByte(s[i]) {
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
			for i < len(s) && (sqltext.IsIdentByte(s[i]) || s[i] == '.') {
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
	s := l.sql
	i := start
	for i < len(s) && sqltext.IsDigit(s[i]) {
		i++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && sqltext.IsDigit(s[i]) {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && sqltext.IsDigit(s[j]) {
			for j < len(s) && sqltext.IsDigit(s[j]) {
				j++
			}
			i = j
		}
	}
	kind := tNumber
	for i < len(s) && sqltext.IsIdentByte(s[i]) {
		i++
		kind = tWord
	}
	l.pos = i
	return token{kind, start, i}
}

// skipQuoted returns the offset just past the quoted text starting at
// s[start] == q. Unterminated text runs to the end.
func (l *lexer) skipQuoted(start int, q byte, escapes bool) int {
	end, _ := sqltext.QuotedEnd(l.sql, start, escapes)
	return end
}

// text returns the token's source text.
func (l *lexer) text(t token) string { return l.sql[t.start:t.end] }

// is reports whether t is the unquoted keyword kw (upper case), in any case.
func (l *lexer) is(t token, kw string) bool {
	return t.kind == tWord && sqltext.EqualFold(l.sql[t.start:t.end], kw)
}

// isPunct reports whether t is the single byte c.
func (l *lexer) isPunct(t token, c byte) bool {
	return t.kind == tPunct && l.sql[t.start] == c
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
