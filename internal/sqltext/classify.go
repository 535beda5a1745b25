package sqltext

import (
	"bytes"
	"strings"
)

// Keyword is a statement's first word, for the words some package of the
// proxy asks about; every other word (and no word at all) is Other.
type Keyword uint8

// The keywords Classify tells apart.
const (
	Other Keyword = iota
	Alter
	Create
	Drop
	Execute
	Insert
	Kill
	Load
	Prepare
	Rename
	Replace
	Set
	Show
	Truncate
	Use
)

// keywordOf returns the Keyword the word w is, in any case: its first
// byte and length pick the one candidate, compared whole.
func keywordOf[T Text](w T) Keyword {
	if len(w) < 3 || len(w) > 8 {
		return Other
	}
	var k Keyword
	switch w[0] | 0x20 {
	case 'a':
		k = Alter
	case 'c':
		k = Create
	case 'd':
		k = Drop
	case 'e':
		k = Execute
	case 'i':
		k = Insert
	case 'k':
		k = Kill
	case 'l':
		k = Load
	case 'p':
		k = Prepare
	case 'r':
		k = Replace
		if len(w) == 6 {
			k = Rename
		}
	case 's':
		k = Show
		if len(w) == 3 {
			k = Set
		}
	case 't':
		k = Truncate
	case 'u':
		k = Use
	default:
		return Other
	}
	if kw := k.String(); len(kw) == len(w) && EqualFold(w, kw) {
		return k
	}
	return Other
}

// String is the keyword in upper case ("" for Other).
func (k Keyword) String() string {
	switch k {
	case Alter:
		return "ALTER"
	case Create:
		return "CREATE"
	case Drop:
		return "DROP"
	case Execute:
		return "EXECUTE"
	case Insert:
		return "INSERT"
	case Kill:
		return "KILL"
	case Load:
		return "LOAD"
	case Prepare:
		return "PREPARE"
	case Rename:
		return "RENAME"
	case Replace:
		return "REPLACE"
	case Set:
		return "SET"
	case Show:
		return "SHOW"
	case Truncate:
		return "TRUNCATE"
	case Use:
		return "USE"
	}
	return ""
}

// Class is what one pass over a command's text learns about it, for every
// package that asks (the proxy's keyword tracking and KILL, the admin
// statements, the engine's DDL, the rewriter's filter): the proxy
// classifies a COM_QUERY or COM_STMT_PREPARE once and hands the value on.
// It is a small value: copying it costs nothing and it holds no part of
// the text. The zero Class is an empty text's.
type Class struct {
	word  Keyword // first word past comments and executable-comment openers
	plain Keyword // first word past comments only; Other when an opener comes first
	flags classFlag
}

type classFlag uint16

const (
	fSemicolon classFlag = 1 << iota
	fMulti
	fSplit // not Lone
	fSeqCall
	fPlan
	fDynamic
	fModal
	fDDL
	fAdmin
	fSetsMode
)

// Word is the first word the server may run: past white space, comments
// and the openers of executable comments (/*!, /*!NNNNN, /*M!NNNNNN),
// whether the server runs a versioned one or not.
func (c Class) Word() Keyword { return c.word }

// PlainWord is the first word past white space and comments only: Other
// when an executable comment opens before it (callers that must not guess
// at what /*! ... */ runs).
func (c Class) PlainWord() Keyword { return c.plain }

// Semicolon reports a ';' anywhere in the text, quoted or not.
func (c Class) Semicolon() bool { return c.flags&fSemicolon != 0 }

// Multi reports whether the text holds anything the server may run after
// its first statement (MoreStatements: either backslash rule says so).
func (c Class) Multi() bool { return c.flags&fMulti != 0 }

// Lone reports whether the text holds one statement, trailing ';'s and
// comments after them aside, under both backslash rules. It differs from
// !Multi only for texts ending in more than one ';' ("SELECT 1;;"), which
// Multi counts as more (an empty statement the server rejects).
func (c Class) Lone() bool { return c.flags&fSplit == 0 }

// SeqCall reports that the text may hold a sequence call: NEXTVAL(,
// LASTVAL(, SETVAL( (also qualified), NEXT VALUE FOR, PREVIOUS VALUE FOR
// or LEAFPROXY_DECODE (see SeqCalls). Quote-blind: a call in a string is a
// false "maybe"; a text with a call is never missed.
func (c Class) SeqCall() bool { return c.flags&fSeqCall != 0 }

// Plannable reports that a statement may start (at the text start or
// right after any ';', quoted or not: a superset of the real starts) with
// INSERT, REPLACE, LOAD, PREPARE, EXECUTE, SET STATEMENT (or SET and an
// executable comment), or with an executable comment: what the rewriter
// may have to plan besides sequence calls.
func (c Class) Plannable() bool { return c.flags&fPlan != 0 }

// Dynamic reports (with Plannable) a statement that may run a literal as
// statements: PREPARE or EXECUTE, an executable comment at a start, or
// SET STATEMENT in a text that names PREPARE or EXECUTE, in a text with a
// ' or ". Modal reports one whose words before its table depend on the
// sql_mode (LOAD, SET STATEMENT). Once Dynamic is found, Modal is not
// looked for further (no caller asks then).
func (c Class) Dynamic() bool { return c.flags&fDynamic != 0 }

// Modal: see Dynamic.
func (c Class) Modal() bool { return c.flags&fModal != 0 }

// DDL reports that a statement of the text may change a table's columns:
// one starts (past comments, executable-comment openers and opening
// parentheses) with ALTER, DROP, CREATE, RENAME or TRUNCATE. Statement
// starts are the ';' that end statements under either backslash rule (a
// ';' in quoted text or a comment is none): a false "yes" is the cautious
// answer.
func (c Class) DDL() bool { return c.flags&fDDL != 0 }

// Admin reports that the text may be one of the proxy's own statements:
// its PlainWord is SHOW, CREATE, ALTER or DROP and the next word (past
// white space and comments) is LEAFPROXY.
func (c Class) Admin() bool { return c.flags&fAdmin != 0 }

// SetsSQLMode reports a SET (its Word) whose text, past leading comments,
// names sql_mode in any case: the statement may change the session's
// sql_mode (SET STATEMENT sql_mode=... FOR too, a cautious "yes").
func (c Class) SetsSQLMode() bool { return c.flags&fSetsMode != 0 }

// Classify reads q once and returns its Class. It does not allocate.
func Classify(q []byte) Class { return classify(q, bytes.IndexByte) }

// ClassifyString is Classify for a string.
func ClassifyString(s string) Class { return classify(s, strings.IndexByte) }

func classify[T Text](q T, index func(T, byte) int) Class {
	var c Class
	start := SkipSpace(q, 0)
	i := SkipToCode(q, start)
	end := wordEnd(q, i)
	c.word = keywordOf(q[i:end])
	if i == start {
		c.plain = c.word
		switch c.word {
		case Show, Create, Alter, Drop:
			if HasKeyword(q[SkipSpace(q, end):], "LEAFPROXY") {
				c.flags |= fAdmin
			}
		}
	}
	if c.word == Set && ContainsFold(q[start:], "sql_mode") {
		c.flags |= fSetsMode
	}
	if seqCalls(q, 1, index) > 0 {
		c.flags |= fSeqCall
	}
	if isDDLWord(c.word) || i < len(q) && q[i] == '(' && isDDLAt(q, i) {
		c.flags |= fDDL
	}
	quotes := -1 // unknown
	c.flags |= startFlags(q, start, &quotes)
	semi := index(q, ';')
	if semi < 0 {
		return c
	}
	c.flags |= fSemicolon
	ddlAfter := false
	for p := semi; p >= 0; {
		ddlAfter = ddlAfter || isDDLAt(q, SkipToCode(q, p+1))
		if c.flags&fDynamic == 0 {
			c.flags |= startFlags(q, SkipSpace(q, p+1), &quotes)
		}
		j := index(q[p+1:], ';')
		if j < 0 {
			break
		}
		p += 1 + j
	}
	// The statement ends under each backslash rule (one when the text has
	// no backslash: both split it the same way): whether more statements
	// follow, and a DDL word seen after a ';' confirmed at a real one.
	backslash := index(q, '\\') >= 0
	for _, escapes := range [2]bool{true, false} {
		end := StatementEnd(q, 0, escapes)
		if end < len(q) && SkipSpace(q, end+1) < len(q) {
			c.flags |= fMulti
		}
		if ddlAfter && c.flags&fDDL == 0 {
			for e := end; e < len(q); e = StatementEnd(q, e+1, escapes) {
				if isDDLAt(q, SkipToCode(q, e+1)) {
					c.flags |= fDDL
					break
				}
			}
		}
		for end < len(q) && q[end] == ';' {
			end = SkipSpace(q, end+1)
		}
		if end < len(q) {
			c.flags |= fSplit
		}
		if !backslash {
			break
		}
	}
	return c
}

// wordEnd returns the end of the run of identifier bytes at i.
func wordEnd[T Text](q T, i int) int {
	for i < len(q) && IsIdentByte(q[i]) {
		i++
	}
	return i
}

// isDDLAt reports whether the code at i (past comments and openers)
// starts, past opening parentheses, with ALTER, DROP, CREATE, RENAME or
// TRUNCATE.
func isDDLAt[T Text](q T, i int) bool {
	for i < len(q) && q[i] == '(' {
		i = SkipToCode(q, i+1)
	}
	return isDDLWord(keywordOf(q[i:wordEnd(q, i)]))
}

// isDDLWord reports a first word that can change a table's columns.
func isDDLWord(k Keyword) bool {
	switch k {
	case Alter, Drop, Create, Rename, Truncate:
		return true
	}
	return false
}

// startFlags reads the words at p (past comments, not past an
// executable-comment opener) as the rewriter's filter does (Plannable,
// Dynamic, Modal). quotes caches whether q has a ' or " (-1: not looked).
func startFlags[T Text](q T, p int, quotes *int) classFlag {
	hasQuotes := func() bool {
		if *quotes < 0 {
			*quotes = 0
			for i := 0; i < len(q); i++ {
				if q[i] == '\'' || q[i] == '"' {
					*quotes = 1
					break
				}
			}
		}
		return *quotes == 1
	}
	if atOpener(q, p) {
		if hasQuotes() {
			return fPlan | fDynamic
		}
		return fPlan
	}
	end := wordEnd(q, p)
	switch keywordOf(q[p:end]) {
	case Insert, Replace:
		return fPlan
	case Load:
		return fPlan | fModal
	case Prepare, Execute:
		if hasQuotes() {
			return fPlan | fDynamic
		}
		return fPlan
	case Set:
		p = SkipSpace(q, end)
		bang := atOpener(q, p)
		if !bang && !EqualFold(q[p:wordEnd(q, p)], "STATEMENT") {
			return 0
		}
		if hasQuotes() && (bang || ContainsFold(q, "prepare") || ContainsFold(q, "execute")) {
			return fPlan | fModal | fDynamic
		}
		return fPlan | fModal
	}
	return 0
}

// atOpener reports an executable-comment opener at p (SkipSpace stops
// only at those among comments).
func atOpener[T Text](q T, p int) bool {
	return p+1 < len(q) && q[p] == '/' && q[p+1] == '*'
}

// PlannableAt reports whether the statement at from (past white space and
// comments) starts as Class.Plannable asks: INSERT, REPLACE, LOAD,
// PREPARE, EXECUTE, SET STATEMENT, or an executable comment.
func PlannableAt(s string, from int) bool {
	quotes := -1
	return startFlags(s, SkipSpace(s, from), &quotes)&fPlan != 0
}
