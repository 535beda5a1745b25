package rewriter

import "strings"

// mayRewrite is the cheap filter in front of all planning. It answers false
// only when no statement in sql can need a rewrite: none starts with INSERT
// or REPLACE and the text has no "val" in any case (every sequence call,
// NEXTVAL, LASTVAL, NEXT VALUE FOR and PREVIOUS VALUE FOR, contains it). It
// does not know about quotes: a "val" or "insert" inside a string or comment
// only costs a real scan. Statement starts are the text start and the byte
// after every ';', which over-approximates the real boundaries.
func mayRewrite(sql string) bool {
	if hasVal(sql) || startsInsert(sql, 0) {
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

// hasVal reports whether sql contains "val" in any case. IndexByte is
// vectorised but costs a call per hit, so text dense with v's falls back
// to a plain loop.
func hasVal(sql string) bool {
	for _, v := range [2]byte{'v', 'V'} {
		for i, hits := 0, 0; ; hits++ {
			if hits == 8 {
				return hasValLoop(sql)
			}
			j := strings.IndexByte(sql[i:], v)
			if j < 0 {
				break
			}
			i += j + 1
			if i+1 < len(sql) && sql[i]|0x20 == 'a' && sql[i+1]|0x20 == 'l' {
				return true
			}
		}
	}
	return false
}

func hasValLoop(sql string) bool {
	for i := 0; i+2 < len(sql); i++ {
		if sql[i]|0x20 == 'v' && sql[i+1]|0x20 == 'a' && sql[i+2]|0x20 == 'l' {
			return true
		}
	}
	return false
}

// startsInsert reports whether the first word at or after from (past
// whitespace and comments) is INSERT or REPLACE, or an executable comment
// hides it, or the words are SET STATEMENT (MariaDB's SET STATEMENT
// var=value FOR <statement>, whose statement may be an INSERT).
func startsInsert(sql string, from int) bool {
	l := lexer{s: sql, pos: from}
	l.skipSpace()
	if l.inBang {
		return true
	}
	w := l.word()
	if eqFold(w, "SET") {
		l.skipSpace()
		return l.inBang || eqFold(l.word(), "STATEMENT")
	}
	return eqFold(w, "INSERT") || eqFold(w, "REPLACE")
}

// word returns the run of identifier bytes at l.pos and moves past it.
func (l *lexer) word() string {
	i := l.pos
	for l.pos < len(l.s) && isIdentByte(l.s[l.pos]) {
		l.pos++
	}
	return l.s[i:l.pos]
}
