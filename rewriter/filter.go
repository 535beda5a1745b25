package rewriter

import (
	"strings"

	"github.com/leafproxy/leafproxy/internal/sqltext"
)

// MayRewrite is the planner's cheap filter, exported so that a caller can
// skip gathering session facts (sql_mode, current database) for the common
// text that cannot need a rewrite. It does not depend on the sql_mode;
// false means PlanQuery would return PassThrough.
func MayRewrite(sql string) bool { return mayRewrite(sql) }

// NeedsSession reports whether planning sql (PlanQuery or PlanPrepare)
// may depend on the session's facts, its current database and sql_mode.
// false means the plan is PassThrough whatever they are: a caller can relay
// sql without learning them (which takes statements of the caller's own
// inside the client's session, counted in its Questions and written to the
// general log). It is conservative and cheap: true for text with a
// sequence call, for PREPARE / EXECUTE (and SET STATEMENT ... FOR them)
// with a quoted literal (text the planner reads as statements) and, when
// there are rules, for anything but INSERT / REPLACE / LOAD statements
// whose tables no rule matches in any database, read under every sql_mode
// that changes how their names are quoted. Only their words up to the
// table name are read, as the planner's own shortcut does.
func NeedsSession(sql string, rules *Rules) bool {
	if hasSeqCall(sql) {
		return true
	}
	plan, dynamic, modal := statementStarts(sql)
	if !plan || dynamic || rules.empty() {
		// Not even PlanQuery's first look finds a statement to plan; a
		// statement run from a literal is read as statements; without
		// rules nothing else is planned.
		return plan && dynamic
	}
	env := Env{Rules: rules}
	if plain, _ := plainInsertsIn(sql, &env, true); !plain || !modal {
		// An INSERT / REPLACE head read as plain has only words, names in
		// backquotes and comments before its table: the same in every
		// sql_mode.
		return !plain
	}
	// Before the table, LOAD DATA has its file name and SET STATEMENT its
	// values: ANSI_QUOTES changes how "..." reads, NO_BACKSLASH_ESCAPES
	// where a string with a backslash ends.
	dq, bs := strings.IndexByte(sql, '"') >= 0, strings.IndexByte(sql, '\\') >= 0
	for _, m := range [...]Mode{{ANSIQuotes: true}, {NoBackslashEscapes: true}, {ANSIQuotes: true, NoBackslashEscapes: true}} {
		if m.ANSIQuotes && !dq || m.NoBackslashEscapes && !bs {
			continue
		}
		env.Mode = m
		if plain, _ := plainInsertsIn(sql, &env, true); !plain {
			return true
		}
	}
	return false
}

// statementStarts looks at every possible statement start of sql (the
// text start and the byte after each ';'): plan is startsAny's answer;
// dynamic reports one that may run a literal as statements (PREPARE ...
// FROM '...', EXECUTE IMMEDIATE '...'): PREPARE, EXECUTE, SET STATEMENT in
// a text that names either, or an executable comment, in a text with a
// quote; modal one whose words before a table depend on the sql_mode
// (LOAD, SET STATEMENT).
func statementStarts(sql string) (plan, dynamic, modal bool) {
	quotes := strings.IndexByte(sql, '\'') >= 0 || strings.IndexByte(sql, '"') >= 0
	for from := 0; ; {
		l := lexer{sql: sql, pos: from}
		l.skipSpace()
		if l.inBang {
			plan, dynamic = true, quotes
		} else {
			switch w := l.word(); {
			case sqltext.EqualFold(w, "INSERT") || sqltext.EqualFold(w, "REPLACE"):
				plan = true
			case sqltext.EqualFold(w, "LOAD"):
				plan, modal = true, true
			case sqltext.EqualFold(w, "PREPARE") || sqltext.EqualFold(w, "EXECUTE"):
				plan, dynamic = true, quotes
			case sqltext.EqualFold(w, "SET"):
				l.skipSpace()
				if l.inBang || sqltext.EqualFold(l.word(), "STATEMENT") {
					plan, modal = true, true
					dynamic = quotes && (l.inBang || sqltext.ContainsFold(sql, "prepare") || sqltext.ContainsFold(sql, "execute"))
				}
			}
		}
		if dynamic {
			return plan, dynamic, modal
		}
		j := strings.IndexByte(sql[from:], ';')
		if j < 0 {
			return plan, false, modal
		}
		from += j + 1
	}
}
