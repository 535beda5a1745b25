package rewriter

import (
	"strings"

	"github.com/leafproxy/leafproxy/internal/sqltext"
)

// MayRewrite is the planner's cheap filter, read from the text's class
// (sqltext.Classify, made once per command), so that a caller can skip
// gathering session facts (sql_mode, current database) for the common text
// that cannot need a rewrite. It answers false only when no statement of
// the text can need a rewrite: none starts with INSERT, REPLACE, LOAD,
// PREPARE, EXECUTE or SET STATEMENT (c.Plannable; quote-blind, a superset
// of the real starts) and it has no sequence call (c.SeqCall). It does not
// depend on the sql_mode; false means PlanQuery would return PassThrough.
func MayRewrite(c sqltext.Class) bool { return c.SeqCall() || c.Plannable() }

// NeedsSession reports whether planning sql (PlanQuery or PlanPrepare)
// may depend on the session's facts, its current database and sql_mode.
// false means the plan is PassThrough whatever they are: a caller can relay
// sql without learning them (which takes statements of the caller's own
// inside the client's session, counted in its Questions and written to the
// general log). It is conservative and cheap: true for text with a
// sequence call, for PREPARE / EXECUTE IMMEDIATE (and SET STATEMENT ... FOR
// them) of literals the planner plans or refuses under some sql_mode
// (dynamicNeedsSession; EXECUTE s of a statement prepared earlier is not
// read) and, when
// there are rules, for anything but INSERT / REPLACE / LOAD statements
// whose tables no rule matches in any database, read under every sql_mode
// that changes how their names are quoted. Only their words up to the
// table name are read, as the planner's own shortcut does. c is sql's
// class (sqltext.Classify): its sequence calls and statement starts are
// not read again.
func NeedsSession(sql string, c sqltext.Class, rules *Rules) bool {
	if c.SeqCall() {
		return true
	}
	plan, dynamic, modal := c.Plannable(), c.Dynamic(), c.Modal()
	if !plan {
		return false // not even PlanQuery's first look finds a statement to plan
	}
	if dynamic {
		// A statement run from a literal is read as statements: planned
		// as nothing under every sql_mode, in an unknown database, it is
		// nothing to plan whatever the session's facts.
		return dynamicNeedsSession(sql, rules)
	}
	if rules.empty() {
		return false // without rules nothing else is planned
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

// dynamicNeedsSession is NeedsSession for a text with a PREPARE / EXECUTE
// IMMEDIATE of literals: false when the planner, reading it under every
// combination of ANSI_QUOTES and NO_BACKSLASH_ESCAPES with the current
// database unknown (an unqualified name any rule may match counts),
// plans nothing.
func dynamicNeedsSession(sql string, rules *Rules) bool {
	var pl Planner
	for _, m := range [...]Mode{{}, {ANSIQuotes: true}, {NoBackslashEscapes: true}, {ANSIQuotes: true, NoBackslashEscapes: true}} {
		env := Env{Rules: rules, Mode: m}
		b := pl.reset(sql, &env, false, false, true, firstInsert{})
		b.dbUnknown = true
		if err := b.run(); err != nil {
			return true
		}
		p := pl.finish()
		if p.Kind != PassThrough || p.LastKey != 0 || p.StmtKeys != nil || p.Explicit != nil {
			return true
		}
	}
	return false
}
