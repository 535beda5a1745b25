package rewriter

import "testing"

// ViewRule over the definitions MariaDB stores in information_schema.VIEWS.
func TestViewRule(t *testing.T) {
	rules, err := NewRules([]Rule{{Table: "q.base", Column: "id", Tag: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, def string
		want      Rule
		ok, why   bool
	}{
		{"v1", "select `q`.`base`.`id` AS `k`,`q`.`base`.`b` AS `b` from `q`.`base`", Rule{Table: "q.v1", Column: "k", Tag: "t"}, true, false},
		{"v3", "select `q`.`base`.`id` AS `id`,`q`.`base`.`b` AS `b` from `q`.`base`", Rule{Table: "q.v3", Column: "id", Tag: "t"}, true, false},
		{"v2", "select `q`.`base`.`b` AS `b` from `q`.`base`", Rule{Table: "q.v2", Column: "id", Tag: "t"}, true, true},
		{"v4", "select `q`.`base`.`id` AS `id`,`q`.`other`.`x` AS `x` from (`q`.`base` join `q`.`other` on(`q`.`base`.`id` = `q`.`other`.`x`))", Rule{}, false, true},
		{"v5", "select `d`.`id` AS `id`,`d`.`b` AS `b` from (select `q`.`base`.`id` AS `id`,`q`.`base`.`b` AS `b` from `q`.`base`) `d`", Rule{}, false, false},
		{"v6", "select `q`.`other`.`x` AS `x` from `q`.`other`", Rule{}, false, false},
	} {
		got, ok, why := ViewRule("q", tc.name, tc.def, rules)
		if got.Table != tc.want.Table || got.Column != tc.want.Column || got.Tag != tc.want.Tag || ok != tc.ok || (why != "") != tc.why {
			t.Errorf("%s: %+v %v %q, want %+v %v (a reason: %v)", tc.name, got, ok, why, tc.want, tc.ok, tc.why)
		}
	}
	with := rules.With([]Rule{{Table: "q.v1", Column: "k", Tag: "t"}, {Table: "q.base", Column: "other", Tag: "x"}})
	if r, ok := with.Lookup("q", "v1"); !ok || r.Column != "k" {
		t.Errorf("With: q.v1 -> %+v %v", r, ok)
	}
	if r, _ := with.Lookup("q", "base"); r.Column != "id" {
		t.Errorf("With: the configured rule must win, got %+v", r)
	}
	if _, ok := rules.Lookup("q", "v1"); ok {
		t.Error("With changed the rules it was called on")
	}
}
