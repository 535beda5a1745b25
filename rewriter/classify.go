package rewriter

import (
	"strings"

	"github.com/leafproxy/leafproxy/internal/sqltext"
)

// hasSeqCall reports whether sql may hold a sequence call
// (LEAFPROXY_DECODE included), as sqltext.SeqCalls reads them: quote-blind,
// never false for a text with a call.
func hasSeqCall(sql string) bool { return sqltext.SeqCalls(sql, 1) > 0 }

// word returns the run of identifier bytes at l.pos and moves past it.
func (l *lexer) word() string {
	i := l.pos
	for l.pos < len(l.sql) && sqltext.IsIdentByte(l.sql[l.pos]) {
		l.pos++
	}
	return l.sql[i:l.pos]
}

// plainInserts reports, without lexing whole statements, that no
// statement of sql needs planning, given that it has no sequence call
// (sqltext.Class.SeqCall): every possible statement start (the text start and the
// byte after each ';', a superset of the real ones) is blank, an INSERT /
// REPLACE / LOAD DATA / LOAD XML whose table has no rule, or another LOAD
// (LOAD INDEX INTO CACHE). Only the words up to the table name are read,
// so a long INSERT into a table without a rule costs two byte scans.
// It answers false (plan the text) for anything else: another statement,
// a table with a rule, any executable comment in the text (the lexer's
// state at a ';' could then differ from a fresh one).
func plainInserts(sql string, env *Env) bool {
	plain, _ := plainInsertsFirst(sql, env)
	return plain
}

// firstInsert is what plainInsertsFirst learnt of a one-statement text (no
// ';' anywhere) whose INSERT / REPLACE names a rule table: the builder's
// one-statement shortcut (builder.run) plans that statement next and would
// read the same words and look the same rule up again (builder.statement
// takes it from here when the statement starts at start).
type firstInsert struct {
	ok        bool
	start     int // the INSERT / REPLACE word's first byte
	db, table string
	rule      Rule
}

// hasBang reports an executable comment (/*! or MariaDB's /*M!) anywhere
// in sql: the fast path and quickPlan's shortcuts leave such text to the
// builder's full pass.
func hasBang(sql string) bool {
	return strings.Contains(sql, "/*!") || strings.Contains(sql, "/*M!")
}

// plainInsertsFirst is plainInserts, also returning what it read of the
// INSERT when it declined because of its rule (first.ok).
func plainInsertsFirst(sql string, env *Env) (plain bool, first firstInsert) {
	return plainInsertsIn(sql, env, false)
}

// plainInsertsIn is plainInsertsFirst; anyDB says the session's database
// is not known (NeedsSession): an unqualified table then counts as one
// with a rule when a rule of any database may match it.
func plainInsertsIn(sql string, env *Env, anyDB bool) (plain bool, first firstInsert) {
	if hasBang(sql) {
		return false, first
	}
	for from := 0; ; {
		l := lexer{sql: sql, pos: from, mode: env.Mode}
		l.skipSpace()
		if l.pos < len(sql) && sql[l.pos] != ';' {
			save := l.pos
			w := l.word()
			if anyDB && sqltext.EqualFold(w, "SET") {
				// SET STATEMENT var=value [, ...] FOR <statement>: the
				// statement counts (the builder reads it the same way).
				if !l.skipSetStatement() {
					return false, first
				}
				if l.skipSpace(); !sqltext.PlannableAt(sql, l.pos) {
					goto nextStatement // no INSERT / REPLACE / LOAD / PREPARE / EXECUTE
				}
				save = l.pos
				w = l.word()
			}
			if sqltext.EqualFold(w, "EXECUTE") {
				if l.skipSpace(); !sqltext.EqualFold(l.word(), "IMMEDIATE") {
					// EXECUTE s of a statement prepared earlier: the
					// server runs it, unseen (it may set sql_mode: the
					// builder takes the mode as unknown after it).
					goto nextStatement
				}
				return false, first
			}
			load := sqltext.EqualFold(w, "LOAD")
			if !load && !sqltext.EqualFold(w, "INSERT") && !sqltext.EqualFold(w, "REPLACE") {
				return false, first
			}
			l.pos = save
			var db, table string
			var ok bool
			if load {
				var h loadHead
				if h, ok = l.loadHead(); ok {
					db, table = h.db, h.table
				} else if l.pos = save; !isLoadTable(&l) {
					goto nextStatement // LOAD INDEX INTO CACHE: no rows
				}
			} else {
				db, table, ok = l.insertTable()
			}
			if !ok || l.inBang || l.versioned > 0 {
				return false, first
			}
			if anyDB && db == "" {
				if env.Rules.anyDBHas(table) {
					return false, first
				}
				goto nextStatement
			}
			if db == "" {
				db = env.DB
			}
			if r, rule := env.Rules.Lookup(db, table); rule {
				if load {
					return false, first
				}
				if from == 0 && strings.IndexByte(sql, ';') < 0 {
					first = firstInsert{ok: true, start: save, db: db, table: table, rule: r}
				}
				return false, first
			}
		}
	nextStatement:
		j := strings.IndexByte(sql[from:], ';')
		if j < 0 {
			return true, first
		}
		from += j + 1
	}
}

// isLoadTable reports whether the LOAD at l.pos is LOAD DATA or LOAD XML
// (which put rows in a table) rather than LOAD INDEX INTO CACHE.
func isLoadTable(l *lexer) bool {
	l.next() // LOAD
	t := l.next()
	return l.is(t, "DATA") || l.is(t, "XML")
}

// skipSetStatement moves l, just past a SET, past MariaDB's `STATEMENT
// var=value [, ...] FOR`; false for any other SET.
func (l *lexer) skipSetStatement() bool {
	if !l.is(l.next(), "STATEMENT") {
		return false
	}
	depth := 0
	for {
		t := l.next()
		switch {
		case t.kind == tEOF || l.isPunct(t, ';'):
			return false
		case l.isPunct(t, '('):
			depth++
		case l.isPunct(t, ')'):
			depth--
		case depth == 0 && l.is(t, "FOR"):
			return true
		}
	}
}
