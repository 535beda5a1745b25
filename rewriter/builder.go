package rewriter

import (
	"slices"
	"strings"

	"github.com/leafproxy/leafproxy/internal/sqltext"
	_ "github.com/pingcap/tidb/pkg/parser/test_driver" // value expressions for the parser
)

// builder collects the edits for one text.
type builder struct {
	sql      string
	env      *Env
	prepared bool
	edits    []edit
	calls    []seqCall // scratch: the current statement's calls
	filled   []Filled
	// scratch for the current statement: it holds an executable comment
	// whose execution depends on the server (lexer.versioned); it is the
	// statement of a SET STATEMENT that sets sql_mode.
	versioned  bool
	modeForced bool
	// fast enables the fast path (fast.go); noFast is set when the text
	// has an executable comment. fastHits counts the statements it planned.
	// noSeq: the text holds no sequence call (hasSeqCall said so).
	fast, noFast, noSeq bool
	fastHits            int
	// db is the current database for the statement being planned: Env.DB,
	// then the database of the last USE before it; dbUnknown after a USE
	// that could not be followed. modeSet: a statement before this one may
	// have set sql_mode. inBang: the statement's first token is inside an
	// executable comment.
	db                 string
	dbUnknown, modeSet bool
	inBang             bool
	// scan is set when the builder only checks that no statement needs
	// planning, and refuses those that do (see refuse).
	scan    scanKind
	dynamic string // scanDynamic: "PREPARE ... FROM" or "EXECUTE IMMEDIATE"
	// first: quickPlan already read the text's lone INSERT up to its
	// table and found its rule (firstInsert).
	first firstInsert
	// head: what the fast path read of the last INSERT it planned before
	// its rows; loneInsert: that INSERT was the text's one statement, planned
	// with first (the Planner's memo keeps such heads, memo.go).
	head       insertHead
	loneInsert bool
	// numbering: the text's statement is Numbered (numbered.go), with these
	// counters; nstmts counts the statements planned.
	numbering      *numbering
	counters       []Counter
	countsExplicit bool
	nstmts         int
	// explicit: the largest explicit key per tag written before any key
	// generated from the tag; marks: those written after one, in text
	// order (noteExplicit); fillTags: the tags of the generated keys among
	// edits[:scanned].
	explicit []ExplicitKey
	// keyed: a rule table's key value was read (keyFills); keyFilled: one
	// of them is generated; lastKey: the last one's key when kept, a
	// literal (or DEFAULT kept as 0) at lastKeyAt (0: none).
	keyed, keyFilled bool
	lastKey          int64
	lastKeyAt        int
	// stmtKeys: per statement of a text, lastKey when it gave every key
	// (else 0); stmtKeysOff: a statement may answer with more than one
	// result (CALL, EXECUTE), so results are not statements (Plan.StmtKeys).
	stmtKeys    []int64
	stmtKeysOff bool
	// wrapLast: the last statement's wrapped key is in its last row
	// (Plan.WrapLast).
	wrapLast bool
	// wrapMarked: the row after it opens its key with markOpen
	// (Plan.WrapMarked).
	wrapMarked bool
	marks      []explicitMark
	fillTags   []string
	scanned    int
	// clientParams: a prepared Numbered plan's ? markers.
	clientParams int
	// idents: the sequence names written as identifiers (noteCall);
	// strCalls: some call names its sequence with a string.
	idents   []SeqName
	strCalls bool
	// writes: a Numbered statement's tables (Plan.Writes).
	writes []SeqName
	// stmtRaw: where the statement being planned begins (runFrom). load:
	// the plan of a LOAD DATA into a rule table (load.go); loadErr its
	// error that is not a refusal.
	stmtRaw int
	load    *Load
	loadErr error
	// cost: the tokens and nesting of the statement being planned, when
	// runFrom counted them as it read it (parseCost); charge: the plan memory
	// the call holds.
	cost   stmtCost
	charge *charge
	// texts: the edits' strings (edit), "" first. rows: a large INSERT's
	// rows as offsets (fast.go).
	texts []string
	rows  *rowRun
}

// text is s's index in b.texts, added if it is not among the last few.
func (b *builder) text(s string) uint32 {
	if s == "" {
		return 0
	}
	if len(b.texts) == 0 {
		b.texts = append(b.texts, "")
	}
	for i := len(b.texts) - 1; i > 0 && i >= len(b.texts)-8; i-- {
		if b.texts[i] == s {
			return uint32(i)
		}
	}
	b.texts = append(b.texts, s)
	return uint32(len(b.texts) - 1)
}

type scanKind uint8

const (
	scanNone    scanKind = iota
	scanModeSet          // the statements after a SET of sql_mode
	scanDynamic          // the text of PREPARE ... FROM '...' / EXECUTE IMMEDIATE '...'
)

// run plans every statement of the text.
func (b *builder) run() error {
	b.db = b.env.DB
	l := lexer{sql: b.sql, mode: b.env.Mode}
	b.noFast = !b.fast || hasBang(b.sql)
	if !b.noFast && b.noSeq && strings.IndexByte(b.sql, ';') < 0 {
		// One statement, no sequence call, no executable comment: if it
		// is an INSERT or REPLACE, runFrom would find exactly it and hand
		// it to statement; spare the pass over every token it makes first.
		first := l.next()
		if l.is(first, "INSERT") || l.is(first, "REPLACE") {
			b.inBang = l.inBang
			b.nstmts = 1
			b.cost = stmtCost{} // parseCost counts, if the parser must read it
			err := b.statement(0, first.start, len(b.sql), first)
			// The fast path planned it from what quickPlan read (see the
			// firstInsert case of statement): the Planner may memoize it.
			b.loneInsert = err == nil && b.fastHits == 1 && b.first.ok && b.first.start == first.start
			return err
		}
		l = lexer{sql: b.sql, mode: b.env.Mode}
	}
	if err := b.runFrom(&l, 0); err != nil {
		return err
	}
	if b.numbering != nil && b.nstmts > 1 {
		return errMultiNumbered
	}
	return nil
}

// runFrom plans the statements from l.pos on; stmt is the index of the
// first of them in the text.
func (b *builder) runFrom(l *lexer, stmt int) error {
	for ; ; stmt++ {
		versioned := l.versioned
		inVersioned := l.inBang && l.bangVersioned // after a ';' inside /*!NNNNN ... */
		var r stmtRead
		compound := b.readStatement(l, stmt, &r)
		if compound {
			b.edits = b.edits[:0]
			return nil
		}
		b.versioned, b.modeForced = l.versioned > versioned || inVersioned, false
		if r.first.kind != tEOF {
			b.nstmts++
			b.stmtRaw = r.raw
			b.cost = stmtCost{counted: true, tokens: r.tokens, depth: r.depth}
			b.keyed, b.keyFilled, b.lastKey = false, false, 0
			if err := b.statement(r.raw, r.start, r.end.start, r.first); err != nil {
				return err
			}
			b.noteStmtKey(l, r.first)
			b.follow(l, &r)
		}
		if r.end.kind == tEOF {
			return nil
		}
		if b.modeSet && b.scan == scanNone {
			return b.afterModeSet(l, stmt+1)
		}
	}
}

// stmtRead is what readStatement read of one statement: raw is where its
// text begins, before comments, start its first token first; end is the
// ';' or EOF after it; tokens and depth count its tokens and nesting for
// parseCost.
type stmtRead struct {
	raw, start    int
	first, end    token
	tokens, depth int
}

// readStatement reads the statement at l.pos up to its ';' or the end of
// the text into r, collecting its sequence calls in b.calls. compound: it is a
// stored program body (only looked for when stmt is 0).
func (b *builder) readStatement(l *lexer, stmt int, r *stmtRead) (compound bool) {
	r.start, r.raw = l.pos, l.pos
	r.first = token{kind: tEOF}
	prev := token{kind: tEOF}
	b.calls = b.calls[:0]
	open := 0
	for {
		t := l.next()
		if t.kind == tEOF || l.isPunct(t, ';') {
			r.end = t
			return compound
		}
		r.tokens++
		if t.kind == tPunct {
			switch b.sql[t.start] {
			case '(':
				open++
				r.depth = max(r.depth, open)
			case ')':
				open = max(open-1, 0)
			}
		}
		if r.first.kind == tEOF {
			r.first = t
			r.start = t.start
			b.inBang = l.inBang
		}
		if c, ok := l.call(t, prev); ok {
			b.calls = append(b.calls, c)
			prev = token{kind: tWord, start: c.start, end: c.end}
			continue
		}
		// A stored program body (CREATE PROCEDURE ... BEGIN ... END,
		// BEGIN NOT ATOMIC) runs later or holds its own ';': its
		// statements are not ours to fill.
		if stmt == 0 && (l.is(r.first, "CREATE") && l.is(t, "BEGIN") ||
			l.is(r.first, "BEGIN") && prev.start == r.first.start && l.is(t, "NOT")) {
			compound = true
		}
		prev = t
	}
}

// follow notes what a planned statement changes for the ones after it.
func (b *builder) follow(l *lexer, r *stmtRead) {
	switch {
	case l.is(r.first, "USE"):
		// USE db: later statements resolve names against db. A USE
		// the server may skip, or one this does not read, leaves
		// the database unknown.
		u := lexer{sql: b.sql[:r.end.start], pos: r.first.end, mode: l.mode, inBang: b.inBang}
		name := u.next()
		if (name.kind == tWord || name.kind == tQuoted) && u.next().kind == tEOF && !b.versioned {
			b.db, b.dbUnknown = unquote(u.text(name), name.kind, u.mode), false
		} else {
			b.dbUnknown = true
		}
	case l.is(r.first, "SET") && b.namesSQLMode(r.start, r.end.start):
		b.modeSet = true
	}
}

// afterModeSet checks the statements after one that sets sql_mode: the
// new mode is not known here, and it may change how the rest of the text
// is read (ANSI_QUOTES, NO_BACKSLASH_ESCAPES: even where it splits into
// statements). So the rest is read in all four ways, and a statement that
// needs planning in any of them is refused; otherwise the rest passes as
// it is.
func (b *builder) afterModeSet(l *lexer, stmt int) error {
	for _, m := range [4][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
		env := *b.env
		env.Mode.ANSIQuotes, env.Mode.NoBackslashEscapes = m[0], m[1]
		c := builder{sql: b.sql, env: &env, db: b.db, dbUnknown: b.dbUnknown, modeSet: true, scan: scanModeSet}
		cl := *l
		cl.mode = env.Mode
		if err := c.runFrom(&cl, stmt); err != nil {
			return err
		}
	}
	return nil
}

// namesSQLMode reports whether the SET statement sql[start:end) names
// sql_mode (SET sql_mode=..., SET @@SESSION.sql_mode=..., but also SET
// @old_sql_mode=@@sql_mode): conservatively, it may change the mode.
// SET STATEMENT ... FOR sets it for its statement only (modeForced).
func (b *builder) namesSQLMode(start, end int) bool {
	l := lexer{sql: b.sql[:end], pos: start, mode: b.env.Mode, inBang: b.inBang}
	l.next() // SET
	for i := 0; ; i++ {
		t := l.next()
		switch {
		case t.kind == tEOF:
			return false
		case i == 0 && l.is(t, "STATEMENT"):
			if _, _, _, ok := b.setStatement(start, end); ok {
				return false
			}
		case t.kind == tWord || t.kind == tQuoted || t.kind == tVar:
			if name := unquote(l.text(t), t.kind, l.mode); len(name) >= 8 && sqltext.EqualFold(name[len(name)-8:], "SQL_MODE") {
				return true
			}
		}
	}
}

// oneResult: the statements a multi-statement text's answer has one
// result for (a CALL, an EXECUTE of one, may have several).
var oneResult = []string{"INSERT", "REPLACE", "SELECT", "UPDATE", "DELETE", "SET", "BEGIN", "COMMIT", "ROLLBACK", "START", "DO", "USE", "SHOW"}

// noteStmtKey records the statement just planned, whose first token is
// first, in stmtKeys.
func (b *builder) noteStmtKey(l *lexer, first token) {
	if b.stmtKeysOff {
		return
	}
	next := lexer{sql: b.sql, pos: first.end, mode: l.mode}
	if !slices.ContainsFunc(oneResult, func(w string) bool { return l.is(first, w) }) ||
		l.is(first, "SET") && next.is(next.next(), "STATEMENT") { // SET STATEMENT ... FOR CALL p()
		b.stmtKeysOff, b.stmtKeys = true, nil
		return
	}
	var k int64
	if b.keyed && !b.keyFilled {
		k = b.lastKey
	}
	b.stmtKeys = append(b.stmtKeys, k)
}
