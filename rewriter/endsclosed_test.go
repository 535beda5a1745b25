package rewriter

import "testing"

// endsClosed reads what follows the last token with internal/sqltext's
// comment rules: a comment left open is no clean end; the end of an
// executable comment, line comments and closed comments are.
func TestEndsClosed(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want bool
	}{
		{"(1)", true},
		{"(1) -- c", true},
		{"(1) # c\n", true},
		{"(1) /* c */", true},
		{"(1) /* c", false},
		{"(1) /*", false},
		{"/*! (1) */", true},
		{"/*! (1) */ /* c", false},
		{"(1) /*!*/", true},
		{"'a", false},
		{"'a'", true},
	} {
		l := lexer{s: tc.sql}
		var last token
		for tok := l.next(); tok.kind != tEOF; tok = l.next() {
			last = tok
		}
		if got := l.endsClosed(last); got != tc.want {
			t.Errorf("endsClosed after %q = %v, want %v", tc.sql, got, tc.want)
		}
	}
}
