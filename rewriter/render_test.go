package rewriter

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// TestRewrite checks the rendered text for each shape, with IDs 1001, 1002,
// ... in slot order. want "" means PassThrough.
func TestRewrite(t *testing.T) {
	ansi := Mode{ANSIQuotes: true}
	nbe := Mode{NoBackslashEscapes: true}
	zero := Mode{NoAutoValueOnZero: true}
	tests := []struct {
		name string
		sql  string
		mode Mode
		want string
	}{
		// Pass-through.
		{"plain select", "SELECT * FROM t WHERE id = 42", Mode{}, ""},
		{"insert other table", "INSERT INTO t (a) VALUES (NULL)", Mode{}, ""},
		{"insert other db", "INSERT INTO other.orders_x (a) VALUES (NULL)", Mode{}, ""},
		{"rule table in another db", "INSERT INTO other.items (name) VALUES ('x')", Mode{}, "INSERT INTO other.items (`sku`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'x')"},
		{"qualified rule other db", "INSERT INTO x.items (name) VALUES ('x')", Mode{}, ""},
		{"unreadable other table", "INSERT INTO t VALUES (1) RETURNING id", Mode{}, ""},
		{"explicit key", "INSERT INTO orders (id, name) VALUES (5, 'a'), (6, 'b')", Mode{}, ""},
		{"negative literal key", "INSERT INTO orders (id, name) VALUES (-5, 'a'), (+7, 'b')", Mode{}, ""},
		{"zero-like keys", "INSERT INTO orders (id, name) VALUES ('00', 'a'), (0.4, 'b'), ('0.4', 'c'), (-0, 'd'), (' 0', 'e'), (0x00, 'f'), (b'0', 'g'), (-0.4, 'h'), (0.5e0, 'i'), (N'0', 'j'), (_utf8'0', 'k'), (0b0, 'l'), (FALSE, 'm')", Mode{},
			"INSERT INTO orders (id, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a'), (0*(@__leaf_m:=LAST_INSERT_ID())+1002, 'b'), (1003, 'c'), (1004, 'd'), (1005, 'e'), (1006, 'f'), (1007, 'g'), (1008, 'h'), (1009, 'i'), (1010, 'j'), (1011, 'k'), (1012, 'l'), (1013, 'm')"},
		{"kept: rounds to 1", "INSERT INTO orders (id, name) VALUES (0.5, 'a'), ('0.5', 'b'), (TRUE, 'c')", Mode{}, ""},
		{"bad zero non-strict", "INSERT INTO orders (id, name) VALUES ('abc', 'a'), ('', 'b'), ('0x', 'c'), (x'00', 'd')", Mode{},
			"INSERT INTO orders (id, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a'), (0*(@__leaf_m:=LAST_INSERT_ID())+1002, 'b'), (1003, 'c'), (1004, 'd')"},
		{"bad zero strict is the server's error", "INSERT INTO orders (id, name) VALUES ('abc', 'a'), ('', 'b'), ('0x', 'c'), (x'00', 'd')", Mode{Strict: true}, ""},
		{"bad zero strict ignore", "INSERT IGNORE INTO orders (id, name) VALUES ('abc', 'a')", Mode{Strict: true}, "INSERT IGNORE INTO orders (id, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a')"},
		{"count mismatch other table", "INSERT INTO t (a, b) VALUES (NULL)", Mode{}, ""},
		{"val in string", "INSERT INTO t (a) VALUES ('NEXTVAL(''x'')')", Mode{}, ""},
		{"val in comment", "UPDATE t SET a = 1 /* NEXTVAL('x') */ -- NEXTVAL(y)\n", Mode{}, ""},
		{"qualified function", "SELECT db.nextval(a)", Mode{}, ""},
		{"column named nextval", "SELECT nextval, `lastval` FROM t", Mode{}, ""},
		{"stored procedure", "CREATE PROCEDURE p() BEGIN INSERT INTO orders (name) VALUES ('x'); INSERT INTO orders (name) VALUES ('y'); END", Mode{}, ""},
		{"compound", "BEGIN NOT ATOMIC INSERT INTO orders (name) VALUES ('x'); END", Mode{}, ""},
		{"quoted nextval function", "SELECT `nextval`(1)", Mode{}, ""},

		// Key absent.
		{"absent", "INSERT INTO orders (name) VALUES ('a')", Mode{}, "INSERT INTO orders (`id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a')"},
		{"absent multi", "insert into orders(name,note)values('a','b'),( 'c' , 'd' )", Mode{}, "insert into orders(`id`, name,note)values(LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a','b'),(0*(@__leaf_m:=LAST_INSERT_ID())+1002,  'c' , 'd' )"},
		{"absent VALUE", "INSERT orders (name) VALUE ('a')", Mode{}, "INSERT orders (`id`, name) VALUE (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a')"},
		{"absent empty list", "INSERT INTO orders () VALUES (), ()", Mode{}, "INSERT INTO orders (`id`) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001)), (0*(@__leaf_m:=LAST_INSERT_ID())+1002)"},
		{"absent no list empty rows", "INSERT INTO orders VALUES ()", Mode{}, "INSERT INTO orders (`id`) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001))"},
		{"absent set", "INSERT INTO orders SET name = 'a', note = 'b'", Mode{}, "INSERT INTO orders SET `id` = LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), name = 'a', note = 'b'"},
		{"absent qualified", "INSERT INTO shop.items (name) VALUES ('a')", Mode{}, "INSERT INTO shop.items (`item_id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a')"},
		{"absent backquoted", "INSERT INTO `shop`.`items` (name) VALUES ('a')", Mode{}, "INSERT INTO `shop`.`items` (`item_id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a')"},
		{"absent ansi quoted", `INSERT INTO "orders" ("name") VALUES ('a"b')`, ansi, "INSERT INTO \"orders\" (`id`, \"name\") VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a\"b')"},
		{"quoted names in rule", "INSERT INTO `ev``t` (x) VALUES (1)", Mode{}, "INSERT INTO `ev``t` (`k``ey`, x) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 1)"},
		{"absent ignore partition", "INSERT LOW_PRIORITY IGNORE INTO orders PARTITION (p0) (name) VALUES ('a')", Mode{}, "INSERT LOW_PRIORITY IGNORE INTO orders PARTITION (p0) (`id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a')"},
		{"replace", "REPLACE INTO orders (name) VALUES ('a')", Mode{}, "REPLACE INTO orders (`id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a')"},
		{"replace set", "REPLACE orders SET name = 'a'", Mode{}, "REPLACE orders SET `id` = LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), name = 'a'"},
		{"odku", "INSERT INTO orders (name) VALUES ('a'), ('b') ON DUPLICATE KEY UPDATE name = VALUES(name)", Mode{}, "INSERT INTO orders (`id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a'), (0*(@__leaf_m:=LAST_INSERT_ID())+1002, 'b') ON DUPLICATE KEY UPDATE name = VALUES(name)"},

		// Key given as NULL / DEFAULT / 0.
		{"null default zero", "INSERT INTO orders (name, id) VALUES ('a', NULL), ('b', DEFAULT), ('c', 0), ('d', '0'), ('e', 7), ('f', FALSE), ('g', 0.0), ('h', null)", Mode{}, "INSERT INTO orders (name, id) VALUES ('a', LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001)), ('b', 0*(@__leaf_m:=LAST_INSERT_ID())+1002), ('c', 1003), ('d', 1004), ('e', 7), ('f', 1005), ('g', 1006), ('h', 1007)"},
		{"no auto value on zero", "INSERT INTO orders (name, id) VALUES ('a', 0), ('b', NULL), ('c', '0'), ('d', DEFAULT)", zero, "INSERT INTO orders (name, id) VALUES ('a', 0), ('b', LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001)), ('c', '0'), ('d', 0)"},
		{"explicit first row", "INSERT INTO orders (id, name) VALUES (9, 'a'), (NULL, 'b')", Mode{}, "INSERT INTO orders (id, name) VALUES (9, 'a'), (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'b')"},
		{"set null", "INSERT INTO orders SET name = 'a', id = NULL", Mode{}, "INSERT INTO orders SET name = 'a', id = LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001)"},
		{"set zero odku", "INSERT INTO orders SET id = 0 ON DUPLICATE KEY UPDATE name = 'b'", Mode{}, "INSERT INTO orders SET id = LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001) ON DUPLICATE KEY UPDATE name = 'b'"},
		{"default(key) is DEFAULT", "INSERT INTO orders (id) VALUES (DEFAULT(id))", Mode{}, "INSERT INTO orders (id) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001))"},
		{"no column list", "INSERT INTO orders VALUES (NULL, 'a', 'b'), (5, 'c', 'd'), (0, 'e', 'f')", Mode{}, "INSERT INTO orders VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a', 'b'), (IF((@__leaf_m:=LAST_INSERT_ID()) IS NULL,NULL,5), 'c', 'd'), (1002, 'e', 'f')"},
		{"no column list key second", "INSERT INTO items VALUES ('a', DEFAULT)", Mode{}, "INSERT INTO items VALUES ('a', LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001))"},
		{"comment around value", "INSERT INTO orders (id) VALUES (/* k */ NULL /* v */)", Mode{}, "INSERT INTO orders (id) VALUES (/* k */ LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001) /* v */)"},
		{"quoted column name", "INSERT INTO orders (`ID`) VALUES (NULL)", Mode{}, "INSERT INTO orders (`ID`) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001))"},

		// Text that must survive byte for byte.
		{"backslashes", `INSERT INTO orders (name, note) VALUES ('a\\b\'c', "d\"e")`, Mode{}, `INSERT INTO orders (` + "`id`" + `, name, note) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a\\b\'c', "d\"e")`},
		{"no backslash escapes", `INSERT INTO orders (name) VALUES ('a\'), ('b')`, nbe, "INSERT INTO orders (`id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a\\'), (0*(@__leaf_m:=LAST_INSERT_ID())+1002, 'b')"},
		{"literals and hints", "INSERT /*+ SET_VAR(sort_buffer_size=1) */ INTO orders (name, note) VALUES (_binary'\x00\xff', x'0A'), (b'101', _utf8mb4'😀') -- end", Mode{}, "INSERT /*+ SET_VAR(sort_buffer_size=1) */ INTO orders (`id`, name, note) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), _binary'\x00\xff', x'0A'), (0*(@__leaf_m:=LAST_INSERT_ID())+1002, b'101', _utf8mb4'😀') -- end"},
		{"parens in strings", "INSERT INTO orders (name) VALUES ('a)(b'), (')')", Mode{}, "INSERT INTO orders (`id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a)(b'), (0*(@__leaf_m:=LAST_INSERT_ID())+1002, ')')"},
		{"comments", "# c1\nINSERT INTO /* (x) */ orders -- (y)\n (name) VALUES ('a')", Mode{}, "# c1\nINSERT INTO /* (x) */ orders -- (y)\n (`id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a')"},
		{"executable comment", "INSERT INTO orders (name) VALUES (/*!50000 'a' */)", Mode{}, "INSERT INTO orders (`id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), /*!50000 'a' */)"},
		{"double-dash not comment", "INSERT INTO orders (id, name) VALUES (NULL, 1--1)", Mode{}, "INSERT INTO orders (id, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 1--1)"},

		// Multi-statement.
		{"multi", "INSERT INTO orders (name) VALUES ('a'); SELECT 1; INSERT INTO orders (name) VALUES ('b'), ('c');", Mode{}, "INSERT INTO orders (`id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a'); SELECT 1; INSERT INTO orders (`id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1002), 'b'), (0*(@__leaf_m:=LAST_INSERT_ID())+1003, 'c');"},
		{"semicolon in string", "INSERT INTO t (a) VALUES ('; INSERT INTO orders (name) VALUES (1)')", Mode{}, ""},

		// NEXTVAL as a value.
		{"nextval in values", "INSERT INTO t (a, b) VALUES (NEXTVAL('x'), 1), (next value for x, NEXTVAL(y))", Mode{}, "INSERT INTO t (a, b) VALUES (1001, 1), (1002, 1003)"},
		{"nextval in key column", "INSERT INTO orders (id, name) VALUES (NEXTVAL('o'), 'a'), (NULL, NEXTVAL('n'))", Mode{}, "INSERT INTO orders (id, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a'), (0*(@__leaf_m:=LAST_INSERT_ID())+1002, 1003)"},
		{"nextval expression in key", "INSERT INTO orders (id) VALUES (NEXTVAL('o') + 1)", Mode{}, "INSERT INTO orders (id) VALUES (1001 + 1)"},
		{"nextval with key absent", "INSERT INTO orders (name) VALUES (NEXTVAL('n'))", Mode{}, "INSERT INTO orders (`id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 1002)"},
		{"nextval set", "INSERT INTO t SET a = NEXTVAL(s), b = CONCAT('x', NEXTVAL('s'))", Mode{}, "INSERT INTO t SET a = 1001, b = CONCAT('x', 1002)"},
		{"nextval one-row odku", "INSERT INTO t (a) VALUES (1) ON DUPLICATE KEY UPDATE b = NEXTVAL('s')", Mode{}, "INSERT INTO t (a) VALUES (1) ON DUPLICATE KEY UPDATE b = 1001"},
		{"nextval set var", "SET @x = NEXTVAL('s')", Mode{}, "SET @x = 1001"},
		{"nextval with comment inside", "INSERT INTO t VALUES (NEXTVAL(/* c */ 's' -- d\n))", Mode{}, "INSERT INTO t VALUES (1001)"},
		{"nextval mixed select", "SELECT NEXTVAL('a'), NOW()", Mode{}, "SELECT 1001 AS `NEXTVAL('a')`, NOW()"},
		{"nextval select expression", "SELECT NEXTVAL('a')%2, NEXTVAL(b)x", Mode{}, "SELECT 1001%2 AS `NEXTVAL('a')%2`, 1002 x"},
		{"nextval select alias limit", "SELECT NEXTVAL('a') AS id LIMIT 1", Mode{}, "SELECT 1001 AS id LIMIT 1"},
		{"nextval select in multi", "SELECT NEXTVAL('a'); SELECT 1", Mode{}, "SELECT 1001 AS `NEXTVAL('a')`; SELECT 1"},
		{"nextval ansi", `INSERT INTO t VALUES (NEXTVAL("s"), "x")`, ansi, `INSERT INTO t VALUES (1001, "x")`},
		{"nextval in bang comment", "INSERT INTO t VALUES (/*!50000 NEXTVAL('s') */)", Mode{}, "INSERT INTO t VALUES (/*!50000 1001 */)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := testEnv(t, tt.mode)
			diffFast(t, tt.sql, env, false)
			p, err := PlanQuery(tt.sql, env)
			if err != nil {
				t.Fatalf("%q: %v", tt.sql, err)
			}
			if tt.want == "" {
				if p.Kind != PassThrough {
					t.Fatalf("%q: %v plan, renders %q", tt.sql, p.Kind, p.mustRender(t, nil, tt.sql, ids(len(p.Slots))))
				}
				return
			}
			if p.Kind != Rewrite {
				t.Fatalf("%q: %v plan, want Rewrite", tt.sql, p.Kind)
			}
			if got := string(p.mustRender(t, nil, tt.sql, ids(len(p.Slots)))); got != tt.want {
				t.Errorf("%q:\n got %q\nwant %q", tt.sql, got, tt.want)
			} else if l := p.renderedLen(tt.sql, ids(len(p.Slots))); l != len(got) {
				t.Errorf("%q: renderedLen %d, rendered %d bytes", tt.sql, l, len(got))
			}
			n := 0
			for _, tc := range p.Tags {
				n += tc.N
			}
			if n != len(p.Slots) {
				t.Errorf("tags count %d IDs, %d slots", n, len(p.Slots))
			}
			mustParse(t, string(p.mustRender(t, nil, tt.sql, ids(len(p.Slots)))), tt.mode)
		})
	}
}

func TestPrepare(t *testing.T) {
	zero := Mode{NoAutoValueOnZero: true}
	tests := []struct {
		sql  string
		mode Mode
		want string
	}{
		{"INSERT INTO orders (name) VALUES (?), (?)", Mode{}, "INSERT INTO orders (`id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+?), ?), (0*(@__leaf_m:=LAST_INSERT_ID())+?, ?)"},
		{"INSERT INTO orders (id, name) VALUES (?, ?), (?, ?)", Mode{}, "INSERT INTO orders (id, name) VALUES (COALESCE(?,LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+?)), ?), (IF((@__leaf_m:=LAST_INSERT_ID()) IS NULL,NULL,COALESCE(?,?)), ?)"},
		{"INSERT INTO orders (id, name) VALUES (?, ?)", zero, "INSERT INTO orders (id, name) VALUES (COALESCE(?,LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+?)), ?)"},
		{"INSERT INTO orders SET id = ?, name = ?", Mode{}, "INSERT INTO orders SET id = COALESCE(?,LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+?)), name = ?"},
		{"INSERT INTO orders (id, name) VALUES (NULL, ?)", Mode{}, "INSERT INTO orders (id, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+?), ?)"},
		{"INSERT INTO t (a, b) VALUES (NEXTVAL('s'), ?)", Mode{}, "INSERT INTO t (a, b) VALUES (?, ?)"},
		{"SELECT * FROM orders WHERE id = ?", Mode{}, ""},
	}
	for _, tt := range tests {
		diffFast(t, tt.sql, testEnv(t, tt.mode), true)
		p, err := PlanPrepare(tt.sql, testEnv(t, tt.mode))
		if err != nil {
			t.Errorf("%q: %v", tt.sql, err)
			continue
		}
		if tt.want == "" {
			if p.Kind != PassThrough {
				t.Errorf("%q: %v plan", tt.sql, p.Kind)
			}
			continue
		}
		got := string(p.mustRender(t, nil, tt.sql, nil))
		if l := p.renderedLen(tt.sql, nil); l != len(got) {
			t.Errorf("%q: renderedLen %d, rendered %d bytes", tt.sql, l, len(got))
		}
		if p.Kind != Rewrite || got != tt.want {
			t.Errorf("%q: %v\n got %q\nwant %q", tt.sql, p.Kind, got, tt.want)
		}
		checkParams(t, tt.sql, tt.mode, p)
		mustParse(t, got, tt.mode)
	}
	// The same text through PlanQuery: a ? is not a key to fill.
	p, err := PlanQuery("INSERT INTO orders (id, name) VALUES (?, ?)", testEnv(t, Mode{}))
	if err != nil || p.Kind != PassThrough {
		t.Errorf("PlanQuery with ? key: %v %v", p.Kind, err)
	}
}

func TestAssignIDs(t *testing.T) {
	sql := "INSERT INTO orders (name) VALUES (NEXTVAL('x')), (NEXTVAL('x')); INSERT INTO orders (name) VALUES ('c')"
	p, err := PlanPrepare(sql, testEnv(t, Mode{}))
	if err != nil {
		t.Fatal(err)
	}
	wantTags := []TagCount{{"order", 3}, {"x", 2}}
	if len(p.Tags) != 2 || p.Tags[0] != wantTags[0] || p.Tags[1] != wantTags[1] {
		t.Fatalf("Tags = %+v, want %+v", p.Tags, wantTags)
	}
	got, err := p.AssignIDs(nil, [][]int64{{10, 11, 12}, {50, 51}})
	if err != nil {
		t.Fatal(err)
	}
	// Slot order: order, x, order, x, order.
	want := []int64{10, 50, 11, 51, 12}
	if len(got) != len(want) {
		t.Fatalf("AssignIDs = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("AssignIDs = %v, want %v", got, want)
		}
	}
	if _, err := p.AssignIDs(nil, [][]int64{{10, 11}, {50, 51}}); err == nil {
		t.Error("AssignIDs accepted a short batch")
	}
	if _, err := p.AssignIDs(nil, [][]int64{{10, 11, 12}}); err == nil {
		t.Error("AssignIDs accepted a missing batch")
	}
	var none Plan
	if s := string(none.mustRender(t, nil, "SELECT 1", nil)); s != "SELECT 1" {
		t.Errorf("Render of a pass-through plan = %q", s)
	}
}

// checkParams checks a prepared plan's parameter numbering: the rendered
// text has Params markers, ClientParams of them the client's, and putting
// each slot's ID at marker Slots[i].Param gives what the same plan renders
// with the IDs spliced as literals.
func checkParams(t testing.TB, sql string, mode Mode, p Plan) {
	t.Helper()
	if !p.prepared || p.Kind != Rewrite {
		t.Fatalf("%q: not a prepared Rewrite plan", sql)
	}
	out := string(p.mustRender(t, nil, sql, nil))
	if want := strings.Count(sql, "?"); p.ClientParams != want || p.Params != want+len(p.Slots) {
		t.Fatalf("%q: ClientParams %d, Params %d; want %d and %d", sql, p.ClientParams, p.Params, want, want+len(p.Slots))
	}
	if n := strings.Count(out, "?"); n != p.Params {
		t.Fatalf("%q rendered as %q: %d markers, Params %d", sql, out, n, p.Params)
	}
	vals := ids(len(p.Slots))
	byParam := map[int]int64{}
	for i, sl := range p.Slots {
		if _, dup := byParam[sl.Param]; dup || sl.Param < 0 || sl.Param >= p.Params {
			t.Fatalf("%q: slot %d has parameter %d (duplicate or out of range)", sql, i, sl.Param)
		}
		byParam[sl.Param] = vals[i]
	}
	var sb strings.Builder
	l := lexer{sql: out, mode: mode}
	last, k := 0, 0
	for tok := l.next(); tok.kind != tEOF; tok = l.next() {
		if tok.kind != tParam {
			continue
		}
		sb.WriteString(out[last:tok.start])
		if v, ok := byParam[k]; ok {
			sb.WriteString(strconv.FormatInt(v, 10))
		} else {
			sb.WriteString("?")
		}
		last, k = tok.end, k+1
	}
	sb.WriteString(out[last:])
	lit := p
	lit.prepared = false
	if want := string(lit.mustRender(t, nil, sql, vals)); sb.String() != want {
		t.Fatalf("%q: IDs at their parameter indexes give\n %q\nwant %q", sql, sb.String(), want)
	}
}

// TestPrepareParams pins the parameter numbering of prepared plans: the
// client's markers (quoted and commented ones do not count) and the
// generated ones in text order.
func TestPrepareParams(t *testing.T) {
	zero := Mode{NoAutoValueOnZero: true}
	for _, tt := range []struct {
		sql    string
		mode   Mode
		client int
		params []int // Slots[i].Param
	}{
		{"INSERT INTO orders (name) VALUES (?)", Mode{}, 1, []int{0}},
		{"INSERT INTO orders (name, note) VALUES (?, ?), (?, ?)", Mode{}, 4, []int{0, 3}},
		{"INSERT INTO orders (id, name) VALUES (?, ?), (?, ?)", Mode{}, 4, []int{1, 4}},
		{"INSERT INTO orders (id, name) VALUES (?, ?)", zero, 2, []int{1}},
		{"INSERT INTO orders (name, id) VALUES (?, NULL), ('a?', 0)", Mode{}, 1, []int{1, 2}},
		{"INSERT INTO orders (name, id) VALUES (? /* ? */, ?), (`?`, DEFAULT)", Mode{}, 2, []int{2, 3}},
		{"INSERT INTO orders SET name = ?, id = ?", Mode{}, 2, []int{2}},
		{"INSERT INTO orders SET name = ?", Mode{}, 1, []int{0}},
		{"INSERT INTO orders (name) VALUES ('x')", Mode{}, 0, []int{0}},
		{"INSERT INTO t (a, b) VALUES (?, NEXTVAL('s')), (NEXTVAL(s), ?)", Mode{}, 2, []int{1, 2}},
		{"INSERT INTO orders (name) VALUES (?) ON DUPLICATE KEY UPDATE name = ?", Mode{}, 2, []int{0}},
		{"INSERT INTO orders (name) VALUES (\"?\"), (?)", Mode{ANSIQuotes: true}, 1, []int{0, 1}},
	} {
		p, err := PlanPrepare(tt.sql, testEnv(t, tt.mode))
		if err != nil || p.Kind != Rewrite {
			t.Errorf("%q: %v %v", tt.sql, p.Kind, err)
			continue
		}
		var got []int
		for _, sl := range p.Slots {
			got = append(got, sl.Param)
		}
		if p.ClientParams != tt.client || fmt.Sprint(got) != fmt.Sprint(tt.params) || p.Params != tt.client+len(p.Slots) {
			t.Errorf("%q: client %d, params %v (of %d); want %d, %v\n%s", tt.sql, p.ClientParams, got, p.Params, tt.client, tt.params, p.mustRender(t, nil, tt.sql, nil))
		}
	}
}

// mustRender is Render for a test: an error fails tb. Not for timed loops
// (tb.Helper costs more than Render).
func (p *Plan) mustRender(tb testing.TB, dst []byte, sql string, ids []int64) []byte {
	tb.Helper()
	out, err := p.Render(dst, sql, ids)
	if err != nil {
		tb.Fatalf("Render: %v", err)
	}
	return out
}
