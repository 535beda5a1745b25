package errstyle

import "testing"

// TestTemplatesMatchTheServer: the templates match MariaDB 10.11's own
// messages (copied from the server) and the proxy's forms of them.
func TestTemplatesMatchTheServer(t *testing.T) {
	for _, tc := range []struct {
		code uint16
		msg  string
		ok   bool
	}{
		{4084, "Sequence 't1.s' has run out", true},
		{4084, "Sequence 'order' has run out (leafproxy: its MAXVALUE is 3 ...)", true},
		{4085, "Sequence 't1.s2' has out of range value for options", true},
		{4091, "Unknown SEQUENCE: 'nosuch'", true},
		{4091, "Unknown SEQUENCE: 'ordr' (did you mean 'order'?)", true},
		{1050, "Table 's' already exists", true},
		{1103, "Incorrect table name ''", true},
		{1094, "Unknown thread id: 999999", true},
		{1957, "Unknown query id: 99999", true},
		{1054, "Unknown column 'nope' in 'SELECT'", true},
		{1064, "You have an error in your SQL syntax; check the manual that corresponds to your MariaDB server version for the right syntax to use near '' at line 1", true},
		{167, "Out of range value for column 'id' at row 2 (leafproxy: tag 'small' ...)", true},
		{1062, "Duplicate entry '5' for key 'PRIMARY'", true},
		{1210, "Incorrect arguments to NEXTVAL: a block of 0 IDs", true},
		{1235, "leafproxy: LOAD DATA INFILE into shop.orders ...", true},
		{1105, "leafproxy: no ID for sequence \"t\" after waiting 2s", true},
		// Not the server's words, not the proxy's prefix.
		{1235, "SETVAL('s', ...) is not supported", false},
		{1105, "no ID for sequence \"t\"", false},
		{1050, "Sequence 'x' already exists", false},
		{4091, "unknown sequence 'x'", false},
		{1235, "Unknown SEQUENCE: 'x'", false}, // the server's words of another code
	} {
		if err := Check(tc.code, tc.msg); (err == nil) != tc.ok {
			t.Errorf("Check(%d, %q) = %v, want ok %v", tc.code, tc.msg, err, tc.ok)
		}
		want := tc.msg
		if !tc.ok {
			want = Prefix + tc.msg
		}
		if got := Styled(tc.code, tc.msg); got != want || Check(tc.code, got) != nil {
			t.Errorf("Styled(%d, %q) = %q, want %q", tc.code, tc.msg, got, want)
		}
	}
}
