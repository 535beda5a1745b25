package rewriter

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckRules(t *testing.T) {
	for _, tc := range []struct {
		rules   []Rule
		field   string
		mention string
	}{
		{[]Rule{{Table: "", Column: "id", Tag: "t"}}, "table", "must be table or db.table"},
		{[]Rule{{Table: "t", Column: "", Tag: "t"}}, "column", "empty"},
		{[]Rule{{Table: "t", Column: "id", Tag: ""}}, "tag", "empty"},
		{[]Rule{{Table: "a.b.c", Column: "id", Tag: "t"}}, "table", "must be table or db.table"},
		{[]Rule{{Table: ".b", Column: "id", Tag: "t"}}, "table", "must be table or db.table"},
		{[]Rule{{Table: "t", Column: "id", Tag: "t"}, {Table: "t", Column: "id", Tag: "u"}}, "table", `"t" has two rules`},
		{[]Rule{{Table: "s_*.o_*", Column: "id", Tag: "t"}, {Table: "s_*.o_*", Column: "k", Tag: "u"}}, "table", `"s_*.o_*" has two rules`},
		{[]Rule{{Table: "shop_[0-9.orders", Column: "id", Tag: "t"}}, "table", `the database part "shop_[0-9" is not a valid pattern: [ without its ]`},
		{[]Rule{{Table: "orders_[]", Column: "id", Tag: "t"}}, "table", `the table part "orders_[]" is not a valid pattern: an empty set`},
		{[]Rule{{Table: `orders\`, Column: "id", Tag: "t"}}, "table", `ends in \`},
	} {
		problems := CheckRules(tc.rules)
		if len(problems) == 0 || problems[0].Field != tc.field || !strings.Contains(problems[0].Msg, tc.mention) {
			t.Errorf("CheckRules(%+v) = %v, want a %s problem saying %q", tc.rules, problems, tc.field, tc.mention)
		}
		if _, err := NewRules(tc.rules); err == nil {
			t.Errorf("NewRules(%+v) accepted", tc.rules)
		}
	}
	// Two names that differ only in case: two tables where names are
	// compared byte for byte, one where they are not.
	two := []Rule{{Table: "Mixed", Column: "id", Tag: "a"}, {Table: "mixed", Column: "id", Tag: "b"}}
	if problems := CheckRules(two); len(problems) != 0 {
		t.Errorf("CheckRules(Mixed, mixed) = %v", problems)
	}
	if _, err := NewRules(two); err != nil {
		t.Errorf("NewRules(Mixed, mixed) with lower_case_table_names=0: %v", err)
	}
	for _, lctn := range []int{1, 2} {
		_, err := NewRules(two, WithLowerCaseTableNames(lctn))
		var p RuleProblem
		if !errors.As(err, &p) || p.Index != 1 || !strings.Contains(p.Msg, "same table") || !strings.Contains(p.Msg, "lower_case_table_names=") {
			t.Errorf("NewRules(Mixed, mixed) with lower_case_table_names=%d: %v, want rule 1 refused as the same table", lctn, err)
		}
	}
}

// TestLookup: exact names, patterns, precedence and the backend's case
// rules, as a table of lookups against one rule set.
func TestLookup(t *testing.T) {
	rules := []Rule{
		{Table: "shop_*.orders_*", Column: "id", Tag: "family"},
		{Table: "shop_9.orders_9*", Column: "id", Tag: "late"}, // after the family: never wins
		{Table: "orders_?", Column: "id", Tag: "short"},
		{Table: "shop_1.orders_7", Column: "oid", Tag: "exact-qualified"},
		{Table: "orders_8", Column: "id", Tag: "exact-any"},
		{Table: "Mixed", Column: "id", Tag: "Mixed"},
		{Table: "arch_[0-9][0-9].*", Column: "k", Tag: "arch"},
		{Table: `lit\*`, Column: "id", Tag: "lit"},
		{Table: "*.log_*", Column: "id", Tag: "log"},
	}
	type lk struct{ db, table, exact, fold string } // tags, "" = no rule
	lookups := []lk{
		// The family pattern over databases and tables.
		{"shop_0", "orders_0", "family", "family"},
		{"shop_31", "orders_1023", "family", "family"},
		{"shop_9", "orders_99", "family", "family"},
		{"SHOP_3", "ORDERS_3", "", "family"}, // byte for byte: neither the family nor orders_?
		{"SHOP_3", "orders_3", "short", "family"},
		{"shop_3", "Orders_30", "", "family"},
		{"shop", "orders_1", "short", "short"},
		{"shop", "orders_12", "", ""},
		{"", "orders_12", "", ""}, // no current database: only unqualified rules
		{"", "orders_1", "short", "short"},
		// Exact names win over patterns, db.table over table.
		{"shop_1", "orders_7", "exact-qualified", "exact-qualified"},
		{"SHOP_1", "ORDERS_7", "", "exact-qualified"},
		{"shop_2", "orders_7", "family", "family"},
		{"other", "orders_7", "short", "short"},
		{"shop_2", "orders_8", "exact-any", "exact-any"},
		{"x", "orders_8", "exact-any", "exact-any"},
		// Case: the rule for Mixed does not fill mixed on a byte-for-byte backend.
		{"app", "Mixed", "Mixed", "Mixed"},
		{"app", "mixed", "", "Mixed"},
		{"app", "MIXED", "", "Mixed"},
		// Classes, escapes, a pattern database with any table.
		{"arch_07", "anything", "arch", "arch"},
		{"arch_7", "anything", "", ""},
		{"ARCH_07", "t", "", "arch"},
		{"app", "lit*", "lit", "lit"},
		{"app", "litx", "", ""},
		{"any", "log_2024", "log", "log"},
		{"", "log_2024", "", ""},
		// Nothing.
		{"shop_1", "customers", "", ""},
		{"", "", "", ""},
	}
	exact, err := NewRules(rules)
	if err != nil {
		t.Fatal(err)
	}
	fold, err := NewRules(rules, WithLowerCaseTableNames(1))
	if err != nil {
		t.Fatal(err)
	}
	if exact.FoldsCase() || !fold.FoldsCase() {
		t.Fatalf("FoldsCase: %v %v", exact.FoldsCase(), fold.FoldsCase())
	}
	for _, l := range lookups {
		for _, c := range []struct {
			r    *Rules
			want string
			name string
		}{{exact, l.exact, "lower_case_table_names=0"}, {fold, l.fold, "lower_case_table_names=1"}} {
			rule, ok := c.r.Lookup(l.db, l.table)
			if ok != (c.want != "") || rule.Tag != c.want {
				t.Errorf("%s: Lookup(%q, %q) = %+v, %v; want tag %q", c.name, l.db, l.table, rule, ok, c.want)
			}
		}
	}
	var none *Rules
	if _, ok := none.Lookup("a", "b"); ok {
		t.Error("nil Rules found a rule")
	}
}

// TestPatternOrder: among patterns the first in configuration order wins,
// whichever is narrower.
func TestPatternOrder(t *testing.T) {
	broad := Rule{Table: "orders_*", Column: "id", Tag: "broad"}
	narrow := Rule{Table: "orders_1?", Column: "id", Tag: "narrow"}
	for _, tc := range []struct {
		rules []Rule
		want  string
	}{
		{[]Rule{broad, narrow}, "broad"},
		{[]Rule{narrow, broad}, "narrow"},
	} {
		r, err := NewRules(tc.rules)
		if err != nil {
			t.Fatal(err)
		}
		if rule, _ := r.Lookup("db", "orders_12"); rule.Tag != tc.want {
			t.Errorf("rules %v: orders_12 gets %q, want %q", tc.rules, rule.Tag, tc.want)
		}
		if rule, _ := r.Lookup("db", "orders_2"); rule.Tag != "broad" {
			t.Errorf("rules %v: orders_2 gets %q, want broad", tc.rules, rule.Tag)
		}
	}
}

func TestAnyDBHas(t *testing.T) {
	r, err := NewRules([]Rule{
		{Table: "shop_*.orders_*", Column: "id", Tag: "f"},
		{Table: "shop.items", Column: "id", Tag: "i"},
		{Table: "Mixed", Column: "id", Tag: "m"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for table, want := range map[string]bool{"orders_1": true, "items": true, "Mixed": true, "mixed": false, "orders": false, "customers": false} {
		if got := r.anyDBHas(table); got != want {
			t.Errorf("anyDBHas(%q) = %v, want %v", table, got, want)
		}
	}
	f, _ := NewRules([]Rule{{Table: "Shop_*.Orders_*", Column: "id", Tag: "f"}}, WithLowerCaseTableNames(2))
	if !f.anyDBHas("ORDERS_5") || f.anyDBHas("orders") {
		t.Error("anyDBHas with lower_case_table_names=2 does not fold case")
	}
}

// TestPlanPatternsAndCase: whole statements, through the fast path and the
// parser (diffFast compares them), with patterns and both case rules.
func TestPlanPatternsAndCase(t *testing.T) {
	rules := []Rule{{Table: "shop_*.orders_*", Column: "id", Tag: "order"}, {Table: "Mixed", Column: "id", Tag: "m"}, {Table: "shop.items", Column: "item_id", Tag: "item"}}
	cols := func(db, table string) ([]string, error) { return []string{"id", "name"}, nil }
	envFor := func(db string, lctn int) *Env {
		r, err := NewRules(rules, WithLowerCaseTableNames(lctn))
		if err != nil {
			t.Fatal(err)
		}
		return &Env{DB: db, Rules: r, Columns: cols}
	}
	for _, tc := range []struct {
		db, sql    string
		lctn       int
		want, code string // want: rendered text, "" = passed through; code: an error's code
	}{
		{"shop_3", "INSERT INTO orders_17 (name) VALUES ('a')", 0, "INSERT INTO orders_17 (`id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a')", ""},
		{"x", "INSERT INTO shop_0.orders_0 (name) VALUES ('a'), ('b')", 0, "INSERT INTO shop_0.orders_0 (`id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a'), (0*(@__leaf_m:=LAST_INSERT_ID())+1002, 'b')", ""},
		{"x", "INSERT INTO `shop_0`.`orders_0` SET name = 'a'", 0, "INSERT INTO `shop_0`.`orders_0` SET `id` = LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), name = 'a'", ""},
		{"x", "INSERT INTO shop_0.orders (name) VALUES ('a')", 0, "", ""},
		{"shop_3", "INSERT INTO ORDERS_17 (name) VALUES ('a')", 0, "", ""},
		{"shop_3", "INSERT INTO ORDERS_17 (name) VALUES ('a')", 1, "INSERT INTO ORDERS_17 (`id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a')", ""},
		{"app", "INSERT INTO Mixed (name) VALUES ('a')", 0, "INSERT INTO Mixed (`id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a')", ""},
		{"app", "INSERT INTO mixed (name) VALUES ('a')", 0, "", ""},
		{"app", "INSERT INTO mixed (name) VALUES ('a')", 2, "INSERT INTO mixed (`id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a')", ""},
		{"app", "INSERT INTO `SHOP`.`ITEMS` (name) VALUES ('a')", 0, "", ""},
		{"app", "INSERT INTO `SHOP`.`ITEMS` (name) VALUES ('a')", 1, "INSERT INTO `SHOP`.`ITEMS` (`item_id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a')", ""},
		// The current database unknown after a USE the proxy cannot follow:
		// a table a pattern could match is refused, others pass.
		{"x", "/*!99999 USE shop_1 */; INSERT INTO orders_5 (name) VALUES ('a')", 0, "", "1235"},
		{"x", "/*!99999 USE shop_1 */; INSERT INTO customers (name) VALUES ('a')", 0, "", ""},
		{"x", "/*!99999 USE app */; INSERT INTO mixed (name) VALUES ('a')", 0, "", ""},
		{"x", "/*!99999 USE app */; INSERT INTO mixed (name) VALUES ('a')", 1, "", "1235"},
	} {
		env := envFor(tc.db, tc.lctn)
		diffFast(t, tc.sql, env, false)
		diffFast(t, tc.sql, env, true)
		p, err := PlanQuery(tc.sql, env)
		if tc.code != "" {
			var e *Error
			if !errors.As(err, &e) || e.Code() != CodeNotSupported || !strings.Contains(e.Error(), "cannot tell which database") {
				t.Errorf("%q (db %s, lower_case_table_names=%d): %v, want 1235", tc.sql, tc.db, tc.lctn, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.sql, err)
			continue
		}
		got := ""
		if p.Kind != PassThrough {
			got = string(p.mustRender(t, nil, tc.sql, ids(len(p.Slots))))
		}
		if got != tc.want {
			t.Errorf("%q (db %s, lower_case_table_names=%d): %v plan\n got %q\nwant %q", tc.sql, tc.db, tc.lctn, p.Kind, got, tc.want)
		}
	}
}

// TestLookupAllocates: the lookup every INSERT makes allocates nothing,
// with and without patterns, for ASCII names in both case rules.
func TestLookupAllocates(t *testing.T) {
	rules := []Rule{{Table: "shop.items", Column: "id", Tag: "i"}, {Table: "orders", Column: "id", Tag: "o"}, {Table: "shop_*.orders_*", Column: "id", Tag: "f"}, {Table: "*.log_[0-9]*", Column: "id", Tag: "l"}}
	for _, lctn := range []int{0, 1} {
		r, err := NewRules(rules, WithLowerCaseTableNames(lctn))
		if err != nil {
			t.Fatal(err)
		}
		if a := testing.AllocsPerRun(200, func() {
			r.Lookup("shop", "items")
			r.Lookup("Shop_12", "Orders_1023")
			r.Lookup("shop", "audit")
			r.Lookup("app", "log_2024_01")
		}); a != 0 {
			t.Errorf("lower_case_table_names=%d: %v allocations per 4 lookups", lctn, a)
		}
	}
}
