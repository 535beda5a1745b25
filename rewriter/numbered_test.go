package rewriter

import (
	"strings"
	"testing"
)

// ctr is the counter expression RenderNumbered writes for counter i over
// the block {First: 1000, N: 5} (key: the first value is LAST_INSERT_ID).
func ctr(i string, key bool) string {
	v := "@__leafproxy_n" + i
	val := "999 + " + v
	if key {
		val = "IF(" + v + " = 1, LAST_INSERT_ID(1000), " + val + ")"
	}
	return "IF((" + v + " := " + v + " + 1) <= 5, " + val + ", 18446744073709551615 + " + v + ")"
}

const q3 = "WITH __leafproxy_q (`__leafproxy_1`, `__leafproxy_2`, `__leafproxy_3`) AS ("

// TestNumberedPlans: INSERT ... SELECT into rule tables and NEXTVAL for
// many rows are Numbered plans: the statement (rendered over blocks of
// 1000..1004), the count query and the counters' tags.
func TestNumberedPlans(t *testing.T) {
	tests := []struct {
		name, sql     string
		mode          Mode
		want, count   string
		tags          string // counters' tags, "+" marking a key
		countExplicit bool
	}{
		{
			name: "key absent",
			sql:  "INSERT INTO orders (name, note) SELECT a, b FROM t WHERE c > 1",
			want: "INSERT INTO orders (name, note, `id`) WITH __leafproxy_q (`__leafproxy_1`, `__leafproxy_2`) AS (SELECT a, b FROM t WHERE c > 1) " +
				"SELECT `__leafproxy_1`, `__leafproxy_2`, " + ctr("0", true) + " FROM __leafproxy_q",
			count: "WITH __leafproxy_q (`__leafproxy_1`, `__leafproxy_2`) AS (SELECT a, b FROM t WHERE c > 1) SELECT COUNT(*) FROM __leafproxy_q",
			tags:  "+order",
		},
		{
			name: "order by keeps its order, trailing comment, IGNORE",
			sql:  "INSERT IGNORE INTO shop.orders (name) SELECT a FROM t ORDER BY a DESC -- last",
			want: "INSERT IGNORE INTO shop.orders (name, `id`) WITH __leafproxy_q (`__leafproxy_1`) AS (SELECT a FROM t ORDER BY a DESC LIMIT 18446744073709551615) " +
				"SELECT `__leafproxy_1`, " + ctr("0", true) + " FROM __leafproxy_q -- last",
			count: "WITH __leafproxy_q (`__leafproxy_1`) AS (SELECT a FROM t ORDER BY a DESC) SELECT COUNT(*) FROM __leafproxy_q",
			tags:  "+order",
		},
		{
			name: "union, limit kept, REPLACE",
			sql:  "REPLACE INTO orders (name) (SELECT a FROM t) UNION ALL (SELECT b FROM u) ORDER BY 1 LIMIT 3",
			want: "REPLACE INTO orders (name, `id`) WITH __leafproxy_q (`__leafproxy_1`) AS ((SELECT a FROM t) UNION ALL (SELECT b FROM u) ORDER BY 1 LIMIT 3) " +
				"SELECT `__leafproxy_1`, " + ctr("0", true) + " FROM __leafproxy_q",
			count: "WITH __leafproxy_q (`__leafproxy_1`) AS ((SELECT a FROM t) UNION ALL (SELECT b FROM u) ORDER BY 1 LIMIT 3) SELECT COUNT(*) FROM __leafproxy_q",
			tags:  "+order",
		},
		{
			name: "key given by the SELECT",
			sql:  "INSERT INTO orders (id, name) SELECT k, a FROM t ON DUPLICATE KEY UPDATE name = VALUES(name)",
			want: "INSERT INTO orders (id, name) WITH __leafproxy_q (`__leafproxy_1`, `__leafproxy_2`) AS (SELECT k, a FROM t) " +
				"SELECT IF(`__leafproxy_1` IS NULL OR `__leafproxy_1` = 0, " + ctr("0", true) + ", `__leafproxy_1`), `__leafproxy_2` FROM __leafproxy_q " +
				"ON DUPLICATE KEY UPDATE name = VALUES(name)",
			count:         "WITH __leafproxy_q (`__leafproxy_1`, `__leafproxy_2`) AS (SELECT k, a FROM t) SELECT COUNT(*) - COUNT(NULLIF(`__leafproxy_1`, 0)), MAX(`__leafproxy_1`) FROM __leafproxy_q",
			tags:          "+order",
			countExplicit: true,
		},
		{
			name: "no column list, NO_AUTO_VALUE_ON_ZERO",
			sql:  "INSERT INTO orders SELECT * FROM old_orders",
			mode: Mode{NoAutoValueOnZero: true},
			want: "INSERT INTO orders " + q3 + "SELECT * FROM old_orders) " +
				"SELECT IF(`__leafproxy_1` IS NULL, " + ctr("0", true) + ", `__leafproxy_1`), `__leafproxy_2`, `__leafproxy_3` FROM __leafproxy_q",
			count:         q3 + "SELECT * FROM old_orders) SELECT COUNT(*) - COUNT(`__leafproxy_1`), MAX(`__leafproxy_1`) FROM __leafproxy_q",
			tags:          "+order",
			countExplicit: true,
		},
		{
			name: "RETURNING stays last",
			sql:  "INSERT INTO orders (name) SELECT a FROM t RETURNING id",
			want: "INSERT INTO orders (name, `id`) WITH __leafproxy_q (`__leafproxy_1`) AS (SELECT a FROM t) SELECT `__leafproxy_1`, " + ctr("0", true) +
				" FROM __leafproxy_q RETURNING id",
			count: "WITH __leafproxy_q (`__leafproxy_1`) AS (SELECT a FROM t) SELECT COUNT(*) FROM __leafproxy_q",
			tags:  "+order",
		},
		{
			name: "NEXTVAL in the select lists, not a rule table",
			sql:  "INSERT INTO log (k, a) SELECT NEXTVAL('x'), a FROM s UNION ALL SELECT NEXT VALUE FOR y, 2",
			want: "INSERT INTO log (k, a) SELECT " + ctr("0", false) + ", a FROM s UNION ALL SELECT " + ctr("1", false) + ", 2",
			count: "WITH __leafproxy_q (`__leafproxy_1`, `__leafproxy_2`) AS (SELECT 0, a FROM s UNION ALL SELECT 0, 2) " +
				"SELECT COUNT(*), COUNT(*) FROM __leafproxy_q",
			tags: "x,y",
		},
		{
			name: "NEXTVAL and the key",
			sql:  "INSERT INTO orders (name, note) SELECT a, NEXTVAL(x) FROM s",
			want: "INSERT INTO orders (name, note, `id`) WITH __leafproxy_q (`__leafproxy_1`, `__leafproxy_2`) AS (SELECT a, " + ctr("0", false) + " FROM s) " +
				"SELECT `__leafproxy_1`, `__leafproxy_2`, " + ctr("1", true) + " FROM __leafproxy_q",
			count: "WITH __leafproxy_q (`__leafproxy_1`, `__leafproxy_2`) AS (SELECT a, 0 FROM s) SELECT COUNT(*), COUNT(*) FROM __leafproxy_q",
			tags:  "x,+order",
		},
		{
			name:  "UPDATE, one value per row",
			sql:   "UPDATE LOW_PRIORITY t SET a = NEXTVAL('s'), b = b + 1 WHERE c IN (SELECT c FROM u) ORDER BY d LIMIT 10",
			want:  "UPDATE LOW_PRIORITY t SET a = " + ctr("0", false) + ", b = b + 1 WHERE c IN (SELECT c FROM u) ORDER BY d LIMIT 10",
			count: "SELECT COUNT(*) FROM (SELECT 1 FROM t  WHERE c IN (SELECT c FROM u) ORDER BY d LIMIT 10) AS __leafproxy_q",
			tags:  "s",
		},
		{
			name:  "multi-table UPDATE without WHERE",
			sql:   "UPDATE t JOIN u ON t.a = u.a SET t.k = NEXTVAL(s)",
			want:  "UPDATE t JOIN u ON t.a = u.a SET t.k = " + ctr("0", false),
			count: "SELECT COUNT(*) FROM (SELECT 1 FROM t JOIN u ON t.a = u.a  ) AS __leafproxy_q",
			tags:  "s",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := testEnv(t, tt.mode)
			p, err := PlanQuery(tt.sql, env)
			if err != nil {
				t.Fatalf("%q: %v", tt.sql, err)
			}
			if p.Kind != Numbered {
				t.Fatalf("%q: %v plan, want Numbered", tt.sql, p.Kind)
			}
			blocks := make([]Block, len(p.Counters))
			var tags []string
			for i, c := range p.Counters {
				blocks[i] = Block{First: 1000, N: 5}
				tag := c.Tag
				if c.Key {
					tag = "+" + tag
				}
				tags = append(tags, tag)
			}
			if got := strings.Join(tags, ","); got != tt.tags {
				t.Errorf("counters %s, want %s", got, tt.tags)
			}
			if got := string(p.RenderNumbered(nil, tt.sql, blocks)); got != tt.want {
				t.Errorf("statement\n got %s\nwant %s", got, tt.want)
			}
			if got := p.CountQuery(); got != tt.count {
				t.Errorf("count\n got %s\nwant %s", got, tt.count)
			}
			if p.CountsExplicit != tt.countExplicit {
				t.Errorf("CountsExplicit %v, want %v", p.CountsExplicit, tt.countExplicit)
			}
			wantInit := "SET @__leafproxy_n0 = 0"
			if len(p.Counters) == 2 {
				wantInit += ", @__leafproxy_n1 = 0"
			}
			if got := p.InitQuery(); got != wantInit {
				t.Errorf("init %q, want %q", got, wantInit)
			}
		})
	}
}

// TestNumberedRefused: what a numbered statement cannot do is an error
// before anything is sent.
func TestNumberedRefused(t *testing.T) {
	for _, tt := range []struct {
		sql     string
		mention string
	}{
		{"INSERT INTO orders (name) SELECT a FROM t; SELECT 1", "only statement"},
		{"SELECT 1; UPDATE t SET a = NEXTVAL(s)", "only statement"},
		{"INSERT INTO orders (name) SELECT a FROM t WHERE b = NEXTVAL(s)", "NEXTVAL(s) here"},
		{"INSERT INTO orders (name) SELECT a FROM t ON DUPLICATE KEY UPDATE name = t.a", "t.a"},
		{"UPDATE t SET a = 1 WHERE b = NEXTVAL(s)", "NEXTVAL(s) here"},
	} {
		_, err := PlanQuery(tt.sql, testEnv(t, Mode{}))
		e, ok := err.(*Error)
		if !ok || e.Code() != CodeNotSupported || !strings.Contains(e.Error(), tt.mention) {
			t.Errorf("%q: err %v, want 1235 mentioning %q", tt.sql, err, tt.mention)
		}
	}
	if _, err := PlanPrepare("UPDATE t JOIN u ON u.x = ? SET t.a = NEXTVAL(s)", testEnv(t, Mode{})); err == nil {
		t.Error("prepared UPDATE with a ? in its tables: no error")
	}
}

// TestNumberedPrepared: prepared numbered statements keep the client's
// parameters, read their blocks from variables, and count with the same
// parameters in the same order (the execute packet is reused as it is).
func TestNumberedPrepared(t *testing.T) {
	for _, tt := range []struct {
		sql, count, stmtHas string
		params              int
	}{
		{
			sql:     "INSERT INTO orders (name) SELECT a FROM t WHERE b = ? ON DUPLICATE KEY UPDATE note = ?",
			count:   "WITH __leafproxy_q (`__leafproxy_1`) AS (SELECT a FROM t WHERE b = ?) SELECT COUNT(*), ? INTO @__leafproxy_c0, @__leafproxy_cignored FROM __leafproxy_q",
			stmtHas: "IF((@__leafproxy_n0 := @__leafproxy_n0 + 1) <= @__leafproxy_lim0, IF(@__leafproxy_n0 = 1, LAST_INSERT_ID(@__leafproxy_b0), @__leafproxy_b0 + ((@__leafproxy_n0 - 1) DIV @__leafproxy_r0) * @__leafproxy_s0 + ((@__leafproxy_n0 - 1) MOD @__leafproxy_r0)), 18446744073709551615 + @__leafproxy_n0) FROM __leafproxy_q ON DUPLICATE KEY UPDATE note = ?",
			params:  2,
		},
		{
			sql:     "UPDATE t SET a = NEXTVAL(s), b = ? WHERE c = ?",
			count:   "SELECT COUNT(*) INTO @__leafproxy_c0 FROM (SELECT ? AS `__leafproxy_p1`, 1 FROM t  WHERE c = ?) AS __leafproxy_q",
			stmtHas: "SET a = IF((@__leafproxy_n0 := @__leafproxy_n0 + 1) <= @__leafproxy_lim0, @__leafproxy_b0 + ",
			params:  2,
		},
		{
			sql:     "INSERT INTO orders SELECT * FROM old WHERE x > ?",
			count:   q3 + "SELECT * FROM old WHERE x > ?) SELECT COUNT(*) - COUNT(NULLIF(`__leafproxy_1`, 0)), MAX(`__leafproxy_1`) INTO @__leafproxy_c0, @__leafproxy_cx FROM __leafproxy_q",
			stmtHas: "SELECT IF(`__leafproxy_1` IS NULL OR `__leafproxy_1` = 0, IF((",
			params:  1,
		},
	} {
		p, err := PlanPrepare(tt.sql, testEnv(t, Mode{}))
		if err != nil || p.Kind != Numbered {
			t.Fatalf("%q: %v %v", tt.sql, p.Kind, err)
		}
		if p.ClientParams != tt.params || p.Params != tt.params {
			t.Errorf("%q: params %d/%d, want %d", tt.sql, p.ClientParams, p.Params, tt.params)
		}
		if got := p.CountQuery(); got != tt.count {
			t.Errorf("%q: count\n got %s\nwant %s", tt.sql, got, tt.count)
		}
		if got := string(p.RenderNumbered(nil, tt.sql, nil)); !strings.Contains(got, tt.stmtHas) {
			t.Errorf("%q: statement %s\nwant it to hold %s", tt.sql, got, tt.stmtHas)
		}
	}
	p, _ := PlanPrepare("INSERT INTO orders (id, name) SELECT k, a FROM t", testEnv(t, Mode{}))
	if got := p.CountsQuery(); got != "SELECT @__leafproxy_c0, @__leafproxy_cx" {
		t.Errorf("counts query %q", got)
	}
	got := string(p.BlockVars(nil, []Block{{First: 100, N: 7}}))
	if want := "SET @__leafproxy_n0 = 0, @__leafproxy_lim0 = 7, @__leafproxy_b0 = 100, @__leafproxy_r0 = 4611686018427387904, @__leafproxy_s0 = 0"; got != want {
		t.Errorf("block variables\n got %s\nwant %s", got, want)
	}
}

// TestOverflowErrorAndBlock: the guard's error is told apart from other
// 1690s; a block's k-th ID for segment and snowflake layouts.
func TestOverflowErrorAndBlock(t *testing.T) {
	if !OverflowError(1690, "BIGINT UNSIGNED value is out of range in '18446744073709551615 + @`__leafproxy_n0`'") {
		t.Error("the guard's error not recognised")
	}
	if OverflowError(1690, "BIGINT UNSIGNED value is out of range in '`t`.`a` - 1'") || OverflowError(1062, "18446744073709551615 + @`__leafproxy_n0`") {
		t.Error("another error taken for the guard's")
	}
	seg := Block{First: 100, N: 10}
	if seg.At(0) != 100 || seg.At(9) != 109 {
		t.Errorf("segment block: %d..%d", seg.At(0), seg.At(9))
	}
	snow := Block{First: 5 << 22, N: 5000, Run: 4096, Stride: 1 << 22}
	if snow.At(4095) != 5<<22+4095 || snow.At(4096) != 6<<22 {
		t.Errorf("snowflake block: %d, %d", snow.At(4095), snow.At(4096))
	}
}

// TestExplicitKeys: explicit integer keys in rule tables are reported per
// tag (their largest), by the fast path and the parser path alike.
func TestExplicitKeys(t *testing.T) {
	for _, tt := range []struct {
		sql  string
		want int64
	}{
		{"INSERT INTO orders (id, name) VALUES (5, 'a'), (70, 'b'), (NULL, 'c')", 70},
		{"INSERT INTO orders (id, name) VALUES ('42', 'a')", 42},
		{"INSERT INTO orders SET id = 9, name = 'a'", 9},
		{"INSERT INTO orders (id, name) VALUES ('6.5', 'a')", 7},
		{"INSERT INTO orders (id, name) VALUES (NULL, 'a'), (5, 'b')", 0}, // after a generated key: an Advance
		{"INSERT INTO orders (id, name) VALUES (-5, 'a')", 0},
		{"INSERT INTO orders (name) VALUES ('a')", 0},
	} {
		p, err := PlanQuery(tt.sql, testEnv(t, Mode{}))
		if err != nil {
			t.Fatalf("%q: %v", tt.sql, err)
		}
		var got int64
		for _, x := range p.Explicit {
			if x.Tag == "order" {
				got = x.Max
			}
		}
		if got != tt.want {
			t.Errorf("%q: explicit %d, want %d", tt.sql, got, tt.want)
		}
	}
}

// namesOff is calls without how their names were written (Ident, DB),
// which TestNativeNames checks.
func namesOff(calls []Call) []Call {
	out := make([]Call, len(calls))
	for i, c := range calls {
		c.Ident, c.DB = false, ""
		out[i] = c
	}
	return out
}

// TestNativeNames: how calls name their sequence (a string is a proxy
// tag; an identifier, qualified or not, may be a MariaDB native SEQUENCE),
// for Sequence plans per call and for other plans per text; DDL's
// DEFAULT NEXTVAL(s) is the server's.
func TestNativeNames(t *testing.T) {
	env := testEnv(t, Mode{})
	p, err := PlanQuery("SELECT NEXTVAL('a'), NEXTVAL(b), NEXT VALUE FOR db1.c, LASTVAL(`x`.`d`)", env)
	if err != nil || p.Kind != Sequence {
		t.Fatal(p.Kind, err)
	}
	want := []Call{{Tag: "a"}, {Tag: "b", Ident: true}, {Tag: "c", Ident: true, DB: "db1"}, {Tag: "d", Ident: true, DB: "x"}}
	for i, c := range p.Calls {
		if c.Tag != want[i].Tag || c.Ident != want[i].Ident || c.DB != want[i].DB {
			t.Errorf("call %d: %+v, want %+v", i, c, want[i])
		}
	}
	p, err = PlanQuery("INSERT INTO t (a, b) VALUES (NEXTVAL(s1), NEXTVAL('s2')), (NEXT VALUE FOR d.s1, NEXTVAL(s1))", env)
	if err != nil || p.Kind != Rewrite {
		t.Fatal(p.Kind, err)
	}
	if len(p.Idents) != 2 || p.Idents[0] != (SeqName{Name: "s1"}) || p.Idents[1] != (SeqName{DB: "d", Name: "s1"}) || !p.StringCalls {
		t.Errorf("idents %+v, string calls %v", p.Idents, p.StringCalls)
	}
	for _, ddl := range []string{
		"CREATE TABLE t1 (i VARCHAR(10) DEFAULT NEXTVAL(s), j INT)",
		"ALTER TABLE t1 MODIFY i BIGINT DEFAULT (NEXT VALUE FOR s)",
	} {
		p, err := PlanPrepare(ddl, env)
		if err != nil || p.Kind != PassThrough {
			t.Errorf("%q: %v %v, want it passed through", ddl, p.Kind, err)
		}
	}
}
