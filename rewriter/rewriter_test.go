package rewriter

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/leafproxy/leafproxy/internal/errstyle"
)

func testEnv(t testing.TB, mode Mode) *Env {
	t.Helper()
	rules, err := NewRules([]Rule{
		{Table: "orders", Column: "id", Tag: "order"},
		{Table: "shop.items", Column: "item_id", Tag: "item"},
		{Table: "other.items", Column: "sku", Tag: "sku"},
		{Table: "ev`t", Column: "k`ey", Tag: "ev"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &Env{DB: "shop", Mode: mode, Rules: rules, Columns: func(db, table string) ([]string, error) {
		if db == "missing" {
			return nil, errors.New("no such table")
		}
		switch strings.ToLower(table) {
		case "orders":
			return []string{"id", "name", "note"}, nil
		case "items":
			return []string{"name", "item_id"}, nil
		case "ev`t":
			return []string{"x"}, nil
		}
		return nil, errors.New("no such table")
	}}
}

// ids returns 1001, 1002, ... for a plan's slots.
func ids(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(1001 + i)
	}
	return out
}

func TestParseSQLMode(t *testing.T) {
	tests := []struct {
		in   string
		want Mode
	}{
		{"", Mode{}},
		{"STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION", Mode{Strict: true}},
		{"ansi_quotes", Mode{ANSIQuotes: true}},
		{"NO_BACKSLASH_ESCAPES, no_auto_value_on_zero", Mode{NoBackslashEscapes: true, NoAutoValueOnZero: true}},
		{"ANSI", Mode{ANSIQuotes: true, PipesAsConcat: true, IgnoreSpace: true}},
		{"PIPES_AS_CONCAT,HIGH_NOT_PRECEDENCE,IGNORE_SPACE", Mode{PipesAsConcat: true, HighNotPrecedence: true, IgnoreSpace: true}},
		{"ANSI_QUOTES_X", Mode{}},
	}
	for _, tt := range tests {
		if got := ParseSQLMode(tt.in); got != tt.want {
			t.Errorf("ParseSQLMode(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestMayRewrite(t *testing.T) {
	no := []string{
		"SELECT * FROM t WHERE id = 42",
		"UPDATE t SET a = 1 WHERE b = 2",
		"DELETE FROM orders",
		"SELECT 1; SELECT 2",
		"/* insert */ SELECT 1",
		"SELECT 'val', 'value' FROM t WHERE a = 'values'",
		"UPDATE t SET a = 'value' WHERE b > NOW() - INTERVAL 1 DAY",
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
	}
	for _, q := range no {
		if mayRewrite(q) {
			t.Errorf("mayRewrite(%q) = true", q)
		}
	}
	for _, q := range maybe {
		if !mayRewrite(q) {
			t.Errorf("mayRewrite(%q) = false", q)
		}
	}
}

func TestSequenceSelect(t *testing.T) {
	tests := []struct {
		sql   string
		mode  Mode
		calls []Call
	}{
		{sql: "SELECT NEXTVAL('order')", calls: []Call{{Func: Next, Tag: "order", Name: "NEXTVAL('order')"}}},
		{sql: "select nextval(order_seq);", calls: []Call{{Func: Next, Tag: "order_seq", Name: "nextval(order_seq)"}}},
		{sql: "SELECT NEXT VALUE FOR shop.seq", calls: []Call{{Func: Next, Tag: "seq", Name: "NEXT VALUE FOR shop.seq"}}},
		{sql: "SELECT NextVal(`we``ird`) AS id", calls: []Call{{Func: Next, Tag: "we`ird", Name: "id"}}},
		{sql: "SELECT LASTVAL('a'), PREVIOUS VALUE FOR b", calls: []Call{{Func: Last, Tag: "a", Name: "LASTVAL('a')"}, {Func: Last, Tag: "b", Name: "PREVIOUS VALUE FOR b"}}},
		{sql: "SELECT lastval(a) x, NEXTVAL('a') 'y z', nextval(\"b\") AS `w`", calls: []Call{{Func: Last, Tag: "a", Name: "x"}, {Func: Next, Tag: "a", Name: "y z"}, {Func: Next, Tag: "b", Name: "w"}}},
		{sql: "/* hi */ SELECT /*+ hint */ NEXTVAL( 'a' ) -- trailing\n ;  # done", calls: []Call{{Func: Next, Tag: "a", Name: "NEXTVAL( 'a' )"}}},
		{sql: "SELECT NEXTVAL('a') FROM DUAL", calls: []Call{{Func: Next, Tag: "a", Name: "NEXTVAL('a')"}}},
		{sql: "SELECT NEXTVAL('it''s'), NEXTVAL('a\\'b')", calls: []Call{{Func: Next, Tag: "it's", Name: "NEXTVAL('it''s')"}, {Func: Next, Tag: "a'b", Name: "NEXTVAL('a\\'b')"}}},
		{sql: "SELECT NEXTVAL('a\\')", mode: Mode{NoBackslashEscapes: true}, calls: []Call{{Func: Next, Tag: "a\\", Name: "NEXTVAL('a\\')"}}},
		{sql: `SELECT NEXTVAL("a") AS "x"`, mode: Mode{ANSIQuotes: true}, calls: []Call{{Func: Next, Tag: "a", Name: "x"}}},
		{sql: "SELECT NEXTVAL(db.`t`)", calls: []Call{{Func: Next, Tag: "t", Name: "NEXTVAL(db.`t`)"}}},
		// Not a sequence select: PassThrough or Rewrite.
		{sql: "SELECT nextval FROM t"},
		{sql: "SELECT db.nextval('a')"},
		{sql: "SELECT 'NEXTVAL(a)'"},
		{sql: "SELECT NEXTVAL('a') + 1"},
		{sql: "SELECT NEXTVAL('a'); SELECT 1"},
	}
	env := testEnv(t, Mode{})
	for _, tt := range tests {
		env.Mode = tt.mode
		for _, prepared := range []bool{false, true} {
			p, err := plan(tt.sql, env, prepared)
			if err != nil {
				t.Errorf("%q: %v", tt.sql, err)
				continue
			}
			if tt.calls == nil {
				if p.Kind == Sequence {
					t.Errorf("%q: Sequence plan %+v", tt.sql, p.Calls)
				}
				continue
			}
			if p.Kind != Sequence || !reflect.DeepEqual(namesOff(p.Calls), tt.calls) {
				t.Errorf("%q: got %v %+v, want %+v", tt.sql, p.Kind, p.Calls, tt.calls)
			}
		}
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		sql      string
		prepared bool
		code     uint16
		state    string
		mention  string
	}{
		{sql: "SELECT NEXTVAL('a') FROM t", code: 1235, state: "42000", mention: "NEXTVAL('a')"},
		{sql: "SELECT NEXTVAL(a) FROM t WHERE x = 1", code: 1235, mention: "NEXTVAL(a)"},
		{sql: "SELECT NEXTVAL('a') UNION SELECT 1", code: 1235},
		{sql: "SELECT * FROM t WHERE id = NEXTVAL('a')", code: 1235},
		{sql: "SELECT (SELECT NEXTVAL('a'))", code: 1235},
		{sql: "SELECT NEXTVAL('a') GROUP BY 1", code: 1235},
		{sql: "INSERT INTO t (a) SELECT a FROM u WHERE b = NEXTVAL('a')", code: 1235},
		{sql: "INSERT INTO t VALUES ((SELECT NEXTVAL('a')))", code: 1235},
		{sql: "INSERT INTO t (a) VALUES (1), (2) ON DUPLICATE KEY UPDATE a = NEXTVAL('a')", code: 1235},
		{sql: "DELETE FROM t WHERE id = NEXT VALUE FOR s", code: 1235},
		{sql: "SELECT NEXTVAL(?)", prepared: true, code: 1235, mention: "parameter"},
		{sql: "INSERT INTO t VALUES (NEXTVAL(?))", prepared: true, code: 1235},
		{sql: "SELECT LASTVAL('a'), 1", code: 1235, mention: "LASTVAL('a')"},
		{sql: "INSERT INTO t VALUES (LASTVAL(a))", code: 1235},
		{sql: "INSERT INTO orders (name) VALUES ('a') RETURNING id, NEXTVAL('a')", code: 1235, mention: "RETURNING"},
		{sql: "INSERT INTO orders (name) VALUES ('a') AS new ON DUPLICATE KEY UPDATE name = new.name", code: 1235, mention: "shop.orders"},
		{sql: "INSERT INTO t VALUES (1) RETURNING NEXTVAL('a')", code: 1235, mention: "RETURNING"},
		{sql: "DELETE FROM t WHERE id = 1 RETURNING NEXTVAL('a')", code: 1235},
		{sql: "INSERT INTO nodb.unknown VALUES (1); INSERT INTO orders (name) SELECT 1", code: 1235, mention: "only statement"},
		{sql: "INSERT INTO orders (name) SELECT 1; SELECT 2", code: 1235, mention: "only statement"},
		{sql: "UPDATE t SET a = NEXTVAL(s); UPDATE t SET a = NEXTVAL(s)", code: 1235, mention: "only statement"},
		{sql: "INSERT INTO missing.orders VALUES (1, 2, 3)", code: 1105, mention: "no such table"},
		{sql: "INSERT INTO other.items VALUES (1, 2)", code: 1054, mention: "sku"},
	}
	env := testEnv(t, Mode{})
	for _, tt := range tests {
		diffFast(t, tt.sql, env, tt.prepared)
		_, err := plan(tt.sql, env, tt.prepared)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%q: err = %v, want *Error", tt.sql, err)
			continue
		}
		if e.Code() != tt.code || tt.state != "" && e.SQLState() != tt.state || !strings.Contains(e.Error(), tt.mention) || errstyle.Check(e.Code(), e.Error()) != nil {
			t.Errorf("%q: got %d %s %q; want %d %s mentioning %q", tt.sql, e.Code(), e.SQLState(), e.Error(), tt.code, tt.state, tt.mention)
		}
	}
	if _, err := plan("INSERT INTO orders VALUES (1, 2, 3)", &Env{DB: "shop", Rules: testEnv(t, Mode{}).Rules}, false); err == nil {
		t.Error("INSERT without a column list and without Env.Columns: no error")
	}
}

func TestNoAllocations(t *testing.T) {
	env := testEnv(t, Mode{})
	for _, q := range []string{"SELECT * FROM t WHERE id = 42", update1KB(false), update1KB(true),
		otherInsertRows(1), otherInsertRows(1000), "INSERT INTO t VALUES (1); REPLACE INTO `audit` (a) VALUE (2);"} {
		if n := testing.AllocsPerRun(100, func() { _, _ = PlanQuery(q, env) }); n != 0 {
			t.Errorf("PlanQuery(%.30q...) allocates %v times", q, n)
		}
	}
	sql := insertRows(10)
	p, err := PlanQuery(sql, env)
	if err != nil {
		t.Fatal(err)
	}
	ids := ids(len(p.Slots))
	buf := p.mustRender(t, nil, sql, ids)
	if n := testing.AllocsPerRun(100, func() { buf, _ = p.Render(buf[:0], sql, ids) }); n != 0 {
		t.Errorf("Render into a large enough buffer allocates %v times", n)
	}
}
