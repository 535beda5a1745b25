package rewriter

import (
	"strings"

	"github.com/leafproxy/leafproxy/internal/sqltext"
)

// mayRewrite is the cheap filter in front of all planning. It answers false
// only when no statement in sql can need a rewrite: none starts with INSERT,
// REPLACE, LOAD, PREPARE, EXECUTE or SET STATEMENT, and the text has no sequence
// call (see hasSeqCall). It does not know about quotes: a call or "insert"
// inside a string or comment only costs a real scan. Statement starts are
// the text start and the byte after every ';', which over-approximates the
// real boundaries.
func mayRewrite(sql string) bool {
	return hasSeqCall(sql) || startsAny(sql)
}

// startsAny reports whether the text start or the byte after any ';'
// starts an INSERT / REPLACE / LOAD / PREPARE / EXECUTE / SET STATEMENT
// (see startsInsert).
func startsAny(sql string) bool {
	if startsInsert(sql, 0) {
		return true
	}
	for i := strings.IndexByte(sql, ';'); i >= 0; {
		if startsInsert(sql, i+1) {
			return true
		}
		j := strings.IndexByte(sql[i+1:], ';')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return false
}

// hasSeqCall reports whether sql may hold a sequence call
// (LEAFPROXY_DECODE included). Every other call form
// contains "val" in some case: NEXTVAL(, LASTVAL( and SETVAL( have it after
// "next" / "last" / "set", NEXT VALUE FOR and PREVIOUS VALUE FOR have the word VALUE followed
// (past whitespace, comments and executable-comment markers) by FOR. So a
// "val" counts only where it ends "nextval" / "lastval" / "setval" or starts "value"
// followed by FOR; VALUES, VALUE (, "interval", "value" in a string do not.
// It is quote-blind (a match in a string is a false "maybe") and never
// answers false for a text with a call. IndexByte is vectorised but costs
// a call per hit, so each of 'v' and 'V' is searched for only once per hit.
func hasSeqCall(sql string) bool { return seqCalls(sql, 1) > 0 }

// hasDecode reports whether sql may hold a LEAFPROXY_DECODE call: the word
// in any case somewhere (quote-blind, like the "val" scan).
func hasDecode(sql string) bool {
	for i := strings.IndexByte(sql, '_'); i >= 0; {
		if i >= 9 && i+7 <= len(sql) && sqltext.EqualFold(sql[i-9:i+7], "LEAFPROXY_DECODE") {
			return true
		}
		j := strings.IndexByte(sql[i+1:], '_')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return false
}

// seqCalls counts the places where sql may hold a sequence call (as
// hasSeqCall reads them: at least the calls there are; LEAFPROXY_DECODE
// counts once), stopping at most (-1: no limit).
func seqCalls(sql string, most int) int {
	n := 0
	if hasDecode(sql) {
		if n++; n == most {
			return n
		}
	}
	lo, up := strings.IndexByte(sql, 'v'), strings.IndexByte(sql, 'V')
	for lo >= 0 || up >= 0 {
		var i int
		if up < 0 || lo >= 0 && lo < up {
			i = lo
			if j := strings.IndexByte(sql[i+1:], 'v'); j >= 0 {
				lo = i + 1 + j
			} else {
				lo = -1
			}
		} else {
			i = up
			if j := strings.IndexByte(sql[i+1:], 'V'); j >= 0 {
				up = i + 1 + j
			} else {
				up = -1
			}
		}
		if i+2 < len(sql) && sql[i+1]|0x20 == 'a' && sql[i+2]|0x20 == 'l' && seqCallAt(sql, i) {
			if n++; n == most {
				return n
			}
		}
	}
	return n
}

// seqCallAt reports whether the "val" at sql[i:] may belong to a call.
func seqCallAt(sql string, i int) bool {
	if i >= 4 && (sqltext.EqualFold(sql[i-4:i], "NEXT") || sqltext.EqualFold(sql[i-4:i], "LAST")) || i >= 3 && sqltext.EqualFold(sql[i-3:i], "SET") {
		return true
	}
	j := i + 5
	if j > len(sql) || sql[i+3]|0x20 != 'u' || sql[i+4]|0x20 != 'e' || j < len(sql) && sqltext.IsIdentByte(sql[j]) {
		return false // not the word VALUE (VALUES, VALUED, VAL, ...)
	}
	// The lexer that finds calls may be inside /*! ... */ here or not;
	// what follows VALUE is skipped as either would skip it.
	for _, inBang := range [2]bool{false, true} {
		l := lexer{sql: sql, pos: j, inBang: inBang}
		l.skipSpace()
		if sqltext.EqualFold(l.word(), "FOR") {
			return true
		}
	}
	return false
}

// startsInsert reports whether the first word at or after from (past
// whitespace and comments) is INSERT or REPLACE, LOAD (LOAD DATA may fill
// a rule table), PREPARE or EXECUTE (statements built from a string, see
// builder.dynamic), or an executable comment hides it, or the words are
// SET STATEMENT (MariaDB's SET STATEMENT var=value FOR <statement>, whose
// statement may be an INSERT).
func startsInsert(sql string, from int) bool {
	l := lexer{sql: sql, pos: from}
	l.skipSpace()
	if l.inBang {
		return true
	}
	w := l.word()
	if sqltext.EqualFold(w, "SET") {
		l.skipSpace()
		return l.inBang || sqltext.EqualFold(l.word(), "STATEMENT")
	}
	return sqltext.EqualFold(w, "INSERT") || sqltext.EqualFold(w, "REPLACE") || sqltext.EqualFold(w, "LOAD") ||
		sqltext.EqualFold(w, "PREPARE") || sqltext.EqualFold(w, "EXECUTE")
}

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
// (hasSeqCall): every possible statement start (the text start and the
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
				if l.skipSpace(); !startsInsert(sql, l.pos) {
					goto nextStatement // no INSERT / REPLACE / LOAD / PREPARE / EXECUTE
				}
				save = l.pos
				w = l.word()
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
