package rewriter

// A small MySQL lexer: just enough to find statement boundaries, keywords,
// sequence calls and the byte ranges of values, with the session's quoting
// rules. It never allocates. What is white space, a comment, an executable
// comment and quoted text is internal/sqltext's, shared with the proxy and
// the engine.

import "github.com/leafproxy/leafproxy/internal/sqltext"

// tokKind is the token's kind: sqltext's, the module's one tokenizer.
type tokKind = sqltext.TokenKind

const (
	tEOF    = sqltext.TokEOF
	tWord   = sqltext.TokWord   // unquoted identifier or keyword (also 1abc, 0x1f)
	tNumber = sqltext.TokNumber // 12, 1.5, 1e3
	tString = sqltext.TokString // '...' (and "..." without ANSI_QUOTES)
	tQuoted = sqltext.TokQuoted // `...` (and "..." with ANSI_QUOTES)
	tParam  = sqltext.TokParam  // ?
	tVar    = sqltext.TokVar    // @x, @@x, @'x', @`x`
	tPunct  = sqltext.TokPunct  // any other single byte
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

// next returns the next token; tEOF at the end of the text. What a token
// is, is sqltext.NextToken's; the lexer adds its state (executable
// comments, the sql_mode's quoting).
func (l *lexer) next() token {
	l.skipSpace()
	// Punctuation is most of a many-row VALUES list's tokens: answered
	// here, as NextToken would (TokPunct), without the call.
	if p := l.pos; p < len(l.sql) {
		switch l.sql[p] {
		case '(', ')', ',', ';', '=':
			l.pos++
			return token{tPunct, p, p + 1}
		}
	}
	t := sqltext.NextToken(l.sql, l.pos, sqltext.Quoting{ANSIQuotes: l.mode.ANSIQuotes, NoBackslashEscapes: l.mode.NoBackslashEscapes})
	l.pos = t.End
	return token{t.Kind, t.Start, t.End}
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

// unquote returns the value of a string, quoted identifier or word token
// (sqltext.Unquote: a doubled quote, and in a string the backslash escapes
// unless NO_BACKSLASH_ESCAPES; \% and \_ lose their backslash, as an
// identifier or a tag reads them). It allocates only when the text has
// doubled quotes or escapes.
func unquote(text string, kind tokKind, mode Mode) string {
	if kind != tString && kind != tQuoted {
		return text
	}
	esc := sqltext.NoEscapes
	if kind == tString && !mode.NoBackslashEscapes {
		esc = sqltext.Backslash
	}
	return sqltext.Unquote(text, esc)
}
