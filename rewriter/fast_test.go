package rewriter

import (
	"fmt"
	"github.com/leafproxy/leafproxy/internal/sqltext"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// compareFast plans sql with and without the fast path and reports how
// they differ ("" when they agree). hits is the number of statements the
// fast path planned. With tolerate, a statement the TiDB parser cannot read
// at all (the parser path's "cannot read this statement" 1235) may be
// planned by the fast path: that is the one intended difference (the server
// gets it and judges its syntax); the fast plan must then still hold every
// ID exactly once.
func compareFast(sql string, env *Env, prepared, tolerate bool) (hits int, problem string) {
	pf, hits, errF := planWith(sql, sqltext.ClassifyString(sql), env, prepared, true)
	if pn, errN := planNoFirst(sql, env, prepared); errString(errN) != errString(errF) || errN == nil && !reflect.DeepEqual(canon(pn), canon(pf)) {
		return hits, "quickPlan's firstInsert changed the plan:\nwith    " + planString(pf) + " " + errString(errF) + "\nwithout " + planString(pn) + " " + errString(errN)
	}
	if problem := compareMemo(sql, env, prepared); problem != "" {
		return hits, problem
	}
	pp, _, errP := planWith(sql, sqltext.ClassifyString(sql), env, prepared, false)
	switch {
	case errF != nil || errP != nil:
		if errF != nil && errP != nil && errF.Error() == errP.Error() {
			return hits, ""
		}
		unreadable := errP != nil && strings.Contains(errP.Error(), "cannot read this statement on")
		if tolerate && errF != nil && hits > 0 && unreadable {
			// The fast path read an earlier statement the parser cannot;
			// a later one is an error either way.
			return hits, ""
		}
		if tolerate && errF == nil && hits > 0 && unreadable {
			if pf.Kind == Sequence {
				return hits, "fast path planned an unreadable statement as " + pf.Kind.String()
			}
			if tolerated != nil {
				tolerated(sql, errP)
			}
			if !prepared {
				rendered, err := pf.Render(nil, sql, fuzzIDs(len(pf.Slots)))
				if err != nil {
					return hits, "fast path plan does not render: " + err.Error()
				}
				out := string(rendered)
				for i := range pf.Slots {
					if strings.Count(out, strconv.FormatInt(fuzzIDBase+int64(i), 10)) != 1 {
						return hits, "ID not exactly once in " + out
					}
				}
			}
			return hits, ""
		}
		return hits, "errors differ: fast " + errString(errF) + " / parser " + errString(errP)
	case !reflect.DeepEqual(canon(pf), canon(pp)):
		return hits, "plans differ:\nfast   " + planString(pf) + "\nparser " + planString(pp)
	}
	ids := fuzzIDs(len(pf.Slots))
	a, errA := pf.Render(nil, sql, ids)
	b, errB := pp.Render(nil, sql, ids)
	if errA != nil || errB != nil {
		return hits, "plans do not render: fast " + errString(errA) + " / parser " + errString(errB)
	}
	if string(a) != string(b) {
		return hits, "rendered texts differ:\nfast   " + string(a) + "\nparser " + string(b)
	}
	return hits, ""
}

// tolerated, when set, sees each input planned under compareFast's
// tolerance (for reviewing what the fuzzer finds).
var tolerated func(sql string, parserErr error)

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// canon is p with its edits' texts numbered in order of first use (paths
// that plan the same edits may add their strings in another order, or
// leave unused ones), for reflect.DeepEqual.
func canon(p Plan) Plan {
	if p.texts == nil {
		return p
	}
	texts := []string{""}
	index := func(i uint32) uint32 {
		t := p.texts[i]
		for j, u := range texts {
			if u == t {
				return uint32(j)
			}
		}
		texts = append(texts, t)
		return uint32(len(texts) - 1)
	}
	edits := slices.Clone(p.edits)
	for i := range edits {
		e := &edits[i]
		e.tag, e.pre, e.post = index(e.tag), index(e.pre), index(e.post)
	}
	p.edits, p.texts = edits, texts
	return p
}

func planString(p Plan) string {
	type shown struct {
		start, end, slot    int
		tag, pre, post      string
		key, wrap, par, ign bool
	}
	edits := make([]shown, len(p.edits))
	for i, e := range p.edits {
		edits[i] = shown{e.start, e.end, e.slot, p.texts[e.tag], p.texts[e.pre], p.texts[e.post], e.key, e.wrap, e.param, e.ignore}
	}
	return fmt.Sprintf("%v edits %+v tags %+v filled %+v", p.Kind, edits, p.Tags, p.Filled)
}

// diffFast fails t when the fast path and the parser path disagree on sql
// (strictly: no tolerated difference); it returns the fast path's hits.
func diffFast(t testing.TB, sql string, env *Env, prepared bool) int {
	t.Helper()
	hits, problem := compareFast(sql, env, prepared, false)
	if problem != "" {
		t.Errorf("%q (mode %+v, prepared %v): %s", sql, env.Mode, prepared, problem)
	}
	return hits
}

// fastCases: inputs for the differential test. accept > 0: the fast path
// must plan that many statements of it (Mode{}, prepared as given).
var fastCases = []struct {
	sql      string
	prepared bool
	accept   int
}{
	// ORMs and drivers.
	{"INSERT INTO `orders` (`name`,`note`) VALUES (?,?),(?,?)", true, 1},          // GORM, prepared
	{"INSERT INTO `orders` (`name`,`note`) VALUES ('a','b'),('c','d')", false, 1}, // GORM, interpolated
	{"INSERT INTO `orders` (`name`,`note`) VALUES ('a','b') RETURNING `id`", false, 1},
	{"INSERT INTO `orders` (`name`,`note`) VALUES (?,?) RETURNING `id`", true, 1},
	{"INSERT INTO `orders` (`id`,`name`) VALUES (0,'a') ON DUPLICATE KEY UPDATE `name`=VALUES(`name`)", false, 1},
	{"INSERT INTO `orders` (`name`) VALUES ('a') ON DUPLICATE KEY UPDATE `id`=`id`", false, 1},
	{"INSERT INTO orders (name, note) VALUES ('it\\'s', NULL), ('2024-01-02 03:04:05.123456', _binary'\x00\xff')", false, 1}, // go-sql-driver interpolateParams
	{"INSERT INTO orders (name, note) VALUES (-1.5e3, 0x0A), (TRUE, 'a\\\\b\\n')", false, 1},
	{"INSERT INTO orders (id, name) VALUES (?, ?)", true, 1},
	{"insert into orders (id, name) values (null, ?)", true, 1}, // Hibernate
	{"insert into orders (name, id) values (?, default)", true, 1},
	{"INSERT INTO orders (name) VALUES (?)", true, 1},
	{"INSERT INTO orders (name) VALUES ('x')", false, 1},
	{"INSERT INTO orders (name, note) VALUE ('x', 'y')", false, 1},
	{"INSERT IGNORE INTO orders (name) VALUES ('x')", false, 1},
	{"INSERT orders (name) VALUES ('x')", false, 1},
	{"REPLACE INTO orders (id, name) VALUES (NULL, 'a'), (7, 'b')", false, 1},
	{"REPLACE orders (name) VALUES ('a') RETURNING id", false, 1},
	{"INSERT INTO shop.items (name) VALUES ('a')", false, 1},
	{"INSERT INTO `shop`.`items` (`NAME`) VALUES ('a')", false, 1},
	{"INSERT INTO other.items (sku, name) VALUES (0, 'a')", false, 1},
	{"INSERT INTO `ev``t` (x) VALUES (1), (2)", false, 1},
	{"INSERT INTO `ev``t` (`k``ey`, x) VALUES (NULL, 1)", false, 1},

	// Key values of every single-token form.
	{"INSERT INTO orders (id, name) VALUES (NULL, 'a'), (DEFAULT, 'b'), (0, 'c'), ('0', 'd'), (7, 'e'), (FALSE, 'f'), (0.0, 'g'), (null, 'h'), (TRUE, 'i'), ('7', 'j'), (\"0\", 'k'), (1e3, 'l'), (.0, 'm'), (00, 'n'), (0e1, 'o'), ('00', 'p'), ('\\0', 'q'), (default, 'r'), (0., 's')", false, 1},
	{"INSERT INTO orders (name, id) VALUES ('a', 0), ('b', '0')", false, 1},
	{"INSERT INTO orders (name, ID) VALUES ('a', NULL)", false, 1},
	{"INSERT INTO orders (id, id) VALUES (NULL, 5)", false, 1},
	{"INSERT INTO orders (id, name) VALUES (5, 'a'), (6, 'b')", false, 1}, // explicit: PassThrough
	{"INSERT INTO orders (id, name) VALUES (?, ?), (NULL, ?), (0, ?)", true, 1},
	{"INSERT INTO orders (id) VALUES (/* k */ NULL /* v */)", false, 1},

	// Layout.
	{"insert into orders(name,note)values('a','b'),( 'c' , 'd' )", false, 1},
	{"INSERT/*a*/INTO/*b*/orders/*c*/(/*d*/name/*e*/)/*f*/VALUES/*g*/(/*h*/'a'/*i*/)/*j*/", false, 1},
	{"INSERT INTO orders\n\t(name)\nVALUES\n\t('a'),\n\t('b') -- done", false, 1},
	{"INSERT INTO orders (name) VALUES ('a') # done", false, 1},
	{"INSERT INTO orders (name) VALUES ('a') /* done */", false, 1},
	{"INSERT INTO orders (name) VALUES ('a');", false, 1},
	{"INSERT INTO orders (name) VALUES ('a'); INSERT INTO orders (id) VALUES (NULL);", false, 2},
	{"INSERT INTO orders (name) VALUES ('a'); INSERT INTO orders SET name = 'b'; INSERT INTO orders (name) VALUES ('c')", false, 2},
	{"INSERT INTO orders (name) VALUES ('a'); SELECT 1; UPDATE orders SET name = 'b'", false, 1},
	{"INSERT /*+ SET_VAR(sort_buffer_size=1) */ INTO orders (name) VALUES ('a')", false, 1},
	{"INSERT INTO orders () VALUES ()", false, 1},
	{"INSERT INTO orders ( ) VALUES ( ), ()", false, 1},
	{"INSERT INTO orders (name, note) VALUES ('a,b)', 'c''d'), (\"e\\\"f\", CONCAT('x', (1 + 2), JSON_OBJECT('k', 'v')))", false, 1},
	{"INSERT INTO orders (name, note) VALUES (CAST('1' AS CHAR), CASE WHEN 1 THEN 'a' ELSE 'b' END)", false, 1},
	{"INSERT INTO orders (name) VALUES (@v), (@@session.x), (@`q`), (@'s')", false, 1},
	{"INSERT INTO orders (name) VALUES ('a') RETURNING id, CONCAT(name, ')'), `returning`", false, 1},
	{"INSERT INTO orders (name) VALUES ('a') ON DUPLICATE KEY UPDATE name = VALUES(name), note = CONCAT(note, ',') RETURNING id", false, 1},
	{"INSERT INTO orders (name) VALUES (1--1)", false, 1},
	{"SET STATEMENT max_statement_time=1 FOR INSERT INTO orders (name) VALUES ('a')", false, 1},
	{"INSERT INTO orders (name) VALUES ('a'), ('b')\n", false, 1},
	{"INSERT INTO orders (name) VALUES ('😀'), (N'x'), (X'00')", false, 1},

	// Declined: the parser plans these (or rejects them).
	{"INSERT INTO orders PARTITION (p0) (name) VALUES ('a')", false, 0},
	{"INSERT INTO orders VALUES (NULL, 'a', 'b')", false, 0},
	{"INSERT INTO orders VALUES ()", false, 0},
	{"INSERT INTO orders SET name = 'a'", false, 0},
	{"INSERT INTO orders (name) SELECT 'a'", false, 0},
	{"INSERT INTO orders (name) VALUES ((SELECT 1))", false, 0},
	{"INSERT INTO orders (name) VALUES ((TABLE t))", false, 0},
	{"INSERT INTO orders (name) VALUES (?)", false, 0},
	{"INSERT INTO orders (id, name) VALUES (?, 'a')", false, 0},
	{"INSERT INTO orders (name) VALUES (NEXTVAL('s'))", false, 0},
	{"INSERT INTO orders (name) VALUES (nextval)", false, 0},
	{"INSERT INTO orders (id, name) VALUES (NEXT VALUE FOR s, 'a')", false, 0},
	{"INSERT INTO orders (name) VALUES (/*! 'a' */)", false, 0},
	{"INSERT /*!40000 IGNORE */ INTO orders (name) VALUES ('a')", false, 0},
	{"INSERT INTO orders (name) VALUES ('a') AS new ON DUPLICATE KEY UPDATE name = new.name", false, 0},
	{"INSERT INTO orders (name) VALUES ('a') AS new", false, 0},
	{"INSERT INTO orders (name, note) VALUES ('a')", false, 0},
	{"INSERT INTO orders (name) VALUES ('a', 'b')", false, 0},
	{"INSERT INTO orders (name) VALUES ()", false, 0},
	{"INSERT INTO orders (id, name) VALUES (NULL)", false, 0},
	{"INSERT INTO orders (name, note) VALUES ('a', )", false, 0},
	{"INSERT INTO orders (name, note) VALUES (, 'a')", false, 0},
	{"INSERT INTO orders (id, name) VALUES (5+1, 'a')", false, 0},
	{"INSERT INTO orders (id, name) VALUES ((NULL), 'a')", false, 0},
	{"INSERT INTO orders (id, name) VALUES (-0, 'a')", false, 0},
	{"INSERT INTO orders (id, name) VALUES (_utf8mb4'0', 'a')", false, 0},
	{"INSERT INTO orders (id, name) VALUES (x, 'a')", false, 0},
	{"INSERT INTO orders (id, name) VALUES (0x0, 'a')", false, 0},
	{"INSERT INTO orders (id, name) VALUES (\\N, 'a')", false, 0},
	{"INSERT INTO orders (id, name) VALUES (DEFAULT(id), 'a')", false, 0},
	{"INSERT INTO orders (id, name) VALUES (@v, 'a')", false, 0},
	{"INSERT INTO orders (orders.name) VALUES ('a')", false, 0},
	{"INSERT LOW_PRIORITY INTO orders (name) VALUES ('a')", false, 0},
	{"INSERT DELAYED INTO orders (name) VALUES ('a')", false, 0},
	{"REPLACE IGNORE INTO orders (name) VALUES ('a')", false, 0},
	{"REPLACE INTO orders (name) VALUES ('a') ON DUPLICATE KEY UPDATE name = 'b'", false, 0},
	{"INSERT INTO orders (name) VALUES ({d '2024-01-01'})", false, 0},
	{"INSERT INTO orders (name) VALUES ROW('a')", false, 0},
	{"INSERT INTO orders (name) VALUES (ROW(1, 2))", false, 0},
	{"INSERT INTO orders (name) VALUES ('a'", false, 0},
	{"INSERT INTO orders (name) VALUES ('a'))", false, 0},
	{"INSERT INTO orders (name) VALUES ('a') RETURNING (id", false, 0},
	{"INSERT INTO orders (name) VALUES ('a') RETURNING 'x", false, 0},
	{"INSERT INTO orders (name) VALUES ('a') RETURNING id /* open", false, 0},
	{"INSERT INTO orders (name) VALUES ('a') ON DUPLICATE KEY UPDATE", false, 0},
	{"INSERT INTO orders (name) VALUES ('a') ON DUPLICATE KEY UPDATE name = 'b", false, 0},
	{"INSERT INTO orders (name) VALUES ('a') ON DUPLICATE KEY UPDATE name = (SELECT 1)", false, 0},
	{"INSERT INTO orders (name) VALUES ('a') WHERE 1", false, 0},
	{"INSERT INTO orders (name) VALUES ('a') ('b')", false, 0},
	{"INSERT INTO orders (name) VALUES ('a'),", false, 0},
	{"INSERT INTO orders (name) VALUES", false, 0},
	{"INSERT INTO orders (name)", false, 0},
	{"INSERT INTO orders (name,) VALUES ('a')", false, 0},
	{"INSERT INTO orders (VALUES) VALUES ('a')", false, 0},
	{"INSERT INTO orders (name) VALUES ('a') ON DUPLICATE KEY UPDATE name = {fn now()}", false, 0},
	{"INSERT INTO t (name) VALUES ('a')", false, 0}, // no rule
	{"UPDATE orders SET name = 'a'", false, 0},
}

// TestFastPathDifferential: the fast path and the parser path agree on
// every input of this file and of the other tests (they call diffFast),
// in every sql_mode combination and in both planning modes; the fast path
// plans the common shapes.
func TestFastPathDifferential(t *testing.T) {
	modes := []Mode{{}, {ANSIQuotes: true}, {NoBackslashEscapes: true}, {NoAutoValueOnZero: true},
		{ANSIQuotes: true, NoBackslashEscapes: true, NoAutoValueOnZero: true}}
	sqls := []string{insertRows(1), insertRows(100)}
	for _, c := range fastCases {
		sqls = append(sqls, c.sql)
	}
	for _, sql := range sqls {
		for _, mode := range modes {
			for _, prepared := range []bool{false, true} {
				diffFast(t, sql, testEnv(t, mode), prepared)
			}
		}
	}
	for _, c := range fastCases {
		hits := diffFast(t, c.sql, testEnv(t, Mode{}), c.prepared)
		if c.accept > 0 && hits != c.accept || c.accept == 0 && hits != 0 {
			t.Errorf("%q: the fast path planned %d statements, want %d", c.sql, hits, c.accept)
		}
	}
	for _, n := range []int{1, 100} {
		if hits := diffFast(t, insertRows(n), testEnv(t, Mode{}), false); hits != 1 {
			t.Errorf("insertRows(%d): fast path not taken", n)
		}
	}
}

// TestFastPathOutput pins what the fast path renders for the ORM forms.
func TestFastPathOutput(t *testing.T) {
	for _, tt := range []struct {
		sql      string
		prepared bool
		want     string
	}{
		{"INSERT INTO `orders` (`name`,`note`) VALUES (?,?),(?,?)", true,
			"INSERT INTO `orders` (`id`, `name`,`note`) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+?), ?,?),(0*(@__leaf_m:=LAST_INSERT_ID())+?, ?,?)"},
		{"INSERT INTO `orders` (`id`,`name`) VALUES (?,?),(NULL,?)", true,
			"INSERT INTO `orders` (`id`,`name`) VALUES (COALESCE(?,LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+?)),?),(0*(@__leaf_m:=LAST_INSERT_ID())+?,?)"},
		{"INSERT INTO orders (name) VALUES ('x')", false,
			"INSERT INTO orders (`id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'x')"},
		{"INSERT INTO orders () VALUES (),()", false,
			"INSERT INTO orders (`id`) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001)),(0*(@__leaf_m:=LAST_INSERT_ID())+1002)"},
		{"INSERT INTO orders (id,name) VALUES (NULL,'a'),(7,'b'),(0,'c')", false,
			"INSERT INTO orders (id,name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001),'a'),(IF((@__leaf_m:=LAST_INSERT_ID()) IS NULL,NULL,7),'b'),(1002,'c')"},
	} {
		env := testEnv(t, Mode{})
		if hits := diffFast(t, tt.sql, env, tt.prepared); hits != 1 {
			t.Errorf("%q: fast path not taken", tt.sql)
		}
		p, err := plan(tt.sql, env, tt.prepared)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(p.mustRender(t, nil, tt.sql, ids(len(p.Slots)))); got != tt.want {
			t.Errorf("%q:\n got %q\nwant %q", tt.sql, got, tt.want)
		}
		if tt.prepared {
			checkParams(t, tt.sql, Mode{}, p)
		}
	}
}

// FuzzFastPath: whenever the fast path plans a statement, the plan is the
// parser path's (errors included), except for statements the TiDB parser
// cannot read at all (see compareFast); it never panics.
func FuzzFastPath(f *testing.F) {
	for _, c := range fastCases {
		f.Add(c.sql, uint8(0))
		f.Add(c.sql, uint8(8))
	}
	f.Add(insertRows(3), uint8(0))
	f.Add(`INSERT INTO "orders" ("id", "name") VALUES (NULL, "x"), ('0', 'y')`, uint8(1))
	f.Add(`INSERT INTO orders (name, id) VALUES ('a\', 0), ('b', '0')`, uint8(2))
	f.Add("INSERT INTO orders (id, name) VALUES (0, 'a'), (NULL, 'b')", uint8(4))
	f.Add("INSERT INTO orders (id, name) VALUES (?, ?), (0, ?)", uint8(12))
	f.Fuzz(func(t *testing.T, sql string, modeBits uint8) {
		if strings.Contains(sql, "90000000") {
			return
		}
		mode := Mode{ANSIQuotes: modeBits&1 != 0, NoBackslashEscapes: modeBits&2 != 0, NoAutoValueOnZero: modeBits&4 != 0}
		if _, problem := compareFast(sql, testEnv(t, mode), modeBits&8 != 0, true); problem != "" {
			t.Fatalf("%q (mode %+v, prepared %v): %s", sql, mode, modeBits&8 != 0, problem)
		}
	})
}

// TestParserPanic: the parser's value driver panics on a decimal literal of
// 80+ digits; the planner answers 1235 instead of losing the session.
func TestParserPanic(t *testing.T) {
	big := strings.Repeat("0", 60) + "187" + strings.Repeat("0", 20)
	for _, sql := range []string{
		"INSERT INTO orders VALUES (" + big + ", 'a', 'b')",
		"INSERT INTO orders SET name = " + big + " RETURNING id",
		"INSERT orders " + big,
	} {
		for range 2 { // the broken parser is not reused
			_, err := PlanQuery(sql, testEnv(t, Mode{}))
			if e, ok := err.(*Error); !ok || e.Code() != CodeNotSupported {
				t.Errorf("%q: %v", sql, err)
			}
		}
	}
	// The fast path does not parse: the literal goes to the server.
	if _, err := PlanQuery("INSERT INTO orders (name) VALUES ("+big+")", testEnv(t, Mode{})); err != nil {
		t.Error(err)
	}
}

// planNoFirst is planWith (fast path on) without what quickPlan read of a
// lone INSERT (firstInsert): the builder reads the table and looks its
// rule up itself, as before that shortcut.
func planNoFirst(sql string, env *Env, prepared bool) (Plan, error) {
	var ch charge
	p, done, seq, _, err := quickPlan(sql, sqltext.ClassifyString(sql), env, nil, prepared, &ch)
	if done {
		ch.done()
		return p, err
	}
	pl := Planner{charge: ch}
	defer pl.charge.done()
	p, _, err = pl.build(sql, env, prepared, true, seq, firstInsert{})
	return p, err
}
