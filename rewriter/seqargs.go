package rewriter

import (
	"strconv"

	"github.com/leafproxy/leafproxy/internal/sqltext"
)

// The arguments after a sequence call's name: SETVAL's value, is_used and
// round; NEXTVAL's block size; LEAFPROXY_DECODE's ID.

// intArg reads the last argument of NEXTVAL('tag', n) or
// LEAFPROXY_DECODE('tag', id), after its comma, up to and including the
// closing parenthesis: an integer literal with an optional sign (for
// LEAFPROXY_DECODE also a string holding one, as IDs travel in JSON) or a
// ? marker. Anything else up to the matching parenthesis is consumed and
// the call recognised with argErr set, so that it is refused rather than
// sent to a server that has no such call. false: the text ends first.
func (l *lexer) intArg(c *seqCall) bool {
	var toks [3]token
	n := 0
	for depth := 0; ; {
		t := l.next()
		switch {
		case t.kind == tEOF:
			return false
		case l.isPunct(t, '('):
			depth++
		case l.isPunct(t, ')'):
			if depth == 0 {
				c.end = t.end
				c.argErr = intArgValue(l, c, toks[:min(n, len(toks))], n)
				return true
			}
			depth--
		}
		if n < len(toks) {
			toks[n] = t
		}
		n++
	}
}

// intArgValue reads the n tokens of an integer argument (toks: the first
// few) into c, or says why it cannot.
func intArgValue(l *lexer, c *seqCall, toks []token, n int) string {
	what := "NEXTVAL's block size must be an integer literal or ?, e.g. NEXTVAL('tag', 100)"
	if c.function == Decode {
		what = "LEAFPROXY_DECODE's ID must be an integer or ?, e.g. LEAFPROXY_DECODE('tag', 1234)"
	}
	sign := ""
	if n == 2 && (l.isPunct(toks[0], '-') || l.isPunct(toks[0], '+')) {
		sign, toks, n = l.text(toks[0]), toks[1:], 1
	}
	if n != 1 {
		return what
	}
	v := toks[0]
	text := l.text(v)
	switch {
	case v.kind == tParam && sign == "":
		c.argParam = true
		return ""
	case v.kind == tString && c.function == Decode && sign == "":
		text = unquote(text, v.kind, l.mode)
		if len(text) > 1 && (text[0] == '-' || text[0] == '+') {
			sign, text = text[:1], text[1:]
		}
	case v.kind != tNumber:
		return what
	}
	if !allDigits(text) {
		return what
	}
	val, err := strconv.ParseInt(sign+text, 10, 64)
	if err != nil {
		return what + "; " + sign + text + " is out of range for BIGINT"
	}
	c.arg = val
	if c.block {
		if err := CheckBlock(val); err != nil {
			return "a block of " + sign + text + " IDs; the size must be 1 to " + strconv.Itoa(MaxBlock)
		}
	}
	return ""
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
