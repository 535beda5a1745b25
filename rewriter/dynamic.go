package rewriter

import (
	"fmt"

	"github.com/leafproxy/leafproxy/internal/sqltext"
	_ "github.com/pingcap/tidb/pkg/parser/test_driver" // value expressions for the parser
)

// refuse is the error for a statement that needs planning (a rule table's
// key to fill, or sequence calls) met while scanning.
func (b *builder) refuse(hasRule bool, name string, rule Rule) error {
	what := ""
	if hasRule {
		what = fmt.Sprintf("an INSERT / REPLACE on %s (key column %s)", name, rule.Column)
	} else {
		what = b.sql[b.calls[0].start:b.calls[0].end]
	}
	if b.scan == scanModeSet {
		return errorf(CodeNotSupported, "%s follows a SET of sql_mode in the same text: the proxy plans with the sql_mode from before the text "+
			"and cannot tell the new one; send the SET as a statement of its own first", what)
	}
	return errorf(CodeNotSupported, "%s with %s: the proxy does not see statements prepared from a string in SQL, so it cannot fill keys "+
		"or sequence values in them; use the binary protocol (server-side prepared statements, which the proxy supports) or send the statement itself", b.dynamic, what)
}

// dynamicStatement checks PREPARE s FROM src and EXECUTE IMMEDIATE src
// [USING ...] in sql[start:end): the server runs src, which the proxy
// never sees. When src is string literals (or an expression with some),
// their content (unescaped with the session's sql_mode, concatenated) is
// read as statements: an INSERT / REPLACE on a rule table or a sequence
// call there is refused; a USE there leaves the database unknown and a
// SET of sql_mode counts as one. A user variable (PREPARE s FROM @q) is not
// seen; nor is EXECUTE s.
func (b *builder) dynamicStatement(start, end int) error {
	l := lexer{sql: b.sql[:end], pos: start, mode: b.env.Mode, inBang: b.inBang}
	what := "PREPARE ... FROM"
	if l.is(l.next(), "PREPARE") {
		if t := l.next(); t.kind != tWord && t.kind != tQuoted || !l.is(l.next(), "FROM") {
			return nil
		}
	} else {
		if !l.is(l.next(), "IMMEDIATE") {
			// EXECUTE s: s may be a SET of sql_mode prepared earlier,
			// which the proxy did not see.
			b.modeSet = true
			return nil
		}
		what = "EXECUTE IMMEDIATE"
	}
	// Concatenate the string literals of src; allocates only for this
	// statement kind.
	var content []byte
	depth, n, lone := 0, 0, false
	for {
		t := l.next()
		if t.kind == tEOF || depth == 0 && what == "EXECUTE IMMEDIATE" && l.is(t, "USING") {
			break
		}
		switch {
		case l.isPunct(t, '('):
			depth++
		case l.isPunct(t, ')'):
			depth--
		case t.kind == tString:
			content = append(content, unquote(l.text(t), t.kind, l.mode)...)
		}
		n++
		lone = n == 1 && t.kind == tVar
	}
	if lone || len(content) == 0 {
		return nil
	}
	c := builder{sql: string(content), env: b.env, db: b.db, dbUnknown: b.dbUnknown, modeSet: b.modeSet, scan: scanDynamic, dynamic: what}
	cl := lexer{sql: c.sql, mode: b.env.Mode}
	if err := c.runFrom(&cl, 1); err != nil {
		return err
	}
	if c.db != b.db || c.dbUnknown {
		b.dbUnknown = true
	}
	b.modeSet = b.modeSet || c.modeSet
	return nil
}

// setStatement reads sql[start:end) as MariaDB's `SET STATEMENT var=value
// [, ...] FOR <statement>`; inner is the offset of the statement after
// FOR and first its first token; setsMode reports a sql_mode among the
// variables. ok is false for any other SET.
func (b *builder) setStatement(start, end int) (inner int, first token, setsMode, ok bool) {
	l := lexer{sql: b.sql[:end], pos: start, mode: b.env.Mode}
	l.next() // SET
	if !l.is(l.next(), "STATEMENT") {
		return 0, token{}, false, false
	}
	depth := 0
	prev := token{kind: tEOF}
	for {
		t := l.next()
		switch {
		case t.kind == tEOF:
			return 0, token{}, false, false
		case l.isPunct(t, '('):
			depth++
		case l.isPunct(t, ')'):
			depth--
		case depth == 0 && l.is(t, "FOR") && !l.is(prev, "VALUE"): // not NEXT VALUE FOR s
			u := l.next()
			if u.kind == tEOF {
				return 0, token{}, false, false
			}
			return u.start, u, setsMode, true
		case t.kind == tWord || t.kind == tQuoted || t.kind == tVar:
			name := unquote(l.text(t), t.kind, l.mode)
			if len(name) >= 8 && sqltext.EqualFold(name[len(name)-8:], "SQL_MODE") {
				setsMode = true
			}
		}
		prev = t
	}
}
