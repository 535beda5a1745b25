package rewriter

// MayRewrite is the planner's cheap filter, exported so that a caller can
// skip gathering session facts (sql_mode, current database) for the common
// text that cannot need a rewrite. It does not depend on the sql_mode;
// false means PlanQuery would return PassThrough.
func MayRewrite(sql string) bool { return mayRewrite(sql) }
