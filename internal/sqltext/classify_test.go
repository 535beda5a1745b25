package sqltext

import (
	"strings"
	"testing"
)

// The cases below were the tests of the recognisers Classify replaced:
// the proxy's startsSet and containsFold (keyword_test.go), the engine's
// isDDL and hasDDL, the rewriter's hasSeqCall and mayRewrite, the admin
// package's first-word look. FuzzClassify compares Classify with those
// recognisers' code, kept here as the reference.

func TestClassifyWord(t *testing.T) {
	for _, tt := range []struct {
		q           string
		word, plain Keyword
	}{
		{"SET sql_mode = ''", Set, Set},
		{"set\tautocommit=1", Set, Set},
		{"  /* pool */ -- x\n# y\n SET @a = 1", Set, Set},
		{"/*!40101 SET SQL_MODE='NO_AUTO_VALUE_ON_ZERO' */", Set, Other},
		{"/*!40101 SET @OLD_SQL_MODE=@@SQL_MODE, SQL_MODE='NO_AUTO_VALUE_ON_ZERO' */;", Set, Other},
		{"/*!SET sql_mode=''*/", Set, Other},
		{"/*! set sql_mode=''*/", Set, Other},
		{"/*!99999 SET sql_mode='' */", Set, Other}, // maybe not run: a needless re-read
		{"/*M!100100 SET sql_mode='' */", Set, Other},
		{"/*M!SET sql_mode='' */", Set, Other},
		{"/* c */ /*!40101 /* inner */ SET sql_mode='' */", Set, Other},
		{"/*Mine*/ SET sql_mode=''", Set, Set},
		{"SET STATEMENT max_statement_time=1 FOR SELECT 1", Set, Set},
		{"SELECT 1", Other, Other},
		{"SETTINGS", Other, Other},
		{"/*!40101 SELECT 1 */", Other, Other},
		{"/* SET */ SELECT 1", Other, Other},
		{"/*!40101", Other, Other},
		{"/* unterminated SET", Other, Other},
		{"/*M", Other, Other},
		{"", Other, Other},
		{"INSERT INTO t SET a = 1", Insert, Insert},
		{"use shop", Use, Use},
		{"USE`shop`", Use, Use},
		{"/*!USE shop */", Use, Other},
		{"KILL 5", Kill, Kill},
		{"kill query 5", Kill, Kill},
		{"/*! KILL 5 */", Kill, Other},
		{"KILL5", Other, Other},
		{"(SELECT 1)", Other, Other},
		{"Replace t VALUES (1)", Replace, Replace},
		{"LOAD DATA", Load, Load},
		{"prepare s FROM 'x'", Prepare, Prepare},
		{"EXECUTE IMMEDIATE 'x'", Execute, Execute},
		{"show tables", Show, Show},
		{"CREATE TABLE t (a INT)", Create, Create},
		{"ALTER TABLE t", Alter, Alter},
		{"DROP TABLE t", Drop, Drop},
		{"RENAME TABLE a TO b", Rename, Rename},
		{"truncate t", Truncate, Truncate},
		{"TRUNCATED", Other, Other},
	} {
		c := ClassifyString(tt.q)
		if c.Word() != tt.word || c.PlainWord() != tt.plain {
			t.Errorf("Classify(%q): Word %q, PlainWord %q; want %q, %q", tt.q, c.Word(), c.PlainWord(), tt.word, tt.plain)
		}
		if b := Classify([]byte(tt.q)); b != c {
			t.Errorf("Classify([]byte %q) = %+v, the string's %+v", tt.q, b, c)
		}
	}
}

func TestClassifySetsSQLMode(t *testing.T) {
	for q, want := range map[string]bool{
		"SET SESSION SQL_MODE = 'ANSI'":                       true,
		"set @@session.sql_mode=''":                           true,
		"SET sql_mode=CONCAT(@@sql_mode)":                     true,
		"/*!40101 SET SQL_MODE='NO_AUTO_VALUE_ON_ZERO' */":    true,
		"SET STATEMENT sql_mode='' FOR SELECT 1":              true, // a needless re-read
		"SET autocommit=0":                                    false,
		"SET NAMES utf8mb4":                                   false,
		"SET sqlXmode=1":                                      false,
		"/* sql_mode */ SET autocommit=0":                     false,
		"SELECT @@sql_mode":                                   false,
		"INSERT INTO t SET sql_mode = 1":                      false,
		"":                                                    false,
		"SET @a = 1; SET sql_mode = ''":                       true,
		"/* c */ SET @x = 1 /* sql_mode in a comment too */":  true, // as the proxy read it: any mention
		"/*!40101 SET @OLD_SQL_MODE=@@SQL_MODE */; SELECT 1;": true,
	} {
		if got := ClassifyString(q).SetsSQLMode(); got != want {
			t.Errorf("Classify(%q).SetsSQLMode() = %v, want %v", q, got, want)
		}
	}
}

func TestClassifyDDL(t *testing.T) {
	for q, want := range map[string]bool{
		"ALTER TABLE t ADD c INT":             true,
		"  /* x */ drop table t":              true,
		"create table t (id int)":             true,
		"RENAME TABLE a TO b":                 true,
		"truncate t":                          true,
		"SELECT 1":                            false,
		"INSERT INTO alter_log ...":           false,
		"/* unterminated":                     false,
		"":                                    false,
		"-- c\nALTER TABLE t ADD c INT":       true,
		"# c\nDROP TABLE t":                   true,
		"/*!40101 ALTER TABLE t ADD c INT */": true,
		"((CREATE":                            true,
		"( /* c */ (DROP":                     true,
		"--c\nALTER TABLE t":                  false, // minus minus c ALTER: not a statement start
		"ALTERNATIVE":                         false,
		"SELECT 1 -- \nALTER":                 false,
		// Every statement counts.
		"INSERT INTO t VALUES (1); ALTER TABLE t ADD c INT":    true,
		"SELECT 1;\n  DROP TABLE x":                            true,
		"SELECT 'a;b'":                                         false,
		"INSERT INTO t VALUES (1); INSERT INTO t VALUES (2)":   false,
		"SELECT 1; -- c\n# d\n/* e */ ALTER TABLE t ADD c INT": true,
		"SELECT 1;/*!40101 DROP TABLE t */":                    true,
		"SELECT 1;((TRUNCATE t))":                              true,
		// A ';' in quoted text or a comment is no statement boundary.
		"INSERT INTO notes (body) VALUES ('see you; create later')": false,
		"INSERT INTO notes (body) VALUES (\"x; drop it\")":          false,
		"SELECT `a;drop` FROM t":                                    false,
		"SELECT 1 /* ; create */":                                   false,
		"SELECT 1 -- ; create\n":                                    false,
		// Both backslash rules: under NO_BACKSLASH_ESCAPES the string
		// ends at the backslash and DROP starts a statement.
		`SELECT 'a\'; DROP TABLE t; -- '`: true,
		`SELECT 'a\\'; SELECT 'b; DROP'`:  false,
	} {
		if got := ClassifyString(q).DDL(); got != want {
			t.Errorf("Classify(%q).DDL() = %v, want %v", q, got, want)
		}
	}
}

func TestClassifySeqCall(t *testing.T) {
	dense := strings.Repeat("over vVv ", 30)
	for _, tt := range []struct {
		s    string
		want bool
	}{
		{"", false}, {"va", false}, {"VAL", false}, {"v a l", false}, {dense, false},
		{"INSERT INTO t VALUES (1)", false}, {"INSERT INTO t VALUE (1)", false}, {"INSERT INTO t VALUE(1)", false},
		{"SELECT 'value', interval, valid", false}, {"VALUE", false}, {"VALUE F", false}, {"VALUE FORM", false}, {"VALUEFOR", false},
		{"nextVal", true}, {dense + "NEXTVAL(a)", true}, {"LastVal(a)", true}, {"x.nextval", true}, {"vvvvvvvvvvvvvvvvvnextval", true},
		{"SETVAL('a', 5)", true}, {"setval", true},
		{"NEXT VALUE FOR s", true}, {"previous value for s", true}, {"VALUE FOR", true}, {dense + "next VALUE\tFOR s", true},
		{"NEXT VALUE/* c */FOR s", true}, {"NEXT VALUE -- c\nFOR s", true}, {"NEXT VALUE # c\n for s", true},
		{"/*! SELECT NEXT VALUE */ FOR s", true}, {"/*! SELECT NEXT VALUE /*! x */ FOR s */", true}, {"NEXT VALUE /*!50000 FOR s */", true},
		{"SELECT 'value for money'", true}, // quote-blind: a false maybe
		{"SELECT LEAFPROXY_DECODE('t', 5)", true}, {"select leafproxy_decode", true}, {"LEAFPROXY_DECOD", false}, {"_DECODE", false},
	} {
		if got := ClassifyString(tt.s).SeqCall(); got != tt.want {
			t.Errorf("Classify(%q).SeqCall() = %v", tt.s, got)
		}
	}
	if n := SeqCalls("SELECT NEXTVAL(a), LASTVAL(b), NEXT VALUE FOR c, LEAFPROXY_DECODE('t', 1)", -1); n != 4 {
		t.Errorf("SeqCalls counts %d, want 4", n)
	}
	if n := SeqCalls("SELECT NEXTVAL(a), LASTVAL(b), NEXTVAL(c)", 2); n != 2 {
		t.Errorf("SeqCalls with most 2 counts %d", n)
	}
}

// TestClassifyPlannable: the rewriter's filter, MayRewrite, is SeqCall or
// Plannable.
func TestClassifyPlannable(t *testing.T) {
	no := []string{
		"SELECT * FROM t WHERE id = 42",
		"UPDATE t SET a = 1 WHERE b = 2",
		"DELETE FROM orders",
		"SELECT 1; SELECT 2",
		"/* insert */ SELECT 1",
		"SELECT 'val', 'value' FROM t WHERE a = 'values'",
		"UPDATE t SET a = 'value' WHERE b > NOW() - INTERVAL 1 DAY",
		"SET a = 1",
		"",
	}
	maybe := []string{
		"INSERT INTO t VALUES (1)",
		"  /* c */ -- x\n# y\n insert into t values (1)",
		"replace t values (1)",
		"SELECT 1; INSERT INTO t VALUES (1)",
		"SELECT 1;/*c*/INSERT INTO t VALUES (1)",
		"/*!40000 INSERT INTO t VALUES (1) */",
		"SELECT NEXTVAL('a')",
		"select next value for a",
		"SELECT lastVAL(a)",
		"SELECT 'next value for'",
		"PREPARE s FROM @q",
		"execute s using @a",
		"SELECT 1; EXECUTE IMMEDIATE 'SELECT 2'",
		"SELECT 'x;insert'", // quote-blind: a false maybe
		"SET STATEMENT a=1 FOR SELECT 1",
		"SET /*! STATEMENT a=1 FOR */ SELECT 1",
		"LOAD DATA LOCAL INFILE 'f' INTO TABLE t",
	}
	for _, q := range no {
		if c := ClassifyString(q); c.SeqCall() || c.Plannable() {
			t.Errorf("Classify(%q) may be rewritten", q)
		}
	}
	for _, q := range maybe {
		if c := ClassifyString(q); !c.SeqCall() && !c.Plannable() {
			t.Errorf("Classify(%q) is never rewritten", q)
		}
	}
}

func TestClassifyDynamicModal(t *testing.T) {
	for _, tt := range []struct {
		q                    string
		plan, dynamic, modal bool
	}{
		{"SELECT 1", false, false, false},
		{"INSERT INTO t VALUES ('a')", true, false, false},
		{"LOAD DATA LOCAL INFILE 'f' INTO TABLE t", true, false, true},
		{"PREPARE s FROM 'INSERT INTO t VALUES (1)'", true, true, false},
		{"PREPARE s FROM @q", true, false, false},
		{"EXECUTE s", true, false, false},
		{"EXECUTE IMMEDIATE \"SELECT 1\"", true, true, false},
		{"SET STATEMENT a=1 FOR INSERT INTO t VALUES (1)", true, false, true},
		{"SET STATEMENT a='x' FOR EXECUTE IMMEDIATE 'SELECT 1'", true, true, true},
		{"SET STATEMENT a='x' FOR SELECT 1", true, false, true},
		{"/*! INSERT INTO t VALUES (1) */", true, false, false},
		{"/*! INSERT INTO t VALUES ('a') */", true, true, false},
		{"SET /*! STATEMENT a=1 FOR */ SELECT 'x'", true, true, true},
		{"SELECT 1; LOAD DATA LOCAL INFILE 'f' INTO TABLE t", true, false, true},
		{"PREPARE s FROM 'x'; LOAD DATA LOCAL INFILE 'f' INTO TABLE t", true, true, false}, // Modal is not looked for past Dynamic
	} {
		c := ClassifyString(tt.q)
		if c.Plannable() != tt.plan || c.Dynamic() != tt.dynamic || c.Modal() != tt.modal {
			t.Errorf("Classify(%q): plannable %v, dynamic %v, modal %v; want %v, %v, %v", tt.q, c.Plannable(), c.Dynamic(), c.Modal(), tt.plan, tt.dynamic, tt.modal)
		}
	}
	for _, tt := range []struct {
		q    string
		from int
		want bool
	}{
		{"SET STATEMENT a=1 FOR INSERT INTO t VALUES (1)", 22, true},
		{"SET STATEMENT a=1 FOR  SELECT 1", 22, false},
		{"x; /* c */ load data", 2, true},
	} {
		if got := PlannableAt(tt.q, tt.from); got != tt.want {
			t.Errorf("PlannableAt(%q, %d) = %v", tt.q, tt.from, got)
		}
	}
}

func TestClassifyStatements(t *testing.T) {
	for _, tt := range []struct {
		q                 string
		semi, multi, lone bool
	}{
		{"SELECT 1", false, false, true},
		{"SELECT 1;", true, false, true},
		{"SELECT 1; -- done", true, false, true},
		{"SELECT 1;;", true, true, true}, // an empty statement: more for Multi, none for Lone
		{"SELECT 1; SELECT 2", true, true, false},
		{"SELECT ';'", true, false, true},
		{"SELECT 1 /* ; */", true, false, true},
		{`SELECT 'a\'; SELECT 2; -- '`, true, true, false}, // under NO_BACKSLASH_ESCAPES: two
		{"USE a; USE b", true, true, false},
	} {
		c := ClassifyString(tt.q)
		if c.Semicolon() != tt.semi || c.Multi() != tt.multi || c.Lone() != tt.lone {
			t.Errorf("Classify(%q): semicolon %v, multi %v, lone %v; want %v, %v, %v", tt.q, c.Semicolon(), c.Multi(), c.Lone(), tt.semi, tt.multi, tt.lone)
		}
	}
}

func TestClassifyAdmin(t *testing.T) {
	for q, want := range map[string]bool{
		"SHOW LEAFPROXY SEQUENCES":                    true,
		"show leafproxy sessions":                     true,
		"  /* c */ CREATE /* d */ LEAFPROXY SEQUENCE": true,
		"ALTER LEAFPROXY SEQUENCE t STEP 5":           true,
		"DROP\tLEAFPROXY SEQUENCE t":                  true,
		"DROP LEAFPROXY":                              true,
		"SHOW LEAFPROXYS":                             false,
		"SELECT LEAFPROXY":                            false,
		"SHOW TABLES":                                 false,
		"SELECT 1":                                    false,
		"/*! SHOW LEAFPROXY SEQUENCES */":             false, // code for the server: not the proxy's
		"SHOW /*! LEAFPROXY */ SEQUENCES":             false,
		"SHOWLEAFPROXY":                               false,
		"":                                            false,
	} {
		if got := ClassifyString(q).Admin(); got != want {
			t.Errorf("Classify(%q).Admin() = %v, want %v", q, got, want)
		}
	}
}

func TestClassifyAllocatesNothing(t *testing.T) {
	q := []byte("/* c */ INSERT INTO orders (item, qty) VALUES ('book', 2), ('pen', 3); SELECT NEXTVAL('order'); ALTER TABLE t ADD c INT")
	var c Class
	if n := testing.AllocsPerRun(100, func() { c = Classify(q) }); n != 0 {
		t.Errorf("Classify allocates %v times", n)
	}
	if !c.DDL() || !c.SeqCall() || !c.Multi() || c.Word() != Insert {
		t.Errorf("Classify(%q) = %+v", q, c)
	}
}

func TestUnquote(t *testing.T) {
	for _, tt := range []struct {
		lit  string
		esc  Escapes
		want string
	}{
		{"'abc'", Backslash, "abc"},
		{"'it''s'", Backslash, "it's"},
		{`'a\'b'`, Backslash, "a'b"},
		{`'a\nb\tc\0\Z\\'`, Backslash, "a\nb\tc\x00\x1a\\"},
		{`'a\%b\_'`, Backslash, "a%b_"},
		{`'a\%b\_'`, BackslashLike, `a\%b\_`},
		{`'a\'`, NoEscapes, `a\`},
		{"`we``ird`", NoEscapes, "we`ird"},
		{`"say ""hi"""`, NoEscapes, `say "hi"`},
		{"'unterminated", Backslash, "unterminated"},
		{"'", Backslash, "'"},
		{"word", Backslash, "word"},
		{`'trailing\`, Backslash, `trailing\`},
	} {
		if got := Unquote(tt.lit, tt.esc); got != tt.want {
			t.Errorf("Unquote(%q, %d) = %q, want %q", tt.lit, tt.esc, got, tt.want)
		}
		if len(tt.lit) >= 2 && strings.ContainsAny(tt.lit[:1], "'\"`") {
			if got := string(AppendUnquoted([]byte("x"), []byte(tt.lit), tt.esc)); got != "x"+tt.want {
				t.Errorf("AppendUnquoted(%q, %d) = %q, want x%q", tt.lit, tt.esc, got, tt.want)
			}
		}
	}
	if n := testing.AllocsPerRun(100, func() { Unquote("'plain text'", Backslash) }); n != 0 {
		t.Errorf("Unquote of plain text allocates %v times", n)
	}
}

func TestAppendRadix(t *testing.T) {
	for _, tt := range []struct {
		digits string
		hex    bool
		want   string
		ok     bool
	}{
		{"4B494C4C", true, "KILL", true},
		{"4b494c4c", true, "KILL", true},
		{"ABC", true, "\x0a\xbc", true},
		{"", true, "", true},
		{"4BZZ", true, "K", false},
		{"4B4", true, "\x04\xb4", true},
		{"01000001", false, "A", true},
		{"1", false, "\x01", true},
		{"101000001", false, "\x01\x41", true},
		{"012", false, "", false},
	} {
		got, ok := AppendRadix(nil, tt.digits, tt.hex)
		if string(got) != tt.want || ok != tt.ok {
			t.Errorf("AppendRadix(%q, %v) = %q, %v; want %q, %v", tt.digits, tt.hex, got, ok, tt.want, tt.ok)
		}
	}
}

// BenchmarkClassify is the one pass every COM_QUERY pays (issue 31): a
// filled INSERT, a pass-through SELECT, two statements, and a ';' in a
// string followed by a DDL word.
func BenchmarkClassify(b *testing.B) {
	for _, q := range []string{
		"INSERT INTO orders (item, qty) VALUES ('book', 2)",
		"SELECT id, v FROM orders WHERE id = 42",
		"INSERT INTO orders (item, qty) VALUES ('book', 2); SELECT 1",
		"INSERT INTO notes (body) VALUES ('see you; create later'); SELECT 1",
	} {
		sql := []byte(q)
		b.Run(q[:12], func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(sql)))
			for b.Loop() {
				classSink = Classify(sql)
			}
		})
	}
}

var classSink Class
