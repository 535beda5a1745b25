package rewriter

import "github.com/leafproxy/leafproxy/internal/sqltext"

// mayRewrite and needsSession classify sql as the engine does (once per
// command) before it asks.
func mayRewrite(sql string) bool { return MayRewrite(sqltext.ClassifyString(sql)) }

func needsSession(sql string, rules *Rules) bool {
	return NeedsSession(sql, sqltext.ClassifyString(sql), rules)
}

// plan is PlanQuery (prepared false) or PlanPrepare.
func plan(sql string, env *Env, prepared bool) (Plan, error) {
	return planIn(sql, sqltext.ClassifyString(sql), env, prepared)
}
