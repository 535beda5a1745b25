package sqltext

import (
	"strings"
	"testing"
)

func TestSkipSpace(t *testing.T) {
	tests := []struct {
		in   string
		code string // what SkipSpace leaves
		run  string // what SkipToCode leaves
	}{
		{"", "", ""},
		{"  \t\r\n\f\vSELECT", "SELECT", "SELECT"},
		{"/* c */ SELECT", "SELECT", "SELECT"},
		{"# c\nSELECT", "SELECT", "SELECT"},
		{"-- c\nSELECT", "SELECT", "SELECT"},
		{"--\tc\nSELECT", "SELECT", "SELECT"},
		{"--\nSELECT", "SELECT", "SELECT"},
		{"--", "", ""},
		{"--c\nSELECT", "--c\nSELECT", "--c\nSELECT"}, // not a comment: minus minus c
		{"-1", "-1", "-1"},
		{"/* unterminated", "", ""},
		{"-- to the end", "", ""},
		{"/*!40101 SET x=1 */", "/*!40101 SET x=1 */", "SET x=1 */"},
		{"/*! SET x=1 */", "/*! SET x=1 */", "SET x=1 */"},
		{"/*M!100100 SET */", "/*M!100100 SET */", "SET */"},
		{"/*Mine*/ SET", "SET", "SET"},
		{"/*M", "", ""},
		{"/*!", "/*!", ""},
		{"/* a */ /*!40101 /* b */ -- c\n SET", "/*!40101 /* b */ -- c\n SET", "SET"},
	}
	for _, tt := range tests {
		if got := tt.in[SkipSpace(tt.in, 0):]; got != tt.code {
			t.Errorf("SkipSpace(%q) leaves %q, want %q", tt.in, got, tt.code)
		}
		if got := tt.in[SkipToCode(tt.in, 0):]; got != tt.run {
			t.Errorf("SkipToCode(%q) leaves %q, want %q", tt.in, got, tt.run)
		}
		b := []byte(tt.in)
		if got := string(b[SkipToCode(b, 0):]); got != tt.run {
			t.Errorf("SkipToCode([]byte %q) leaves %q, want %q", tt.in, got, tt.run)
		}
	}
}

func TestStatementEnd(t *testing.T) {
	tests := []struct {
		in      string
		escapes bool
		want    []string
	}{
		{"", true, []string{""}},
		{"SELECT 1", true, []string{"SELECT 1"}},
		{"SELECT 1; SELECT 2", true, []string{"SELECT 1", " SELECT 2"}},
		{"SELECT ';'; x", true, []string{"SELECT ';'", " x"}},
		{`SELECT "a\";"; x`, true, []string{`SELECT "a\";"`, " x"}},
		{`SELECT 'a\'; x`, false, []string{`SELECT 'a\'`, " x"}},
		{`SELECT 'a\'; x`, true, []string{`SELECT 'a\'; x`}},
		{"SELECT `a;b`; x", true, []string{"SELECT `a;b`", " x"}},
		{"SELECT 'it''s;'; x", true, []string{"SELECT 'it''s;'", " x"}},
		{"SELECT 1 -- ;\n; x", true, []string{"SELECT 1 -- ;\n", " x"}},
		{"SELECT 1 # ;\n; x", true, []string{"SELECT 1 # ;\n", " x"}},
		{"SELECT 1 /* ; */; x", true, []string{"SELECT 1 /* ; */", " x"}},
		{"/*!40101 SET a=1; SET b=2 */", true, []string{"/*!40101 SET a=1", " SET b=2 */"}},
		{"SELECT 1 --; x", true, []string{"SELECT 1 --", " x"}},
		{"a;", true, []string{"a", ""}},
	}
	for _, tt := range tests {
		var got []string
		for from := 0; ; {
			end := StatementEnd(tt.in, from, tt.escapes)
			got = append(got, tt.in[from:end])
			if end == len(tt.in) {
				break
			}
			from = end + 1
		}
		if len(got) != len(tt.want) {
			t.Errorf("%q: %q, want %q", tt.in, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("%q: %q, want %q", tt.in, got, tt.want)
				break
			}
		}
	}
}

// MoreStatements tells a text with a second statement from one whose ';'
// is in data, in a comment or at the end.
func TestMoreStatements(t *testing.T) {
	for q, want := range map[string]bool{
		"INSERT INTO t VALUES ('a;b')":     false,
		"INSERT INTO t VALUES (1);":        false,
		"USE shop ; -- done":               false,
		"SELECT 1 /* ; */":                 false,
		"SELECT `a;b` FROM t ;  \n":        false,
		"SELECT 1; SELECT 2":               true,
		"USE a; INSERT INTO t VALUES (1)":  true,
		"SELECT 1;;":                       true, // an empty statement: a false yes is the cautious answer
		"SELECT 1; /*!40101 USE other */":  true,
		`SELECT 'a\'; USE other; SELECT 1`: true, // under NO_BACKSLASH_ESCAPES the string ends at \'
	} {
		if got := MoreStatements(q); got != want {
			t.Errorf("MoreStatements(%q) = %v, want %v", q, got, want)
		}
		if got := MoreStatements([]byte(q)); got != want {
			t.Errorf("MoreStatements([]byte %q) = %v, want %v", q, got, want)
		}
	}
}

func TestWords(t *testing.T) {
	for _, tt := range []struct {
		s, kw string
		want  bool
	}{
		{"SET x", "SET", true}, {"set", "SET", true}, {"SeT\t", "SET", true}, {"SETTINGS", "SET", false},
		{"SET_X", "SET", false}, {"SET$", "SET", false}, {"SETé", "SET", false}, {"SE", "SET", false}, {"", "SET", false},
		{"set;", "SET", true}, {"set(", "SET", true},
	} {
		if got := HasKeyword(tt.s, tt.kw); got != tt.want {
			t.Errorf("HasKeyword(%q, %q) = %v", tt.s, tt.kw, got)
		}
		if got := HasKeyword([]byte(tt.s), tt.kw); got != tt.want {
			t.Errorf("HasKeyword([]byte %q, %q) = %v", tt.s, tt.kw, got)
		}
	}
	for in, want := range map[string]bool{
		"SET SESSION SQL_MODE = 'ANSI'": true, "set @@session.sql_mode=''": true, "SET autocommit=0": false,
		"SET sqlXmode=1": false, "": false, "sql_mod": false,
	} {
		if got := ContainsFold(in, "sql_mode"); got != want {
			t.Errorf("ContainsFold(%q) = %v", in, got)
		}
	}
	if !EqualFold("Insert", "INSERT") || EqualFold("INSERTS", "INSERT") || EqualFold("INSERS", "INSERT") {
		t.Error("EqualFold")
	}
}

func TestBang(t *testing.T) {
	for _, tt := range []struct {
		s       string
		n       int
		certain bool
	}{
		{"/*!", 3, true}, {"/*!40101 x", 8, true}, {"/*!50700 x", 8, false}, {"/*!123 x", 6, false},
		{"/*M!100100 x", 10, false}, {"/*M!", 4, false}, {"/* x", 0, false}, {"/*M", 0, false}, {"/*", 0, false},
	} {
		n := BangOpener(tt.s)
		if n != tt.n {
			t.Errorf("BangOpener(%q) = %d, want %d", tt.s, n, tt.n)
			continue
		}
		if n > 0 && BangCertain(tt.s[:n]) != tt.certain {
			t.Errorf("BangCertain(%q) = %v", tt.s[:n], !tt.certain)
		}
	}
}

func TestQuotedEnd(t *testing.T) {
	for _, tt := range []struct {
		s       string
		escapes bool
		end     int
		closed  bool
	}{
		{"'a' x", true, 3, true}, {"'a''b' x", true, 6, true}, {`'a\'b' x`, true, 6, true}, {`'a\'b' x`, false, 4, true},
		{"`a``b` x", false, 6, true}, {"'abc", true, 4, false}, {`'\`, true, 2, false},
	} {
		if end, closed := QuotedEnd(tt.s, 0, tt.escapes); end != tt.end || closed != tt.closed {
			t.Errorf("QuotedEnd(%q, %v) = %d %v, want %d %v", tt.s, tt.escapes, end, closed, tt.end, tt.closed)
		}
	}
}

func TestNoAllocs(t *testing.T) {
	b := []byte("/* c */ /*!40101 SET SQL_MODE='a;b' */; -- x\n INSERT INTO t VALUES (1)")
	s := string(b)
	n := testing.AllocsPerRun(100, func() {
		_ = SkipToCode(b, 0) + SkipToCode(s, 0) + StatementEnd(b, 0, true) + StatementEnd(s, 0, true)
		_ = HasKeyword(b, "SET") || ContainsFold(b, "sql_mode") || BangCertain(b[8:16]) || Index(b, "*/", 0) > 0
		_ = MoreStatements(b) || MoreStatements(s)
	})
	if n != 0 {
		t.Errorf("%v allocations", n)
	}
}

// TestContainsFoldReference checks ContainsFold and FoldAt against
// strings.Contains over lower-cased text, for words that start with a
// letter and with other bytes (the fast skip is only for letters), at
// every place in short texts built from the bytes that fold or almost do.
func TestContainsFoldReference(t *testing.T) {
	alphabet := []byte{'a', 'A', 'b', 'B', '_', '@', '`', '!', 'A' - 1, 'Z' + 1, 'a' - 1, 'z' + 1, 0xc3}
	words := []string{"a", "ab", "ba", "_a", "a_b", "@a", "`", "zz"}
	var texts []string
	var gen func(prefix []byte, n int)
	gen = func(prefix []byte, n int) {
		texts = append(texts, string(prefix))
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			gen(append(prefix[:len(prefix):len(prefix)], c), n-1)
		}
	}
	gen(nil, 3)
	lower := func(s string) string {
		b := []byte(s)
		for i, c := range b {
			if 'A' <= c && c <= 'Z' {
				b[i] = c + 'a' - 'A'
			}
		}
		return string(b)
	}
	for _, s := range texts {
		for _, w := range words {
			want := strings.Contains(lower(s), w)
			if got := ContainsFold(s, w); got != want {
				t.Fatalf("ContainsFold(%q, %q) = %v, want %v", s, w, got, want)
			}
			if got := ContainsFold([]byte(s), w); got != want {
				t.Fatalf("ContainsFold([]byte %q, %q) = %v, want %v", s, w, got, want)
			}
			for i := -1; i <= len(s); i++ {
				want := i >= 0 && i+len(w) <= len(s) && lower(s[i:i+len(w)]) == w
				if got := FoldAt(s, i, w); got != want {
					t.Fatalf("FoldAt(%q, %d, %q) = %v, want %v", s, i, w, got, want)
				}
			}
		}
	}
	if !ContainsFold("INSERT ... ON DUPLICATE KEY UPDATE", "duplicate") || ContainsFold("DUPLICAT", "duplicate") || !ContainsFold("x", "") {
		t.Error("ContainsFold")
	}
}
