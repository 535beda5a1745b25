package rewriter

import (
	"strconv"
	"testing"
)

// patternEnv is testEnv's rules with four pattern rules after them (a
// sharded family, a bare family, a class, a leading *), compared as a
// backend with lower_case_table_names=lctn does; the current database
// is shop_3.
func patternEnv(b *testing.B, lctn int) *Env {
	env := testEnv(b, Mode{})
	rules, err := NewRules([]Rule{
		{Table: "orders", Column: "id", Tag: "order"},
		{Table: "shop.items", Column: "item_id", Tag: "item"},
		{Table: "shop_*.orders_*", Column: "id", Tag: "family"},
		{Table: "events_?", Column: "id", Tag: "ev"},
		{Table: "arch_[0-9][0-9].*", Column: "id", Tag: "arch"},
		{Table: "*_log", Column: "id", Tag: "log"},
	}, WithLowerCaseTableNames(lctn))
	if err != nil {
		b.Fatal(err)
	}
	env.Rules, env.DB = rules, "shop_3"
	return env
}

func benchPlanEnv(b *testing.B, env *Env, sql string, want Kind) {
	p, err := PlanQuery(sql, env)
	if err != nil || p.Kind != want {
		b.Fatalf("%v %v", p.Kind, err)
	}
	var buf []byte
	ids := ids(len(p.Slots))
	b.SetBytes(int64(len(sql)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		p, _ := PlanQuery(sql, env)
		if p.Kind == Rewrite {
			buf, _ = p.Render(buf[:0], sql, ids) // a fresh plan is not kept: no error
		}
	}
}

// The plain INSERT into a table without a rule when the rules hold
// patterns: every pattern is tried (BenchmarkPassThroughInsertOtherTable1Row
// is the same statement with exact rules only).
func BenchmarkPassThroughInsertOtherTablePatterns(b *testing.B) {
	for _, lctn := range []int{0, 1} {
		b.Run("lower_case_table_names="+strconv.Itoa(lctn), func(b *testing.B) {
			benchPlanEnv(b, patternEnv(b, lctn), otherInsertRows(1), PassThrough)
		})
	}
}

// An ORM's INSERT into a member of a sharded family (BenchmarkInsertORM/text
// is the same statement into an exact rule's table).
func BenchmarkInsertPatternTable(b *testing.B) {
	for _, lctn := range []int{0, 1} {
		b.Run("lower_case_table_names="+strconv.Itoa(lctn), func(b *testing.B) {
			benchPlanEnv(b, patternEnv(b, lctn), "INSERT INTO orders_17 (name) VALUES ('x')", Rewrite)
		})
	}
}

func BenchmarkLookup(b *testing.B) {
	for _, lctn := range []int{0, 1} {
		r := patternEnv(b, lctn).Rules
		for _, c := range []struct{ name, db, table string }{
			{"exact", "shop", "items"},
			{"pattern", "shop_3", "orders_17"},
			{"none", "shop_3", "audit"},
		} {
			b.Run(c.name+"/lower_case_table_names="+strconv.Itoa(lctn), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					r.Lookup(c.db, c.table)
				}
			})
		}
	}
}
