package rewriter

import (
	"strings"
	"testing"
)

// TestUse: a USE in the text changes the database later statements are
// resolved against (Env.DB is the one before the text).
func TestUse(t *testing.T) {
	ansi := Mode{ANSIQuotes: true}
	runPlanCases(t, []planCase{
		{name: "use other", sql: "USE other; INSERT INTO items (name) VALUES ('a')",
			want: "USE other; INSERT INTO items (`sku`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a')"},
		{name: "backquoted", sql: "use `other` ;INSERT INTO items (name) VALUES ('a')",
			want: "use `other` ;INSERT INTO items (`sku`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a')"},
		{name: "ansi quoted", mode: ansi, sql: `USE "other"; INSERT INTO items (name) VALUES ('a')`,
			want: `USE "other"; INSERT INTO items (` + "`sku`" + `, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a')`},
		{name: "no rule there", sql: "USE nodb; INSERT INTO items (name) VALUES ('a')"},
		{name: "any db rule", sql: "USE nodb; INSERT INTO orders (name) VALUES ('a')",
			want: "USE nodb; INSERT INTO orders (`id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a')"},
		{name: "before and after", sql: "INSERT INTO items (name) VALUES ('a'); USE other; INSERT INTO items (name) VALUES ('b'); USE shop; INSERT INTO items (name) VALUES ('c')",
			want: "INSERT INTO items (`item_id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a'); USE other; INSERT INTO items (`sku`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1002), 'b'); USE shop; INSERT INTO items (`item_id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1003), 'c')"},
		{name: "parser path", sql: "USE other; INSERT INTO items SET name = 'a'",
			want: "USE other; INSERT INTO items SET `sku` = LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), name = 'a'"},
		{name: "columns of the used db", sql: "USE missing; INSERT INTO orders VALUES (NULL, 'a', 'b')", code: 1105, mention: "no such table"},
		{name: "certain bang", sql: "/*!40101 USE other */; INSERT INTO items (name) VALUES ('a')",
			want: "/*!40101 USE other */; INSERT INTO items (`sku`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a')"},
		{name: "qualified after use", sql: "USE nodb; INSERT INTO shop.items (name) VALUES ('a')",
			want: "USE nodb; INSERT INTO shop.items (`item_id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a')"},
		// USEs that cannot be followed: refuse what a rule could match.
		{name: "versioned", sql: "/*!99999 USE other */; INSERT INTO items (name) VALUES ('a')", code: 1235, mention: "USE"},
		{name: "inside versioned", sql: "SELECT 1 /*!99999 ; USE other */; INSERT INTO orders (name) VALUES ('a')", code: 1235, mention: "orders"},
		{name: "not a name", sql: "USE other extra; INSERT INTO items (name) VALUES ('a')", code: 1235, mention: "db.items"},
		{name: "dynamic", sql: "EXECUTE IMMEDIATE 'USE other'; INSERT INTO orders (name) VALUES ('a')", code: 1235, mention: "USE"},
		{name: "unknown but no rule", sql: "/*!99999 USE other */; INSERT INTO t (name) VALUES ('a')"},
		{name: "unknown but qualified", sql: "/*!99999 USE other */; INSERT INTO other.items (name) VALUES ('a')",
			want: "/*!99999 USE other */; INSERT INTO other.items (`sku`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a')"},
		{name: "followed again", sql: "/*!99999 USE other */; USE other; INSERT INTO items (name) VALUES ('a')",
			want: "/*!99999 USE other */; USE other; INSERT INTO items (`sku`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a')"},
	})
}

// TestSetSQLMode: statements after a SET of sql_mode that need planning
// are refused (the new mode is not known).
func TestSetSQLMode(t *testing.T) {
	runPlanCases(t, []planCase{
		{name: "zero key", sql: "SET sql_mode=''; INSERT INTO orders (id, name) VALUES (0, 'a')", mode: Mode{NoAutoValueOnZero: true}, code: 1235, mention: "sql_mode"},
		{name: "mysqldump", sql: "/*!40101 SET @OLD_SQL_MODE=@@SQL_MODE, SQL_MODE='NO_AUTO_VALUE_ON_ZERO' */;\nINSERT INTO orders (name) VALUES ('a')", code: 1235, mention: "shop.orders"},
		{name: "session var", sql: "SET @@SESSION.`sql_mode` = 'ANSI'; SELECT NEXTVAL('s')", code: 1235, mention: "NEXTVAL('s')"},
		{name: "set session", sql: "set session sql_mode = default; insert into orders set name = 'a'", code: 1235, mention: "sql_mode"},
		{name: "ansi quotes", sql: `SET sql_mode='ANSI_QUOTES'; INSERT INTO "orders" (name) VALUES ('a')`, code: 1235, mention: "orders"},
		{name: "no backslash escapes", sql: `SET sql_mode='NO_BACKSLASH_ESCAPES'; INSERT INTO t VALUES ('a\'); INSERT INTO orders (name) VALUES ('x')`, code: 1235, mention: "orders"},
		{name: "later statement", sql: "SET sql_mode=''; SELECT 1; INSERT INTO orders (name) VALUES ('a')", code: 1235, mention: "sql_mode"},
		{name: "no planning after", sql: "SET sql_mode=''; INSERT INTO t (id) VALUES (0); UPDATE t SET a = 'value'"},
		{name: "set before", sql: "INSERT INTO orders (name) VALUES ('a'); SET sql_mode=''",
			want: "INSERT INTO orders (`id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a'); SET sql_mode=''"},
		{name: "call in the set itself", sql: "SET sql_mode='', @x = NEXTVAL('s')", want: "SET sql_mode='', @x = 1001"},
		{name: "set statement is not a set", sql: "SET STATEMENT sql_mode='' FOR SELECT 1; INSERT INTO orders (name) VALUES ('a')",
			want: "SET STATEMENT sql_mode='' FOR SELECT 1; INSERT INTO orders (`id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a')"},
		{name: "other variable", sql: "SET @a = 'sql_mode'; INSERT INTO orders (name) VALUES ('a')",
			want: "SET @a = 'sql_mode'; INSERT INTO orders (`id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a')"},
		{name: "prepared set", sql: "PREPARE s FROM 'SET sql_mode=''''' ; EXECUTE s; INSERT INTO orders (name) VALUES ('a')", code: 1235, mention: "sql_mode"},
	})
}

// TestDynamicSQL: PREPARE ... FROM '...' and EXECUTE IMMEDIATE '...' of a
// statement that needs planning are refused; what the proxy cannot see
// passes through.
func TestDynamicSQL(t *testing.T) {
	nbe := Mode{NoBackslashEscapes: true}
	runPlanCases(t, []planCase{
		{name: "prepare", sql: "PREPARE s FROM 'INSERT INTO orders (name) VALUES (?)'", code: 1235, state: "42000", mention: "shop.orders"},
		{name: "binary protocol", sql: "PREPARE s FROM 'INSERT INTO orders (name) VALUES (?)'", code: 1235, mention: "binary protocol"},
		{name: "execute immediate", sql: "EXECUTE IMMEDIATE 'REPLACE INTO orders (name) VALUES (1)'", code: 1235, mention: "EXECUTE IMMEDIATE"},
		{name: "doubled quotes", sql: "EXECUTE IMMEDIATE 'INSERT INTO orders (name) VALUES (''x'')'", code: 1235, mention: "orders"},
		{name: "escapes", sql: `PREPARE s FROM 'SELECT \'a\'; INSERT INTO orders (name) VALUES (1)'`, code: 1235, mention: "orders"},
		{name: "escapes off", mode: nbe, sql: `PREPARE s FROM 'SELECT ''\''; INSERT INTO orders (name) VALUES (1)'`, code: 1235, mention: "PREPARE ... FROM"},
		{name: "escapes on", sql: `PREPARE s FROM 'SELECT ''\''; INSERT INTO orders (name) VALUES (1)'`, code: 1235, mention: "cannot read this statement on shop.orders"},
		{name: "escaped name", sql: `PREPARE s FROM 'INSERT INTO ord\ers SET name = 1'`, code: 1235, mention: "orders"},
		{name: "escaped name off", mode: nbe, sql: `PREPARE s FROM 'INSERT INTO ord\ers SET name = 1'`},
		{name: "ansi quoted name", mode: Mode{ANSIQuotes: true}, sql: `PREPARE s FROM 'INSERT INTO "orders" SET name = 1'`, code: 1235, mention: "orders"},
		{name: "string is not a name", sql: `PREPARE s FROM 'INSERT INTO "orders" SET name = 1'`},
		{name: "sequence call", sql: "EXECUTE IMMEDIATE 'SELECT NEXTVAL(s)'", code: 1235, mention: "NEXTVAL(s)"},
		{name: "qualified", sql: "prepare s from 'insert into other.items (name) values (?)'", code: 1235, mention: "other.items"},
		{name: "after use", sql: "USE other; PREPARE s FROM 'INSERT INTO items (name) VALUES (?)'", code: 1235, mention: "other.items"},
		{name: "concat", sql: "EXECUTE IMMEDIATE CONCAT('INSERT INTO ', 'orders (name) VALUES (1)')", code: 1235, mention: "orders"},
		{name: "adjacent strings", sql: "PREPARE s FROM 'INSERT INTO ' 'orders (name) VALUES (1)'", code: 1235, mention: "orders"},
		{name: "later statement", sql: "SELECT 1; PREPARE s FROM 'INSERT INTO orders (name) VALUES (?)'; EXECUTE s USING @a", code: 1235, mention: "orders"},
		{name: "variable", sql: "PREPARE s FROM @q"},
		{name: "execute", sql: "EXECUTE s USING @a, @b"},
		{name: "execute immediate variable", sql: "EXECUTE IMMEDIATE @q USING 'orders'"},
		{name: "other table", sql: "PREPARE s FROM 'INSERT INTO t (a) VALUES (?)'"},
		{name: "using is not the text", sql: "EXECUTE IMMEDIATE 'INSERT INTO t VALUES (?)' USING 'INSERT INTO orders (name) VALUES (1)'"},
		{name: "select", sql: "EXECUTE IMMEDIATE 'SELECT * FROM orders'"},
		{name: "explicit key still refused", sql: "PREPARE s FROM 'INSERT INTO orders (id, name) VALUES (5, 1)'", code: 1235, mention: "orders"},
	})
	for _, q := range []string{"PREPARE s FROM 'INSERT INTO orders SET name = ?'", "execute immediate 'insert into orders set name = 1'", "SELECT 1;\nPREPARE s FROM 'INSERT INTO orders SET name = ?'"} {
		if !mayRewrite(q) {
			t.Errorf("mayRewrite(%q) = false", q)
		}
	}
}

func TestHasSeqCall(t *testing.T) {
	dense := strings.Repeat("over vVv ", 30)
	for _, tt := range []struct {
		s    string
		want bool
	}{
		{"", false}, {"va", false}, {"VAL", false}, {"v a l", false}, {dense, false},
		{"INSERT INTO t VALUES (1)", false}, {"INSERT INTO t VALUE (1)", false}, {"INSERT INTO t VALUE(1)", false},
		{"SELECT 'value', interval, valid", false}, {"VALUE", false}, {"VALUE F", false}, {"VALUE FORM", false}, {"VALUEFOR", false},
		{"nextVal", true}, {dense + "NEXTVAL(a)", true}, {"LastVal(a)", true}, {"x.nextval", true}, {"vvvvvvvvvvvvvvvvvnextval", true},
		{"NEXT VALUE FOR s", true}, {"previous value for s", true}, {"VALUE FOR", true}, {dense + "next VALUE\tFOR s", true},
		{"NEXT VALUE/* c */FOR s", true}, {"NEXT VALUE -- c\nFOR s", true}, {"NEXT VALUE # c\n for s", true},
		{"/*! SELECT NEXT VALUE */ FOR s", true}, {"/*! SELECT NEXT VALUE /*! x */ FOR s */", true}, {"NEXT VALUE /*!50000 FOR s */", true},
		{"SELECT 'value for money'", true}, // quote-blind: a false maybe
	} {
		if got := hasSeqCall(tt.s); got != tt.want {
			t.Errorf("hasSeqCall(%q) = %v", tt.s, got)
		}
	}
}

// TestPlainInserts: the shortcut for INSERTs into tables without a rule.
func TestPlainInserts(t *testing.T) {
	env := testEnv(t, Mode{})
	for _, tt := range []struct {
		s    string
		want bool
	}{
		{"INSERT INTO t VALUES (1)", true},
		{"insert ignore into `audit` (a) values ('x;y')", false}, // ';' in a string: a false "plan it"
		{"INSERT INTO t VALUES (1); REPLACE t VALUES (2);  ", true},
		{"INSERT INTO nodb.items VALUES (1)", true},
		{"INSERT INTO items VALUES (1)", false},
		{"INSERT INTO t VALUES (1); INSERT INTO orders VALUES (1)", false},
		{"INSERT INTO t VALUES (1); SELECT 1", false},
		{"INSERT INTO t VALUES (1) /*! ; INSERT INTO orders VALUES (1) */", false},
		{"INSERT /*!50000 INTO t */ VALUES (1)", false},
		{"INSERT INTO t VALUES (1); USE other", false},
		{"INSERT INTO", false},
	} {
		if got := plainInserts(tt.s, env); got != tt.want {
			t.Errorf("plainInserts(%q) = %v", tt.s, got)
		}
	}
}

// FuzzFilter: whatever the shortcuts (mayRewrite, hasSeqCall,
// plainInserts) pass over, the full planner also passes through.
func FuzzFilter(f *testing.F) {
	for _, s := range []string{
		"INSERT INTO t VALUES (1)", "SELECT NEXT VALUE /* x */ FOR s", "/*! SELECT NEXT VALUE */ FOR s",
		"INSERT INTO t VALUES (1); INSERT INTO orders (name) VALUES (2)", "USE other; INSERT INTO items (name) VALUES (1)",
		"PREPARE s FROM 'INSERT INTO orders (name) VALUES (?)'", "INSERT INTO t VALUES ('a;INSERT INTO orders VALUES (1)')",
		"SET sql_mode=''; INSERT INTO orders (id) VALUES (0)", "INSERT INTO `ord``ers` VALUES (1)", `INSERT INTO "orders" (a) VALUES (1)`,
		"LOAD DATA LOCAL INFILE 'f' INTO TABLE orders (name)", "LOAD DATA INFILE 'f' INTO TABLE t; LOAD XML LOCAL INFILE 'g' INTO TABLE shop.items",
		"LOAD INDEX INTO CACHE orders; LOAD DATA LOCAL INFILE 'f' REPLACE INTO TABLE `orders`", "USE other; LOAD DATA LOCAL INFILE 'f' INTO TABLE items",
	} {
		f.Add(s, uint8(0))
	}
	f.Fuzz(func(t *testing.T, sql string, m uint8) {
		mode := Mode{ANSIQuotes: m&1 != 0, NoBackslashEscapes: m&2 != 0, NoAutoValueOnZero: m&4 != 0}
		env := testEnv(t, mode)
		b := builder{sql: sql, env: env}
		err := b.run()
		calls := false
		l := lexer{sql: sql, mode: mode}
		for prev := (token{kind: tEOF}); ; {
			tok := l.next()
			if tok.kind == tEOF {
				break
			}
			if _, ok := l.call(tok, prev); ok {
				calls = true
			}
			prev = tok
		}
		if calls && !hasSeqCall(sql) {
			t.Fatalf("hasSeqCall(%q) = false, the lexer finds a call", sql)
		}
		needs := err != nil || len(b.edits) > 0 || b.load != nil
		if needs && !mayRewrite(sql) {
			t.Fatalf("mayRewrite(%q) = false, the planner gives %v / %d edits", sql, err, len(b.edits))
		}
		if needs && !calls && plainInserts(sql, env) {
			t.Fatalf("plainInserts(%q) = true, the planner gives %v / %d edits", sql, err, len(b.edits))
		}
	})
}
