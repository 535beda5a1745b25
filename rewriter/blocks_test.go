package rewriter

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// callCase is a text planned as COM_QUERY and as COM_STMT_PREPARE: the
// Sequence plan's calls expected (nil: no Sequence plan), or an error.
type callCase struct {
	sql      string
	prepared bool // plan as COM_STMT_PREPARE only
	text     bool // plan as COM_QUERY only
	calls    []Call
	code     uint16
	say      string
}

func checkCallCases(t *testing.T, tests []callCase) {
	t.Helper()
	env := testEnv(t, Mode{})
	for _, tt := range tests {
		for _, prepared := range []bool{false, true} {
			if tt.prepared && !prepared || tt.text && prepared {
				continue
			}
			p, err := plan(tt.sql, env, prepared)
			if tt.code != 0 {
				var pe *Error
				if !errors.As(err, &pe) || pe.Code() != tt.code || !strings.Contains(pe.Error(), tt.say) {
					t.Errorf("%q (prepared %v): got %v %+v, want error %d saying %q", tt.sql, prepared, p.Kind, err, tt.code, tt.say)
				}
				continue
			}
			if err != nil {
				t.Errorf("%q (prepared %v): %v", tt.sql, prepared, err)
				continue
			}
			if tt.calls == nil {
				if p.Kind == Sequence {
					t.Errorf("%q: Sequence plan %+v", tt.sql, p.Calls)
				}
				continue
			}
			if p.Kind != Sequence || !reflect.DeepEqual(p.Calls, tt.calls) {
				t.Errorf("%q (prepared %v): got %v %+v, want %+v", tt.sql, prepared, p.Kind, p.Calls, tt.calls)
			}
		}
	}
}

// TestNextvalBlock: NEXTVAL('tag', n) is read in the select the proxy
// answers, with n a literal from 1 to MaxBlock or (prepared) a ? marker
// numbered among the statement's markers; any other n is 1210, and a
// block anywhere a value goes into a row is 1235.
func TestNextvalBlock(t *testing.T) {
	checkCallCases(t, []callCase{
		{sql: "SELECT NEXTVAL('t', 1000)", calls: []Call{{Func: Next, Tag: "t", Name: "NEXTVAL('t', 1000)", N: 1000}}},
		{sql: "select nextval(t,1) AS first;", calls: []Call{{Func: Next, Tag: "t", Name: "first", N: 1, Ident: true}}},
		{sql: "SELECT NEXTVAL(shop.t, +1000000)", calls: []Call{{Func: Next, Tag: "t", Name: "NEXTVAL(shop.t, +1000000)", N: 1000000, Ident: true, DB: "shop"}}},
		{sql: "SELECT NEXTVAL('a', 5), NEXTVAL('a'), LASTVAL('a')", calls: []Call{
			{Func: Next, Tag: "a", Name: "NEXTVAL('a', 5)", N: 5}, {Func: Next, Tag: "a", Name: "NEXTVAL('a')"}, {Func: Last, Tag: "a", Name: "LASTVAL('a')"}}},
		{sql: "SELECT NEXTVAL('a', /* n */ 7 -- x\n)", calls: []Call{{Func: Next, Tag: "a", Name: "NEXTVAL('a', /* n */ 7 -- x\n)", N: 7}}},
		{sql: "SELECT NEXTVAL('a', ?)", prepared: true, calls: []Call{{Func: Next, Tag: "a", Name: "NEXTVAL('a', ?)", ArgParam: 1}}},
		{sql: "SELECT NEXTVAL('a', ?) x, NEXTVAL('b'), NEXTVAL('c', ?)", prepared: true, calls: []Call{
			{Func: Next, Tag: "a", Name: "x", ArgParam: 1}, {Func: Next, Tag: "b", Name: "NEXTVAL('b')"}, {Func: Next, Tag: "c", Name: "NEXTVAL('c', ?)", ArgParam: 2}}},

		// Sizes the proxy does not take: 1210.
		{sql: "SELECT NEXTVAL('t', 0)", code: 1210, say: "the size must be 1 to 1000000"},
		{sql: "SELECT NEXTVAL('t', 1000001)", code: 1210, say: "a block of 1000001 IDs; the size must be 1 to 1000000"},
		{sql: "SELECT NEXTVAL('t', -5)", code: 1210, say: "a block of -5 IDs"},
		{sql: "SELECT NEXTVAL('t', 99999999999999999999)", code: 1210, say: "out of range"},
		{sql: "SELECT NEXTVAL('t', 1.5)", code: 1210, say: "Incorrect arguments to NEXTVAL: NEXTVAL's block size must be an integer literal or ?"},
		{sql: "SELECT NEXTVAL('t', 1e3)", code: 1210, say: "integer literal"},
		{sql: "SELECT NEXTVAL('t', '5')", code: 1210, say: "integer literal"},
		{sql: "SELECT NEXTVAL('t', 5*2)", code: 1210, say: "integer literal"},
		{sql: "SELECT NEXTVAL('t', (5))", code: 1210, say: "integer literal"},
		{sql: "SELECT NEXTVAL('t', @n)", code: 1210, say: "integer literal"},
		{sql: "SELECT NEXTVAL('t', 5, 6)", code: 1210, say: "integer literal"},
		{sql: "SELECT NEXTVAL('t', )", code: 1210, say: "integer literal"},
		{sql: "SELECT NEXTVAL('t', ?)", text: true, code: 1210, say: "a ? marker is a parameter of a prepared statement only"},
		{sql: "SELECT NEXTVAL(?, 5)", code: 1235, say: "NEXTVAL(?)"},

		// A block where values go into rows, or in an expression: 1235.
		{sql: "INSERT INTO t (a) VALUES (NEXTVAL('t', 5))", code: 1235, say: "NEXTVAL('t', 5) (a block of IDs) is only answered in a SELECT of sequence calls alone"},
		{sql: "INSERT INTO orders SET id = NEXTVAL('order', 5)", code: 1235, say: "use NEXTVAL('order')"},
		{sql: "UPDATE t SET a = NEXTVAL('t', 5)", code: 1235, say: "a block of IDs"},
		{sql: "INSERT INTO t (a) SELECT NEXTVAL('t', 5) FROM u", code: 1235, say: "a block of IDs"},
		{sql: "SELECT NEXTVAL('t', 5) + 1", code: 1235, say: "a block of IDs"},
		{sql: "SELECT NEXTVAL('t', 5) FROM u", code: 1235, say: "a block of IDs"},
		{sql: "SET @x = NEXTVAL('t', 5)", code: 1235, say: "a block of IDs"},
		{sql: "SELECT NEXTVAL('t', 5); SELECT 1", code: 1235, say: "a block of IDs"},

		// Not calls.
		{sql: "SELECT db.NEXTVAL('t', 5)"},
		{sql: "SELECT 'NEXTVAL(t, 5)'"},
	})
}

// TestDecodeCall: LEAFPROXY_DECODE('tag', id) is answered alone, with the
// ID an integer (signed, or a string holding one: IDs travel as JSON
// strings) or a prepared statement's ?; anything else is refused.
func TestDecodeCall(t *testing.T) {
	checkCallCases(t, []callCase{
		{sql: "SELECT LEAFPROXY_DECODE('snow', 123456789012)", calls: []Call{{Func: Decode, Tag: "snow", Name: "LEAFPROXY_DECODE('snow', 123456789012)", ID: 123456789012}}},
		{sql: "select leafproxy_decode(snow, '42') from dual;", calls: []Call{{Func: Decode, Tag: "snow", Name: "leafproxy_decode(snow, '42')", ID: 42, Ident: true}}},
		{sql: "SELECT LEAFPROXY_DECODE('t', -3)", calls: []Call{{Func: Decode, Tag: "t", Name: "LEAFPROXY_DECODE('t', -3)", ID: -3}}},
		{sql: "SELECT LEAFPROXY_DECODE('t', '-3')", calls: []Call{{Func: Decode, Tag: "t", Name: "LEAFPROXY_DECODE('t', '-3')", ID: -3}}},
		{sql: "SELECT LEAFPROXY_DECODE('t', ?)", prepared: true, calls: []Call{{Func: Decode, Tag: "t", Name: "LEAFPROXY_DECODE('t', ?)", ArgParam: 1}}},

		{sql: "SELECT LEAFPROXY_DECODE('t', 1.5)", code: 1210, say: "Incorrect arguments to LEAFPROXY_DECODE: LEAFPROXY_DECODE's ID must be an integer"},
		{sql: "SELECT LEAFPROXY_DECODE('t', 'abc')", code: 1210, say: "must be an integer"},
		{sql: "SELECT LEAFPROXY_DECODE('t', '')", code: 1210, say: "must be an integer"},
		{sql: "SELECT LEAFPROXY_DECODE('t', id)", code: 1210, say: "must be an integer"},
		{sql: "SELECT LEAFPROXY_DECODE('t', 1+1)", code: 1210, say: "must be an integer"},
		{sql: "SELECT LEAFPROXY_DECODE('t', 18446744073709551615)", code: 1210, say: "out of range"},
		{sql: "SELECT LEAFPROXY_DECODE('t')", code: 1210, say: "takes the sequence name and an ID"},
		{sql: "SELECT LEAFPROXY_DECODE('t', ?)", text: true, code: 1210, say: "prepared statement only"},
		{sql: "SELECT LEAFPROXY_DECODE('t', 5) AS d", code: 1235, say: "takes no alias"},
		{sql: "SELECT LEAFPROXY_DECODE('t', 5), NEXTVAL('t')", code: 1235, say: "the only item"},
		{sql: "SELECT NEXTVAL('t'), LEAFPROXY_DECODE('t', 5)", code: 1235, say: "the only item"},
		{sql: "SELECT LEAFPROXY_DECODE('t', id) FROM orders", code: 1235, say: "only answered as a statement of its own"},
		{sql: "SELECT LEAFPROXY_DECODE('t', 5) FROM orders", code: 1235, say: "SELECT LEAFPROXY_DECODE('t', id)"},
		{sql: "INSERT INTO orders (name) VALUES (LEAFPROXY_DECODE('t', 5))", code: 1235, say: "statement of its own"},
		{sql: "SELECT LEAFPROXY_DECODE(?, 5)", code: 1235, say: "LEAFPROXY_DECODE(?)"},

		{sql: "SELECT 'LEAFPROXY_DECODE(t, 1)'"},
		{sql: "SELECT x.leafproxy_decode('t', 1)"},
	})
	for _, sql := range []string{"SELECT LEAFPROXY_DECODE('t', 1)", "select Leafproxy_Decode(t,1)", "SELECT a FROM t WHERE b = leafproxy_decode('x', 1)"} {
		if !mayRewrite(sql) {
			t.Errorf("MayRewrite(%q) = false", sql)
		}
	}
	for _, sql := range []string{"SELECT proxy_decode(1)", "SELECT leafproxy_decod", "SELECT _decode", "SELECT created_at FROM t"} {
		if mayRewrite(sql) {
			t.Errorf("MayRewrite(%q) = true", sql)
		}
	}
	// A decode names its tag for the proxy whatever the spelling: never a
	// native sequence.
	if idents, str := SequenceNames("SELECT LEAFPROXY_DECODE(s, 1) FROM t", Mode{}); len(idents) != 0 || !str {
		t.Errorf("SequenceNames of a decode: %v, %v", idents, str)
	}
}

// TestSelectItemNames: a select item holding a call keeps the name MariaDB
// gives it, its text as written, once the call is a number; an item with
// an alias (even an empty one) or without a call is left as it is.
func TestSelectItemNames(t *testing.T) {
	tests := []struct{ sql, want string }{
		{"SELECT NEXTVAL('t') + 1", "SELECT 1001 + 1 AS `NEXTVAL('t') + 1`"},
		{"SELECT NEXTVAL('t')   +  1 , 2", "SELECT 1001   +  1 AS `NEXTVAL('t')   +  1` , 2"},
		{"SELECT NEXT VALUE FOR t * 2, NEXTVAL(u)", "SELECT 1001 * 2 AS `NEXT VALUE FOR t * 2`, 1002 AS `NEXTVAL(u)`"},
		{"SELECT (NEXTVAL('t')) + 1 FROM DUAL", "SELECT (1001) + 1 AS `(NEXTVAL('t')) + 1` FROM DUAL"},
		{"SELECT CONCAT('a,b', NEXTVAL('t'), ')') LIMIT 1", "SELECT CONCAT('a,b', 1001, ')') AS `CONCAT('a,b', NEXTVAL('t'), ')')` LIMIT 1"},
		{"SELECT NEXTVAL(`a``b`) + 1;", "SELECT 1001 + 1 AS `NEXTVAL(``a````b``) + 1`;"},
		{"SELECT NEXTVAL('t') /* c */ + 1", "SELECT 1001 /* c */ + 1 AS `NEXTVAL('t') /* c */ + 1`"},
		{"SELECT\n NEXTVAL('t')\n+ 1\n", "SELECT\n 1001\n+ 1 AS `NEXTVAL('t')\n+ 1`\n"},
		{"SELECT NEXTVAL('t') = ''", "SELECT 1001 = '' AS `NEXTVAL('t') = ''`"},
		{"SELECT CASE WHEN NEXTVAL('t') > 5 THEN 1 END", "SELECT CASE WHEN 1001 > 5 THEN 1 END AS `CASE WHEN NEXTVAL('t') > 5 THEN 1 END`"},
		{"SELECT 1 + 1, NEXTVAL('t') - 1 FOR UPDATE", "SELECT 1 + 1, 1001 - 1 AS `NEXTVAL('t') - 1` FOR UPDATE"},
		{"SELECT /*! NEXTVAL('t') + 1 */", "SELECT /*! 1001 + 1 AS `NEXTVAL('t') + 1` */"},
		// Aliased: left alone.
		{"SELECT NEXTVAL('t') + 1 x", "SELECT 1001 + 1 x"},
		{"SELECT NEXTVAL('t') + 1 AS `x`", "SELECT 1001 + 1 AS `x`"},
		{"SELECT NEXTVAL('t') + 1 AS ``", "SELECT 1001 + 1 AS ``"},
		{"SELECT NEXTVAL('t') + 1 ``", "SELECT 1001 + 1 ``"},
		{"SELECT (NEXTVAL('t')) ''", "SELECT (1001) ''"},
	}
	env := testEnv(t, Mode{})
	for _, tt := range tests {
		p, err := PlanQuery(tt.sql, env)
		if err != nil {
			t.Errorf("%q: %v", tt.sql, err)
			continue
		}
		got := string(p.mustRender(t, nil, tt.sql, ids(len(p.Slots))))
		if got != tt.want {
			t.Errorf("%q:\n got %q\nwant %q", tt.sql, got, tt.want)
			continue
		}
		mustParse(t, got, Mode{})
	}
	// Prepared: the same name around the generated parameter.
	p, err := PlanPrepare("SELECT NEXTVAL('t') + ?", env)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(p.mustRender(t, nil, "SELECT NEXTVAL('t') + ?", nil)), "SELECT ? + ? AS `NEXTVAL('t') + ?`"; got != want || p.ClientParams != 1 || p.Params != 2 {
		t.Errorf("prepared: %q (%d/%d params), want %q", got, p.ClientParams, p.Params, want)
	}
}
