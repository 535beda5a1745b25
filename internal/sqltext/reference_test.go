package sqltext

import (
	"strings"
	"testing"
)

// The recognisers Classify replaced, as they were (engine/ddl.go,
// proxy/keyword.go and proxy/relay.go, admin/parse.go,
// internal/killsql/kill.go), kept as the reference FuzzClassify compares
// Classify's answers with: the refactor (issue 31) changed no answer.

func refIsDDL(text string) bool {
	i := SkipToCode(text, 0)
	for i < len(text) && text[i] == '(' {
		i = SkipToCode(text, i+1)
	}
	w := text[i:]
	for _, kw := range [...]string{"ALTER", "DROP", "CREATE", "RENAME", "TRUNCATE"} {
		if HasKeyword(w, kw) {
			return true
		}
	}
	return false
}

func refHasDDL(text string) bool {
	if refIsDDL(text) {
		return true
	}
	after := false
	for i := strings.IndexByte(text, ';'); i >= 0 && !after; {
		after = refIsDDL(text[i+1:])
		j := strings.IndexByte(text[i+1:], ';')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	if !after {
		return false
	}
	for _, escapes := range [2]bool{true, false} {
		for end := StatementEnd(text, 0, escapes); end < len(text); end = StatementEnd(text, end+1, escapes) {
			if refIsDDL(text[end+1:]) {
				return true
			}
		}
		if strings.IndexByte(text, '\\') < 0 {
			break
		}
	}
	return false
}

func refLoneStatement(text string) bool {
	for _, escapes := range [2]bool{true, false} {
		end := StatementEnd(text, 0, escapes)
		for end < len(text) && text[end] == ';' {
			end = SkipSpace(text, end+1)
		}
		if end < len(text) {
			return false
		}
	}
	return true
}

// refAdmin is admin.parse's look before it tokenized: the first byte, the
// second word, and the first word one of the four tokens checked.
func refAdmin(sql string) bool {
	i := SkipSpace(sql, 0)
	if i >= len(sql) {
		return false
	}
	switch sql[i] | 0x20 {
	case 's', 'c', 'a', 'd':
	default:
		return false
	}
	j := i
	for j < len(sql) && IsIdentByte(sql[j]) {
		j++
	}
	if !HasKeyword(sql[SkipSpace(sql, j):], "LEAFPROXY") {
		return false
	}
	switch strings.ToUpper(sql[i:j]) {
	case "SHOW", "CREATE", "ALTER", "DROP":
		return true
	}
	return false
}

func FuzzClassify(f *testing.F) {
	for _, s := range []string{
		"SELECT 1", "INSERT INTO t VALUES (1); ALTER TABLE t ADD c INT", "SELECT 'a;b'", `SELECT 'a\'; DROP TABLE t; -- '`,
		"/*!40101 SET SQL_MODE='' */;", "SHOW LEAFPROXY SEQUENCES", "/* c */ CREATE LEAFPROXY SEQUENCE x", "USE shop",
		"KILL 5", "/*! KILL 5 */", "((CREATE", "SELECT 1;;", "SELECT 1; -- x\n", "SET STATEMENT sql_mode='' FOR SELECT 1",
		"EXECUTE IMMEDIATE 'SELECT 1'", "--c\nALTER", "SELECT 1;/*!40101 DROP TABLE t */", "ｓhow leafproxy x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		c := ClassifyString(q)
		if b := Classify([]byte(q)); b != c {
			t.Fatalf("Classify(%q): the string's %+v, the bytes' %+v", q, c, b)
		}
		code, plain := q[SkipToCode(q, 0):], q[SkipSpace(q, 0):]
		for _, kw := range []Keyword{Alter, Create, Drop, Execute, Insert, Kill, Load, Prepare, Rename, Replace, Set, Show, Truncate, Use} {
			if got, want := c.Word() == kw, HasKeyword(code, kw.String()); got != want {
				t.Fatalf("Classify(%q).Word() = %q: %s is %v", q, c.Word(), kw, want)
			}
			if got, want := c.PlainWord() == kw, HasKeyword(plain, kw.String()); got != want {
				t.Fatalf("Classify(%q).PlainWord() = %q: %s is %v", q, c.PlainWord(), kw, want)
			}
		}
		checks := []struct {
			what      string
			got, want bool
		}{
			{"DDL", c.DDL(), refHasDDL(q)},
			{"Lone", c.Lone(), refLoneStatement(q)},
			{"Multi", c.Multi(), MoreStatements(q)},
			{"Semicolon", c.Semicolon(), strings.IndexByte(q, ';') >= 0},
			{"Admin", c.Admin(), refAdmin(q)},
			{"SetsSQLMode", c.SetsSQLMode(), HasKeyword(code, "SET") && ContainsFold(plain, "sql_mode")},
			{"SeqCall", c.SeqCall(), SeqCalls(q, -1) > 0},
		}
		for _, ck := range checks {
			if ck.got != ck.want {
				t.Fatalf("Classify(%q).%s() = %v, the reference says %v", q, ck.what, ck.got, ck.want)
			}
		}
	})
}
