package rewriter

import (
	"strconv"

	"github.com/leafproxy/leafproxy/internal/sqltext"
)

// Func is a sequence function.
type Func uint8

const (
	// Next is NEXTVAL(tag) / NEXT VALUE FOR tag: a fresh ID.
	Next Func = iota + 1
	// Last is LASTVAL(tag) / PREVIOUS VALUE FOR tag: the last ID this
	// session got for the tag, NULL before the first.
	Last
	// Set is SETVAL(tag, n[, is_used[, round]]): raise the tag so that the
	// next NEXTVAL is above n (at least n when is_used is 0), as MariaDB's
	// SETVAL; the call's value is n.
	Set
)

func (f Func) String() string {
	switch f {
	case Next:
		return "NEXTVAL"
	case Last:
		return "LASTVAL"
	case Set:
		return "SETVAL"
	}
	return "?"
}

// Call is one item of a SELECT the proxy answers itself.
type Call struct {
	Func Func
	// Tag is the sequence name: the string's value in NEXTVAL('tag'), the
	// identifier otherwise; of a qualified name db.tag only the last part.
	Tag string
	// Name is the result column's name: the alias if there is one,
	// otherwise the call's text exactly as written (as MariaDB names it).
	Name string
	// Value and Used (Set only): SETVAL's second and third arguments;
	// Used is true unless is_used was given as 0 / FALSE.
	Value int64
	Used  bool
	// Ident: the name was written as an identifier (NEXTVAL(s), NEXT
	// VALUE FOR db.s), not a string, so it may name a MariaDB native
	// SEQUENCE; DB is its qualifier ("" when unqualified).
	Ident bool
	DB    string
}

// SeqName is a sequence named by an identifier in a statement: a proxy tag
// or a MariaDB native SEQUENCE (DB "" is the session's database).
type SeqName struct {
	DB, Name string
}

// seqCall is a sequence call found in statement text.
type seqCall struct {
	fn         Func
	tag        string
	start, end int
	param      bool // the tag is a ? placeholder
	// SETVAL's arguments; argErr says why they are not ones the proxy
	// can run (the call is still recognised, so it is refused rather
	// than sent to the server, which knows no such sequence).
	value  int64
	used   bool
	argErr string
	// ident, qual: see Call.Ident and Call.DB.
	ident bool
	qual  string
}

// call recognises a sequence call starting at word token t (prev is the
// token before it). On failure the lexer is left where it was.
func (l *lexer) call(t, prev token) (seqCall, bool) {
	if t.kind != tWord || l.isPunct(prev, '.') {
		return seqCall{}, false
	}
	save, saveBang := l.pos, l.inBang
	c, ok := l.callBody(t)
	if !ok {
		l.pos, l.inBang = save, saveBang
	}
	return c, ok
}

func (l *lexer) callBody(t token) (seqCall, bool) {
	c := seqCall{start: t.start}
	parens := false
	switch {
	case l.is(t, "NEXTVAL"):
		c.fn, parens = Next, true
	case l.is(t, "LASTVAL"):
		c.fn, parens = Last, true
	case l.is(t, "SETVAL"):
		c.fn, parens = Set, true
	case l.is(t, "NEXT"):
		c.fn = Next
	case l.is(t, "PREVIOUS"):
		c.fn = Last
	default:
		return c, false
	}
	if parens {
		if !l.isPunct(l.next(), '(') {
			return c, false
		}
	} else if !l.is(l.next(), "VALUE") || !l.is(l.next(), "FOR") {
		return c, false
	}
	// name [. name [. name]]: the last part is the tag.
	var part, prevPart token
	for i := 0; ; i++ {
		prevPart = part
		part = l.next()
		switch part.kind {
		case tWord, tQuoted, tString:
		case tParam:
			c.param = true
		default:
			return c, false
		}
		c.end = part.end
		save, saveBang := l.pos, l.inBang
		if i < 2 && l.isPunct(l.next(), '.') {
			continue
		}
		l.pos, l.inBang = save, saveBang
		break
	}
	c.tag = unquote(l.text(part), part.kind, l.mode)
	c.ident = part.kind != tString
	if c.ident && prevPart.end > prevPart.start && prevPart.kind != tString {
		c.qual = unquote(l.text(prevPart), prevPart.kind, l.mode)
	}
	if c.fn == Set {
		return l.setvalArgs(c)
	}
	if parens {
		close := l.next()
		if !l.isPunct(close, ')') {
			return c, false
		}
		c.end = close.end
	}
	return c, true
}

// setvalArgs reads SETVAL's arguments after the name, up to and including
// the closing parenthesis: `, n [, is_used [, round]] )` with n a
// non-negative integer literal, is_used 0 / 1 / TRUE / FALSE and round 0
// (a segment tag never cycles). Anything else between the parentheses is
// still consumed and recognised as a SETVAL call, with argErr set.
func (l *lexer) setvalArgs(c seqCall) (seqCall, bool) {
	c.used = true
	t := l.next()
	args := 0
	for depth := 0; ; {
		switch {
		case t.kind == tEOF:
			return c, false
		case l.isPunct(t, '('):
			depth++
		case l.isPunct(t, ')'):
			if depth == 0 {
				c.end = t.end
				if args == 0 && c.argErr == "" {
					c.argErr = "SETVAL takes the sequence name and a value, e.g. SETVAL('tag', 1000)"
				}
				return c, true
			}
			depth--
		case l.isPunct(t, ',') && depth == 0:
			args++
			if args > 3 && c.argErr == "" {
				c.argErr = "SETVAL takes at most 4 arguments (name, value, is_used, round)"
			}
			// An argument must be one token, then ',' or ')'.
			v := l.next()
			save, saveBang := l.pos, l.inBang
			after := l.next()
			l.pos, l.inBang = save, saveBang
			if c.argErr == "" {
				c.argErr = setvalArg(l, &c, args, v, after)
			}
			t = l.next()
			continue
		case c.argErr == "":
			c.argErr = "SETVAL's arguments must be written as literals, e.g. SETVAL('tag', 1000)"
		}
		t = l.next()
	}
}

// setvalArg checks SETVAL argument number i (1: value, 2: is_used, 3:
// round) given as token v followed by after; it returns why it cannot be
// run, or "".
func setvalArg(l *lexer, c *seqCall, i int, v, after token) string {
	if !l.isPunct(after, ',') && !l.isPunct(after, ')') {
		return "SETVAL's arguments must be integer literals, e.g. SETVAL('tag', 1000); write the value without an expression or a sign"
	}
	text := l.text(v)
	if v.kind == tParam {
		return "SETVAL with a ? parameter is not supported; write the value in the statement"
	}
	switch i {
	case 1:
		if v.kind != tNumber || !allDigits(text) {
			return "SETVAL's value must be a non-negative integer literal, e.g. SETVAL('tag', 1000)"
		}
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return "SETVAL's value " + text + " is out of range for BIGINT"
		}
		c.value = n
	case 2:
		switch {
		case l.is(v, "TRUE") || v.kind == tNumber && allDigits(text) && text != "0" && trimZeros(text) != "0":
			c.used = true
		case l.is(v, "FALSE") || v.kind == tNumber && allDigits(text) && trimZeros(text) == "0":
			c.used = false
		default:
			return "SETVAL's is_used must be 0, 1, TRUE or FALSE"
		}
	case 3:
		if v.kind != tNumber || !allDigits(text) || trimZeros(text) != "0" {
			return "SETVAL's round must be 0: a proxy sequence never cycles"
		}
	}
	return ""
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !sqltext.IsDigit(s[i]) {
			return false
		}
	}
	return s != ""
}

func trimZeros(s string) string {
	for len(s) > 1 && s[0] == '0' {
		s = s[1:]
	}
	return s
}

// notAlias lists words that end a select item instead of naming it.
var notAlias = [...]string{"FROM", "WHERE", "LIMIT", "INTO", "FOR", "LOCK", "UNION", "ORDER", "GROUP", "HAVING", "WINDOW", "EXCEPT", "INTERSECT", "AS"}

func (l *lexer) isAlias(t token) bool {
	switch t.kind {
	case tQuoted, tString:
		return true
	case tWord:
		for _, w := range notAlias {
			if l.is(t, w) {
				return false
			}
		}
		return true
	}
	return false
}

// matchSequenceSelect recognises the whole text as
//
//	SELECT call [[AS] alias] {, call [[AS] alias]} [FROM DUAL] [;]
//
// without the parser. ok is false when the text has any other shape. The
// calls are appended to calls (a Planner's, reused).
func matchSequenceSelect(sql string, mode Mode, calls []Call) (_ []Call, ok bool, err error) {
	l := lexer{s: sql, mode: mode}
	prev := l.next()
	if !l.is(prev, "SELECT") {
		return nil, false, nil
	}
	for {
		t := l.next()
		c, ok := l.call(t, prev)
		if !ok {
			return nil, false, nil
		}
		if c.param {
			return nil, false, errorf(CodeNotSupported, "%s(?) with the sequence name as a parameter is not supported; write the name in the statement", c.fn)
		}
		if c.argErr != "" {
			return nil, false, errorf(CodeWrongArguments, "Incorrect arguments to SETVAL: %s", c.argErr)
		}
		call := Call{Func: c.fn, Tag: c.tag, Name: sql[c.start:c.end], Value: c.value, Used: c.used, Ident: c.ident, DB: c.qual}
		t = l.next()
		if l.is(t, "AS") {
			t = l.next()
			if t.kind != tWord && t.kind != tQuoted && t.kind != tString {
				return nil, false, nil
			}
			call.Name = unquote(l.text(t), t.kind, mode)
			t = l.next()
		} else if l.isAlias(t) {
			call.Name = unquote(l.text(t), t.kind, mode)
			t = l.next()
		}
		calls = append(calls, call)
		prev = t
		if !l.isPunct(t, ',') {
			break
		}
	}
	t := prev
	if l.is(t, "FROM") {
		if !l.is(l.next(), "DUAL") {
			return nil, false, nil
		}
		t = l.next()
	}
	if l.isPunct(t, ';') {
		t = l.next()
	}
	if t.kind != tEOF || l.inBang {
		return nil, false, nil
	}
	return calls, true, nil
}

// SequenceNames reads the sequence calls of sql (as the planner finds
// them, with the session's quoting rules) and reports how they name their
// sequences: the names written as identifiers, and whether some call uses
// a string. For a caller that must tell the proxy's tags from MariaDB's
// native sequences when the planner refused the text.
func SequenceNames(sql string, mode Mode) (idents []SeqName, strCalls bool) {
	if !hasSeqCall(sql) {
		return nil, false
	}
	l := lexer{s: sql, mode: mode}
	prev := token{kind: tEOF}
	for t := l.next(); t.kind != tEOF; t = l.next() {
		if c, ok := l.call(t, prev); ok {
			if !c.ident {
				strCalls = true
			} else {
				n := SeqName{DB: c.qual, Name: c.tag}
				found := false
				for _, m := range idents {
					found = found || m == n
				}
				if !found {
					idents = append(idents, n)
				}
			}
			prev = token{kind: tWord, start: c.start, end: c.end}
			continue
		}
		prev = t
	}
	return idents, strCalls
}
