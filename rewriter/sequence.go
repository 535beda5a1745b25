package rewriter

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
	// Decode is LEAFPROXY_DECODE(tag, id): what the ID is made of under
	// the tag's generator (a row of several columns, answered alone).
	Decode
)

// MaxBlock is the largest block NEXTVAL('tag', n) reserves at once.
const MaxBlock = 1_000_000

func (f Func) String() string {
	switch f {
	case Next:
		return "NEXTVAL"
	case Last:
		return "LASTVAL"
	case Set:
		return "SETVAL"
	case Decode:
		return "LEAFPROXY_DECODE"
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
	// N (Next only): NEXTVAL('tag', n) reserves a block of n consecutive
	// IDs and its value is the first (LASTVAL the last); 0 for
	// NEXTVAL('tag'), one ID. Checked to be 1 to MaxBlock.
	N int64
	// ID (Decode only): the ID to take apart.
	ID int64
	// ArgParam (Next with a block, Decode; prepared plans only): the
	// numeric argument (n, id) is a ? marker, the ArgParam-th of the
	// statement (from 1), bound at each EXECUTE; N or ID is then 0. 0
	// when the argument is written in the text.
	ArgParam int
}

// CheckBlock reports a block size NEXTVAL('tag', n) does not take, as
// error 1210: n must be 1 to MaxBlock. For a size bound at EXECUTE.
func CheckBlock(n int64) error {
	if n < 1 || n > MaxBlock {
		return errorf(CodeWrongArguments, "Incorrect arguments to NEXTVAL: a block of %d IDs; the size must be 1 to %d", n, MaxBlock)
	}
	return nil
}

// SeqName is a sequence named by an identifier in a statement: a proxy tag
// or a MariaDB native SEQUENCE (DB "" is the session's database).
type SeqName struct {
	DB, Name string
}

// seqCall is a sequence call found in statement text.
type seqCall struct {
	function   Func
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
	ident       bool
	dbQualifier string
	// block: NEXTVAL with a second argument; arg and argParam: that
	// argument or LEAFPROXY_DECODE's id (argErr says why it is not one
	// the proxy can run).
	block    bool
	arg      int64
	argParam bool
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
		c.function, parens = Next, true
	case l.is(t, "LASTVAL"):
		c.function, parens = Last, true
	case l.is(t, "SETVAL"):
		c.function, parens = Set, true
	case l.is(t, "LEAFPROXY_DECODE"):
		c.function, parens = Decode, true
	case l.is(t, "NEXT"):
		c.function = Next
	case l.is(t, "PREVIOUS"):
		c.function = Last
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
		c.dbQualifier = unquote(l.text(prevPart), prevPart.kind, l.mode)
	}
	if c.function == Set {
		return l.setvalArgs(c)
	}
	if parens {
		close := l.next()
		if (c.function == Next || c.function == Decode) && l.isPunct(close, ',') {
			c.block = c.function == Next
			return c, l.intArg(&c)
		}
		if c.function == Decode {
			c.argErr = "LEAFPROXY_DECODE takes the sequence name and an ID, e.g. LEAFPROXY_DECODE('tag', 1234)"
		}
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
// without the parser. ok is false when the text has any other shape. The
// calls are appended to calls (a Planner's, reused). prepared: the text is
// a COM_STMT_PREPARE's, whose block sizes and IDs may be ? markers.
// LEAFPROXY_DECODE must be the only item, without an alias.
func matchSequenceSelect(sql string, mode Mode, calls []Call, prepared bool) (_ []Call, ok bool, err error) {
	l := lexer{sql: sql, mode: mode}
	prev := l.next()
	if !l.is(prev, "SELECT") {
		return nil, false, nil
	}
	params := 0
	decode := false
	var argErr error
	for {
		t := l.next()
		c, ok := l.call(t, prev)
		if !ok {
			return nil, false, nil
		}
		// The item is written in place; on a refusal calls is not the
		// caller's any more.
		if err := checkSelectCall(&c, &argErr); err != nil {
			return nil, false, err
		}
		calls = append(calls, Call{Func: c.function, Tag: c.tag, Name: sql[c.start:c.end], Value: c.value, Used: c.used, Ident: c.ident, DB: c.dbQualifier})
		call := &calls[len(calls)-1]
		selectArgs(call, &c, prepared, &params, &argErr)
		decode = decode || c.function == Decode
		t, aliased, ok := l.selectAlias(call)
		if !ok {
			return nil, false, nil
		}
		if c.function == Decode && aliased {
			return nil, false, errorf(CodeNotSupported, "%s takes no alias: its row has a column per part of the ID (tag, generator, id, created_at, ...)", sql[c.start:c.end])
		}
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
	if argErr != nil {
		return nil, false, argErr
	}
	if decode && len(calls) > 1 {
		return nil, false, errorf(CodeNotSupported, "LEAFPROXY_DECODE must be the only item of its SELECT: SELECT LEAFPROXY_DECODE('tag', id)")
	}
	return calls, true, nil
}

// checkSelectCall checks c, an item of a sequence select
// (matchSequenceSelect): err refuses the text at once; an error in the
// call's arguments goes to *argErr, the first one only, to be reported
// once the text is known to be such a select (elsewhere the call is
// refused for where it is).
func checkSelectCall(c *seqCall, argErr *error) error {
	if c.param {
		return errorf(CodeNotSupported, "%s(?) with the sequence name as a parameter is not supported; write the name in the statement", c.function)
	}
	if c.argErr != "" && c.function == Set {
		return errorf(CodeWrongArguments, "Incorrect arguments to %s: %s", c.function, c.argErr)
	}
	if c.argErr != "" && *argErr == nil {
		*argErr = errorf(CodeWrongArguments, "Incorrect arguments to %s: %s", c.function, c.argErr)
	}
	return nil
}

// selectArgs gives call, the Call of c, its numeric argument: a block's
// size, a decoded ID, or the index of the ? marker that binds it
// (*params counts them); a marker outside a prepared text is *argErr.
func selectArgs(call *Call, c *seqCall, prepared bool, params *int, argErr *error) {
	switch {
	case c.argParam && !prepared && *argErr == nil:
		*argErr = errorf(CodeWrongArguments, "Incorrect arguments to %s: a ? marker is a parameter of a prepared statement only; write the number in the text", c.function)
	case c.argParam:
		*params++
		call.ArgParam = *params
	case c.function == Decode:
		call.ID = c.arg
	case c.block:
		call.N = c.arg
	}
}

// selectAlias reads the alias after a sequence select's call, if any, into
// call.Name; t is the token after the item. ok is false when AS is not
// followed by a name.
func (l *lexer) selectAlias(call *Call) (t token, aliased, ok bool) {
	t = l.next()
	switch {
	case l.is(t, "AS"):
		t = l.next()
		if t.kind != tWord && t.kind != tQuoted && t.kind != tString {
			return t, false, false
		}
	case l.isAlias(t):
	default:
		return t, false, true
	}
	call.Name = unquote(l.text(t), t.kind, l.mode)
	return l.next(), true, true
}

// SequenceNames reads the sequence calls of sql (as the planner finds
// them, with the session's quoting rules) and reports how they name their
// sequences: the names written as identifiers, and whether some call uses
// a string (or is LEAFPROXY_DECODE, the proxy's whatever the name). For a caller that must tell the proxy's tags from MariaDB's
// native sequences when the planner refused the text.
func SequenceNames(sql string, mode Mode) (idents []SeqName, strCalls bool) {
	if !hasSeqCall(sql) {
		return nil, false
	}
	l := lexer{sql: sql, mode: mode}
	prev := token{kind: tEOF}
	for t := l.next(); t.kind != tEOF; t = l.next() {
		if c, ok := l.call(t, prev); ok {
			if !c.ident || c.function == Decode {
				strCalls = true
			} else {
				n := SeqName{DB: c.dbQualifier, Name: c.tag}
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
