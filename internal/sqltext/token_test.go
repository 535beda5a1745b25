package sqltext

import "testing"

func TestNextToken(t *testing.T) {
	for _, tt := range []struct {
		s      string
		q      Quoting
		kind   TokenKind
		text   string
		closed bool
	}{
		{"", Quoting{}, TokEOF, "", false},
		{"SELECT 1", Quoting{}, TokWord, "SELECT", false},
		{"12 x", Quoting{}, TokNumber, "12", false},
		{"1.5e+3)", Quoting{}, TokNumber, "1.5e+3", false},
		{"1abc", Quoting{}, TokWord, "1abc", false},
		{"0x1f,", Quoting{}, TokWord, "0x1f", false},
		{".5", Quoting{}, TokNumber, ".5", false},
		{`'a\'b' x`, Quoting{}, TokString, `'a\'b'`, true},
		{`'a\' x`, Quoting{NoBackslashEscapes: true}, TokString, `'a\'`, true},
		{`'it''s'`, Quoting{}, TokString, `'it''s'`, true},
		{`"x" y`, Quoting{}, TokString, `"x"`, true},
		{`"x" y`, Quoting{ANSIQuotes: true}, TokQuoted, `"x"`, true},
		{"`a``b` c", Quoting{}, TokQuoted, "`a``b`", true},
		{"'open", Quoting{}, TokString, "'open", false},
		{"?, ?", Quoting{}, TokParam, "?", false},
		{"@@session.x = 1", Quoting{}, TokVar, "@@session.x", false},
		{"@'a b' = 1", Quoting{}, TokVar, "@'a b'", false},
		{"(1)", Quoting{}, TokPunct, "(", false},
		{"é x", Quoting{}, TokWord, "é", false},
	} {
		tok := NextToken(tt.s, 0, tt.q)
		if tok.Kind != tt.kind || tt.s[tok.Start:tok.End] != tt.text || tok.Closed != tt.closed {
			t.Errorf("NextToken(%q, %+v) = %+v %q, want %d %q closed %v", tt.s, tt.q, tok, tt.s[tok.Start:tok.End], tt.kind, tt.text, tt.closed)
		}
		if b := NextToken([]byte(tt.s), 0, tt.q); b != tok {
			t.Errorf("NextToken([]byte %q) = %+v, the string's %+v", tt.s, b, tok)
		}
	}
}
