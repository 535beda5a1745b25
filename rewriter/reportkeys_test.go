package rewriter

import (
	"strings"
	"testing"
)

// With Env.ReportKeys a statement of one text (or a prepared one) gets its
// keys as plain values: no LAST_INSERT_ID(...) that its own reads of
// LAST_INSERT_ID() would see; only a marked next row keeps a trace
// (@__leaf_k, @__leaf_m) for the engine's RestorePlain after an ERR. A
// text of several statements keeps the wrap (the server reports each).
func TestReportKeysRender(t *testing.T) {
	ids := []int64{1001, 1002, 1003}
	for _, tc := range []struct {
		sql, want string
		prepared  bool
		reports   bool
	}{
		{sql: "INSERT INTO orders (name) VALUES ('a')", reports: true,
			want: "INSERT INTO orders (id, name) VALUES (1001, 'a')"},
		{sql: "INSERT INTO orders (name) VALUES (LAST_INSERT_ID())", reports: true,
			want: "INSERT INTO orders (id, name) VALUES (1001, LAST_INSERT_ID())"},
		{sql: "INSERT INTO orders (name) VALUES ('a'), ('b')", reports: true,
			want: "INSERT INTO orders (id, name) VALUES ((@__leaf_k:=1001), 'a'), (IF((@__leaf_m:=@__leaf_k)<=>0.5,NULL,1002), 'b')"},
		{sql: "INSERT INTO orders (id, name) VALUES (NULL, 'a'), (5, 'b')", reports: true,
			want: "INSERT INTO orders (id, name) VALUES ((@__leaf_k:=1001), 'a'), (IF((@__leaf_m:=@__leaf_k)<=>0.5,NULL,5), 'b')"},
		{sql: "INSERT INTO orders SET name = 'a' ON DUPLICATE KEY UPDATE name = LAST_INSERT_ID()", reports: true,
			want: "INSERT INTO orders SET id = 1001, name = 'a' ON DUPLICATE KEY UPDATE name = LAST_INSERT_ID()"},
		{sql: "INSERT INTO orders (name) VALUES (?)", prepared: true, reports: true,
			want: "INSERT INTO orders (id, name) VALUES (?, ?)"},
		{sql: "INSERT INTO orders (id, name) VALUES (?, ?), (?, ?)", prepared: true, reports: true,
			want: "INSERT INTO orders (id, name) VALUES (COALESCE(?,(@__leaf_k:=?)), ?), (IF((@__leaf_m:=@__leaf_k)<=>0.5,NULL,COALESCE(?,?)), ?)"},
		{sql: "INSERT INTO orders (name) VALUES ('a'); INSERT INTO orders (name) VALUES ('b')", reports: false,
			want: "INSERT INTO orders (id, name) VALUES (" + wrapOpen + "1001), 'a'); INSERT INTO orders (id, name) VALUES (" + wrapOpen + "1002), 'b')"},
	} {
		env := testEnv(t, Mode{})
		env.ReportKeys = true
		var p Plan
		var err error
		if tc.prepared {
			p, err = PlanPrepare(tc.sql, env)
		} else {
			p, err = PlanQuery(tc.sql, env)
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.sql, err)
		}
		if p.Kind != Rewrite || p.ReportsKey != tc.reports {
			t.Fatalf("%s: %v plan, ReportsKey %v, want %v", tc.sql, p.Kind, p.ReportsKey, tc.reports)
		}
		var got string
		if tc.prepared {
			got = string(p.mustRender(t, nil, tc.sql, nil))
		} else {
			got = string(p.mustRender(t, nil, tc.sql, ids[:len(p.Slots)]))
		}
		// the proxy adds the key column backquoted
		want := tc.want
		if !strings.Contains(tc.sql, "(id,") {
			want = strings.ReplaceAll(strings.ReplaceAll(want, "(id, ", "(\x60id\x60, "), "SET id =", "SET \x60id\x60 =")
		}
		if got != want {
			t.Errorf("%s:\n got %s\nwant %s", tc.sql, got, want)
		}
		if n := p.renderedLen(tc.sql, ids[:len(p.Slots)]); !tc.prepared && n != len(got) {
			t.Errorf("%s: renderedLen %d, rendered %d bytes", tc.sql, n, len(got))
		}
	}
	if got := RestorePlain(1001, 0); got != "DO LAST_INSERT_ID(IF(@__leaf_m <=> 1001, 1001, LAST_INSERT_ID()))" {
		t.Errorf("RestorePlain: %s", got)
	}
	if got := RestorePlain(1001, 77); got != "DO LAST_INSERT_ID(IF(@__leaf_m <=> 1001, 1001, 77))" {
		t.Errorf("RestorePlain with a value to set: %s", got)
	}
}
