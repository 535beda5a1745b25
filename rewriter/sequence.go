package rewriter

// Func is a sequence function.
type Func uint8

const (
	// Next is NEXTVAL(tag) / NEXT VALUE FOR tag: a fresh ID.
	Next Func = iota + 1
	// Last is LASTVAL(tag) / PREVIOUS VALUE FOR tag: the last ID this
	// session got for the tag, NULL before the first.
	Last
)

func (f Func) String() string {
	switch f {
	case Next:
		return "NEXTVAL"
	case Last:
		return "LASTVAL"
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
}

// seqCall is a sequence call found in statement text.
type seqCall struct {
	fn         Func
	tag        string
	start, end int
	param      bool // the tag is a ? placeholder
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
	var part token
	for i := 0; ; i++ {
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
	if parens {
		close := l.next()
		if !l.isPunct(close, ')') {
			return c, false
		}
		c.end = close.end
	}
	return c, true
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
// without the parser. ok is false when the text has any other shape.
func matchSequenceSelect(sql string, mode Mode) (calls []Call, ok bool, err error) {
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
		call := Call{Func: c.fn, Tag: c.tag, Name: sql[c.start:c.end]}
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
