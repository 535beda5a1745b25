package rewriter

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// SETVAL is recognised in the shape the proxy answers (a SELECT of
// sequence calls alone), with MariaDB's arguments, and refused anywhere
// else instead of being sent to a server that knows no such sequence.
func TestSetval(t *testing.T) {
	tests := []struct {
		sql   string
		mode  Mode
		calls []Call
		code  uint16 // error expected
		say   string // in the error message
	}{
		{sql: "SELECT SETVAL('order', 3000)", calls: []Call{{Func: Set, Tag: "order", Name: "SETVAL('order', 3000)", Value: 3000, Used: true}}},
		{sql: "select setval(order_seq,0);", calls: []Call{{Func: Set, Tag: "order_seq", Name: "setval(order_seq,0)", Value: 0, Used: true}}},
		{sql: "SELECT SETVAL(shop.`s`, 9223372036854775807) AS v", calls: []Call{{Func: Set, Tag: "s", Name: "v", Value: 9223372036854775807, Used: true}}},
		{sql: "SELECT SETVAL('a', 10, 0)", calls: []Call{{Func: Set, Tag: "a", Name: "SETVAL('a', 10, 0)", Value: 10, Used: false}}},
		{sql: "SELECT SETVAL('a', 10, FALSE, 0)", calls: []Call{{Func: Set, Tag: "a", Name: "SETVAL('a', 10, FALSE, 0)", Value: 10, Used: false}}},
		{sql: "SELECT SETVAL('a', 10, true)", calls: []Call{{Func: Set, Tag: "a", Name: "SETVAL('a', 10, true)", Value: 10, Used: true}}},
		{sql: "SELECT SETVAL('订单', 7), NEXTVAL('订单')", calls: []Call{
			{Func: Set, Tag: "订单", Name: "SETVAL('订单', 7)", Value: 7, Used: true},
			{Func: Next, Tag: "订单", Name: "NEXTVAL('订单')"}}},
		{sql: `SELECT SETVAL("a", 5)`, mode: Mode{ANSIQuotes: true}, calls: []Call{{Func: Set, Tag: "a", Name: `SETVAL("a", 5)`, Value: 5, Used: true}}},

		// Arguments the proxy cannot run: 1210, nothing sent.
		{sql: "SELECT SETVAL('a', -5)", code: 1210, say: "without an expression or a sign"},
		{sql: "SELECT SETVAL('a', 5+1)", code: 1210, say: "integer literals"},
		{sql: "SELECT SETVAL('a', 1.5)", code: 1210, say: "non-negative integer"},
		{sql: "SELECT SETVAL('a', '5')", code: 1210, say: "non-negative integer"},
		{sql: "SELECT SETVAL('a', 99999999999999999999)", code: 1210, say: "out of range"},
		{sql: "SELECT SETVAL('a')", code: 1210, say: "a value"},
		{sql: "SELECT SETVAL('a', 5, 2)", calls: []Call{{Func: Set, Tag: "a", Name: "SETVAL('a', 5, 2)", Value: 5, Used: true}}},
		{sql: "SELECT SETVAL('a', 5, 'x')", code: 1210, say: "is_used"},
		{sql: "SELECT SETVAL('a', 5, 1, 1)", code: 1210, say: "round must be 0"},
		{sql: "SELECT SETVAL('a', 5, 1, 0, 9)", code: 1210, say: "at most 4"},
		{sql: "SELECT SETVAL('a', (SELECT 5))", code: 1210, say: "literals"},
		{sql: "SELECT SETVAL('a', @v)", code: 1210, say: "non-negative integer"},

		// Anywhere else: refused (1235), as LASTVAL is.
		{sql: "SELECT SETVAL('a', 5) FROM t", code: 1235, say: "SETVAL('a', 5)"},
		{sql: "INSERT INTO t (x) VALUES (SETVAL('a', 5))", code: 1235, say: "SELECT SETVAL('a', 1000)"},
		{sql: "SELECT SETVAL('a', 5) + 1", code: 1235, say: "SETVAL('a', 5)"},

		// Not calls.
		{sql: "SELECT setval FROM t"},
		{sql: "SELECT 'SETVAL(a, 1)'"},
		{sql: "SELECT db.setval('a', 1)"},
	}
	env := testEnv(t, Mode{})
	for _, tt := range tests {
		env.Mode = tt.mode
		for _, prepared := range []bool{false, true} {
			p, err := plan(tt.sql, env, prepared)
			if tt.code != 0 {
				var pe *Error
				if !errors.As(err, &pe) || pe.Code() != tt.code || !strings.Contains(pe.Error(), tt.say) {
					t.Errorf("%q (prepared %v): got %v %+v, want error %d saying %q", tt.sql, prepared, p.Kind, err, tt.code, tt.say)
				}
				continue
			}
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

// The cheap filter must let every SETVAL call through to the planner.
func TestSetvalFilter(t *testing.T) {
	for _, sql := range []string{"SELECT SETVAL('a', 1)", "select setval(a,1)", "SELECT x, SetVal(a, 1) FROM t"} {
		if !mayRewrite(sql) {
			t.Errorf("MayRewrite(%q) = false", sql)
		}
	}
	if mayRewrite("SELECT offset_val FROM t") {
		t.Errorf("MayRewrite matched a column name ending in set_val")
	}
}
