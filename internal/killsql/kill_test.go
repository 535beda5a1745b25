package killsql

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/leafproxy/leafproxy/internal/sqltext"
)

// KILL in the text of PREPARE ... FROM and EXECUTE IMMEDIATE: refused
// whenever the literals the server would run start with KILL.
func TestDynamicKill(t *testing.T) {
	for q, want := range map[string]bool{
		"PREPARE s FROM 'KILL 5'":                            true,
		"prepare s from \"kill query 5\"":                    true,
		"PREPARE `s` FROM ' /* c */ KILL 5'":                 true,
		"PREPARE s FROM 'KI' 'LL 5'":                         true,
		"PREPARE s FROM CONCAT('KILL ', @id)":                true,
		"PREPARE s FROM CONCAT('KI', 'LL ', 5)":              true,
		`PREPARE s FROM 'K\ILL 5'`:                           true,
		"PREPARE s FROM 'K''ILL 5'":                          false, // K'ILL
		"PREPARE s FROM _utf8mb4'KILL 5'":                    true,
		"PREPARE s FROM X'4B494C4C2035'":                     true,
		"PREPARE s FROM 0x4B494C4C2035":                      true,
		"PREPARE s FROM '/*!KILL 5*/'":                       true,
		"EXECUTE IMMEDIATE 'KILL 5'":                         true,
		"EXECUTE IMMEDIATE 'KILL ?' USING 5":                 true,
		"execute immediate concat('kill ', ?) using @x":      true,
		"EXECUTE IMMEDIATE @q USING 'KILL 5'":                false,
		"EXECUTE s USING 'KILL 5'":                           false,
		"PREPARE s FROM @q":                                  false,
		"PREPARE s FROM 'SELECT 1'":                          false,
		"PREPARE s FROM 'SELECT ''KILL 5'''":                 false,
		"PREPARE s FROM 'SELECT 1'; SELECT 'KILL 5'":         false,
		"PREPARE `KILL 5` FROM 'SELECT 1'":                   false,
		"PREPARE s FROM 'SKILL 5'":                           false,
		"PREPARE s FROM b'01001011010010010100110001001100'": true, // "KILL"
		"PREPARE s FROM '":                                   false,
		"EXECUTE":                                            false,
	} {
		q := []byte(q)
		if got := dynamicKill(firstWord(q)); got != want {
			t.Errorf("dynamicKill(%q) = %v, want %v", q, got, want)
		}
		k, ok := parse(q, false)
		if ok || (k.Refuse == InDynamic) != want {
			t.Errorf("parse(%q) = %+v, %v", q, k, ok)
		}
	}
	// In a multi-statement text, any statement.
	if k, _ := parse([]byte("SELECT 1; PREPARE s FROM 'KILL 5'"), true); k.Refuse != InDynamic {
		t.Errorf("PREPARE after another statement: %+v", k)
	}
	if k, _ := parse([]byte("SELECT 1; PREPARE s FROM 'KILL 5'"), false); k.Refuse != "" {
		t.Errorf("without multi-statements the server runs only the first: %+v", k)
	}
}

// PREPARE name FROM '<KILL>' on its own names the statement to replace
// with the stand-in; among other statements, or prepared with the binary
// protocol, it is only refused.
func TestPrepareName(t *testing.T) {
	for q, want := range map[string]string{
		"PREPARE s FROM 'KILL 5'":            "s",
		"prepare `my s` FROM 'KILL 5' ; ":    "`my s`",
		"PREPARE s2 FROM CONCAT('KILL ', 5)": "s2",
		"PREPARE s FROM 'KILL 5'; SELECT 1":  "",
		"EXECUTE IMMEDIATE 'KILL 5'":         "",
	} {
		k, ok := parse([]byte(q), true)
		if ok || k.Refuse != InDynamic || string(k.PrepareName) != want {
			t.Errorf("parse(%q) = %+v, %v, want the name %q", q, k, ok, want)
		}
		if k, _ := parsePrepared([]byte(q)); k.PrepareName != nil {
			t.Errorf("parsePrepared(%q) names %q", q, k.PrepareName)
		}
	}
	if got, want := StandIn([]byte("`s`")), "PREPARE `s` FROM 'SIGNAL SQLSTATE ''42000'' SET MYSQL_ERRNO = 1235, "+
		"MESSAGE_TEXT = ''leafproxy: EXECUTE of a KILL from PREPARE ... FROM is not supported; send the KILL on its own'''"; got != want {
		t.Errorf("StandIn = %s\nwant %s", got, want)
	}
}

func TestParsePrepared(t *testing.T) {
	for q, want := range map[string]Req{
		"KILL ?":                   {Connection: true, Param: true},
		"KILL QUERY ?":             {Param: true},
		"KILL QUERY ID ?":          {Param: true, QueryID: true},
		"kill hard connection ? ;": {Connection: true, Mode: "HARD ", Param: true},
		"KILL 12":                  {Connection: true, ID: 12},
		"KILL QUERY 1073741825":    {ID: 1073741825},
		"KILL CONNECTION_ID()":     {Connection: true, Expr: []byte("CONNECTION_ID()")},
	} {
		k, ok := parsePrepared([]byte(q))
		k.Text = nil
		if !ok || !reflect.DeepEqual(k, want) {
			t.Errorf("parsePrepared(%q) = %+v, %v, want %+v", q, k, ok, want)
		}
	}
	for q, want := range map[string]string{
		"KILL ? + 1": ParamInExpr, "KILL USER ?": ParamInExpr, "KILL ??": ParamInExpr, "KILL ?; SELECT 1": AmongStatements,
	} {
		if k, ok := parsePrepared([]byte(q)); ok || k.Refuse != want {
			t.Errorf("parsePrepared(%q) = %+v, %v: want refused with %q", q, k, ok, want)
		}
	}
}

// Every form of KILL MariaDB reads: a number is mapped at once, anything
// else is left for the backend to evaluate (or to reject in its own words).
func TestParseForms(t *testing.T) {
	for q, want := range map[string]Req{
		"KILL 5":                         {Connection: true, ID: 5},
		"kill soft query 7 ;  ":          {Mode: "SOFT ", ID: 7},
		"KILL 18446744073709551615":      {Connection: true, ID: 1<<64 - 1},
		"KILL 18446744073709551616":      {Connection: true, Expr: []byte("18446744073709551616")},
		"KILL CONNECTION_ID()":           {Connection: true, Expr: []byte("CONNECTION_ID()")},
		"KILL QUERY CONNECTION_ID();":    {Expr: []byte("CONNECTION_ID()")},
		"KILL HARD CONNECTION @id + 1":   {Connection: true, Mode: "HARD ", Expr: []byte("@id + 1")},
		"KILL QUERY ID 42":               {QueryID: true, ID: 42},
		"KILL QUERY ID @q":               {QueryID: true, Expr: []byte("@q")},
		"KILL USER u1":                   {Connection: true, User: true, Expr: []byte("u1")},
		"KILL SOFT QUERY USER 'a'@'%'":   {Mode: "SOFT ", User: true, Expr: []byte("'a'@'%'")},
		"KILL ?":                         {Connection: true, Expr: []byte("?")},
		"KILL":                           {Connection: true, Expr: []byte{}},
		"KILL 5abc":                      {Connection: true, Expr: []byte("5abc")},
		"KILL (SELECT 1) -- comment\n ;": {Connection: true, Expr: []byte("(SELECT 1) -- comment")},
		"/*!KILL*/ 5":                    {Connection: true, Expr: []byte("*/ 5")},
		"-- x\nKILL 5":                   {Connection: true, ID: 5},
		"/*M!100000 KILL 6 */":           {Connection: true, Expr: []byte("6 */")},
		"KILL 5;":                        {Connection: true, ID: 5},
	} {
		k, ok := parse([]byte(q), false)
		if k.Expr != nil && string(k.Text) != q {
			t.Errorf("parse(%q) keeps the text %q", q, k.Text)
		}
		k.Text = nil
		if !ok || !reflect.DeepEqual(k, want) {
			t.Errorf("parse(%q) = %+v, %v, want %+v", q, k, ok, want)
		}
	}
	for _, q := range []string{"SELECT 1", "SKILL 5", "SELECT 'KILL 5'", "/* KILL 5 */ SELECT 1", "", "KILLS 5"} {
		if k, ok := parse([]byte(q), true); ok || !reflect.DeepEqual(k, Req{}) {
			t.Errorf("parse(%q) = %+v, %v: not a KILL", q, k, ok)
		}
	}
	if k, ok := parse([]byte("KILL 5; SELECT 1"), true); ok || !k.Multi || k.Refuse != "" {
		t.Errorf("KILL among statements: %+v %v, want multi (mapped in place)", k, ok)
	}
	if k, ok := parse([]byte("SELECT 1; KILL 5"), true); ok || !k.Multi || k.Refuse != "" {
		t.Errorf("KILL after a statement: %+v %v, want multi (mapped in place)", k, ok)
	}
	if k, ok := parse([]byte("SELECT 1; KILL 5"), false); ok || k.Multi || k.Refuse != "" {
		t.Errorf("KILL after a statement without multi-statements (the server rejects it): %+v %v", k, ok)
	}
	if k, ok := parse([]byte("KILL 5; SELECT 1"), false); ok || k.Refuse != AmongStatements {
		t.Errorf("KILL among statements without multi-statements: %+v %v", k, ok)
	}
}

// The statements the proxy sends the backend for a KILL.
func TestStatements(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Req{Connection: true}.ThreadStatement(12), "KILL CONNECTION 12"},
		{Req{Mode: "HARD "}.ThreadStatement(4294967295), "KILL HARD QUERY 4294967295"},
		{Req{Mode: "SOFT ", QueryID: true}.QueryStatement(7), "KILL SOFT QUERY ID 7"},
		{EvalID([]byte("@id + 1")), "EXECUTE IMMEDIATE 'SELECT CAST(? AS SIGNED)' USING @id + 1"},
		{EvalIDSubquery([]byte("(SELECT 5) -- c")), "SELECT CAST(((SELECT 5) -- c\n) AS SIGNED)"},
		{ThreadOfQuery(42), "SELECT ID FROM information_schema.PROCESSLIST WHERE QUERY_ID = 42"},
		{ThreadsOfUser("a'b"), "SELECT ID, HOST FROM information_schema.PROCESSLIST WHERE USER = X'612762'"},
	} {
		if c.got != c.want {
			t.Errorf("%s, want %s", c.got, c.want)
		}
	}
	for expr, want := range map[string]bool{
		"(SELECT 5)": false, "(SELECT id FROM t)": true, "NEXTVAL(s)": true, "NEXT VALUE FOR s": true,
		"(SELECT 'FROM')": false, "(SELECT 1 /* FROM */)": false, "f()": false,
	} {
		if got := KillRefuses([]byte(expr)); got != want {
			t.Errorf("KillRefuses(%q) = %v, want %v", expr, got, want)
		}
	}
}

func TestParseAccount(t *testing.T) {
	for spec, want := range map[string][3]string{
		"app":                   {"app", "", ""},
		"app@localhost":         {"app", "localhost", ""},
		" 'a b' @ '%' ":         {"a b", "%", ""},
		"`x``y`@`h`":            {"x`y", "h", ""},
		`"it\'s"@'10.0.0.%'`:    {"it's", "10.0.0.%", ""},
		"app;":                  {"app", "", ""},
		"CURRENT_USER":          {"", "", "current"},
		"current_user()":        {"", "", "current"},
		"/* c */ CURRENT_USER ": {"", "", "current"},
	} {
		u, h, cur := ParseAccount([]byte(spec))
		if got := [3]string{u, h, map[bool]string{true: "current"}[cur]}; got != want {
			t.Errorf("ParseAccount(%q) = %q, want %q", spec, got, want)
		}
	}
	for acct, want := range map[string][2]string{"app@%": {"app", "%"}, "a@b@h": {"a@b", "h"}, "app": {"app", ""}} {
		if u, h := SplitAccount(acct); [2]string{u, h} != want {
			t.Errorf("SplitAccount(%q) = %q, %q", acct, u, h)
		}
	}
}

func TestWildMatch(t *testing.T) {
	for _, c := range []struct {
		s, pat string
		want   bool
	}{
		{"localhost", "%", true}, {"localhost", "LocalHost", true}, {"localhost", "local%", true},
		{"127.0.0.1", "127.0.0._", true}, {"127.0.0.10", "127.0.0._", false}, {"localhost", "127.0.0.1", false},
		{"a%b", "a\\%b", true}, {"axb", "a\\%b", false}, {"", "%", true}, {"x", "", false},
	} {
		if got := WildMatch(c.s, c.pat); got != c.want {
			t.Errorf("WildMatch(%q, %q) = %v", c.s, c.pat, got)
		}
	}
	if HostOnly("localhost:36698") != "localhost" || HostOnly("localhost") != "localhost" || HostOnly("::1:5000") != "::1" {
		t.Error("HostOnly")
	}
}

// FuzzParseKill covers the KILL recogniser and the statement splitter it
// runs on every COM_QUERY that mentions "kill".
func FuzzParseKill(f *testing.F) {
	for _, s := range []string{
		"KILL 5", "kill query 1073741825", "KILL HARD CONNECTION 7;", "KILL SOFT QUERY 9 ; ",
		"KILL USER app", "KILL QUERY ID 3", "KILL 1+1", "SELECT 1; KILL 5", "/*!KILL*/ 5",
		"/*M!100000 KILL */ 5", "-- x\nKILL 5", "# c\nKILL 99999999999", "KILL 4294967296",
		"SELECT 'kill;'; SELECT `a;b`", "SELECT \"a\\\";\" ; kill", "/* unterminated kill", "KILL",
		"'", "`", "/*", "/*M", "/*!", "-- ", ";;;", "",
		"PREPARE s FROM 'KILL 5'", "EXECUTE IMMEDIATE CONCAT('KI', 'LL ', ?) USING 5", "PREPARE s FROM X'4B494C4C'",
		"PREPARE s FROM b'0101'", "PREPARE s FROM 0x4", "SELECT 1; PREPARE s FROM 'K\\ILL 5'", "KILL ?", "KILL QUERY ? ;",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, q []byte) {
		k, ok := parse(q, true)
		if ok && k.Refuse != "" {
			t.Fatalf("accepted and refused at once: %+v", k)
		}
		if ok && k.Param {
			t.Fatalf("KILL ? accepted in a COM_QUERY: %+v", k)
		}
		if pk, pok := parsePrepared(q); pok && (pk.Refuse != "" || !bytes.Contains(bytes.ToLower(q), []byte("kill"))) {
			t.Fatalf("prepared: %+v in %q", pk, q)
		}
		if ok && !bytes.Contains(bytes.ToLower(q), []byte("kill")) {
			t.Fatalf("KILL recognised in %q", q)
		}
		stmts := splitStatements(q)
		if len(stmts) == 0 || len(stmts) > bytes.Count(q, []byte(";"))+1 {
			t.Fatalf("%d statements from %d semicolons", len(stmts), bytes.Count(q, []byte(";")))
		}
		// The statements are q cut at semicolons: joined back they are q,
		// less at most a trailing ";" plus white space.
		joined := bytes.Join(stmts, []byte(";"))
		if !bytes.HasPrefix(q, joined) {
			t.Fatalf("statements %q are not a prefix of %q", stmts, q)
		}
		if rest := q[len(joined):]; len(rest) > 0 && (rest[0] != ';' || len(bytes.TrimSpace(rest[1:])) > 0) {
			t.Fatalf("splitStatements dropped %q", rest)
		}
		// Mapping a multi-statement text never panics, and a text without
		// a KILL to map comes back as it was.
		out, n, refuse := MapMulti(q, func(id uint32) (uint32, bool) { return id + 1, id%2 == 0 })
		if refuse == "" && n == 0 && !bytes.Equal(out, q) {
			t.Fatalf("MapMulti(%q) = %q with no KILL mapped", q, out)
		}
		if refuse != "" && (out != nil || n != 0) {
			t.Fatalf("MapMulti(%q) refused (%s) but = %q, %d", q, refuse, out, n)
		}
	})
}

// parse and parsePrepared classify q as the proxy does before it asks.
func parse(q []byte, multi bool) (Req, bool) { return Parse(q, sqltext.Classify(q), multi) }

func parsePrepared(q []byte) (Req, bool) { return ParsePrepared(q, sqltext.Classify(q)) }
