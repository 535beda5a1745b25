package rewriter

import (
	"strings"

	"github.com/leafproxy/leafproxy/internal/sqltext"
)

// The Planner's memo of INSERT heads. A session of an ORM or a driver that
// interpolates parameters sends the same INSERT again and again with other
// values: `INSERT INTO orders (v) VALUES ('1')`, then ('2'), ... Up to
// VALUES the text is the same, and so is everything the fast path reads
// there: the first word, the table and its rule, the column list and the
// key column's place in it (insertHead). The memo keeps the last few such
// heads, so that the next text with the same head is planned by reading
// only its rows, the part that differs; each text is still checked in
// full for what sends it elsewhere (a sequence call, ';', an executable
// comment), as quickPlan and builder.run check it.
//
// A head is reused only for a text that starts with exactly its bytes,
// planned in the same sql_mode, current database and rules, and whose byte
// after VALUES cannot continue that word: then every token up to VALUES,
// and so every decision made there, is the same (the lexer reads left to
// right and no token before VALUES reaches past it). compareMemo in
// fast_test.go (run by FuzzFastPath) checks the memo's plans against
// fresh ones.

// memoHeads is how many heads a Planner keeps (a session that inserts into
// a few tables in turn); memoMaxHead bounds each (bytes).
const (
	memoHeads   = 4
	memoMaxHead = 512
)

type insertMemo struct {
	head      string // the text up to VALUES (owned: not the packet's)
	envDB     string // Env.DB, Mode and Rules it was planned with
	mode      Mode
	rules     *Rules
	hash      insertHead
	rule      Rule
	db, table string // the table the rule is for (owned)
}

// memoPlan plans sql from a memoized head; ok false: no head applies, or
// the rows are not the fast path's (plan it the ordinary way).
// c is sql's class: a text that may hold a sequence call or has a ';'
// (c.SeqCall, c.Semicolon) is not read here.
func (pl *Planner) memoPlan(sql string, c sqltext.Class, env *Env) (p Plan, ok bool) {
	m := pl.memoFind(sql, env)
	if m == nil || len(sql) > bigRows || c.SeqCall() || c.Semicolon() || hasBang(sql) {
		return Plan{}, false
	}
	b := pl.reset(sql, env, false, true, false, firstInsert{})
	// The table's key column as the backend has it now (cached by the
	// caller): it may have changed since the head was kept.
	rule, fill, err := b.resolve(m.db, m.table, m.rule)
	if err != nil || !fill {
		return Plan{}, false
	}
	b.nstmts = 1
	l := lexer{sql: sql, pos: len(m.head), mode: env.Mode}
	if !b.fastRows(&l, m.hash, rule, m.db, m.table, false) {
		return Plan{}, false
	}
	b.fastHits++
	return pl.finish(), true
}

// memoFind returns the memo entry whose head sql starts with, if any.
func (pl *Planner) memoFind(sql string, env *Env) *insertMemo {
	for i := range pl.memo {
		m := &pl.memo[i]
		if n := len(m.head); n < len(sql) && sql[:n] == m.head && !identByteAt(sql, n) &&
			m.mode == env.Mode && m.rules == env.Rules && m.envDB == env.DB {
			return m
		}
	}
	return nil
}

// HasHead reports whether sql starts with a head pl keeps, memoized
// under rules (in any database and sql_mode): a lone INSERT or REPLACE
// into a table that has a rule in rules. For such a text without a ';'
// NeedsSession answers true (it reads the same table in the same words,
// and a table with a rule somewhere needs the session's database), so a
// caller that already knows the head may skip asking it.
func (pl *Planner) HasHead(sql string, rules *Rules) bool {
	for i := range pl.memo {
		m := &pl.memo[i]
		if n := len(m.head); n < len(sql) && m.rules == rules && sql[:n] == m.head && !identByteAt(sql, n) {
			return true
		}
	}
	return false
}

// memoize keeps the head of the lone INSERT the builder just planned.
func (pl *Planner) memoize(env *Env) {
	b := &pl.builder
	if !b.loneInsert || b.head.end > memoMaxHead || pl.memoFind(b.sql, env) != nil {
		return
	}
	m := insertMemo{head: strings.Clone(b.sql[:b.head.end]), envDB: env.DB, mode: env.Mode, rules: env.Rules,
		hash: b.head, rule: b.first.rule, db: strings.Clone(b.first.db), table: strings.Clone(b.first.table)}
	if len(pl.memo) < memoHeads {
		pl.memo = append(pl.memo, m)
		return
	}
	copy(pl.memo, pl.memo[1:]) // the oldest goes
	pl.memo[len(pl.memo)-1] = m
}

func identByteAt(s string, i int) bool { return i < len(s) && sqltext.IsIdentByte(s[i]) }
