package rewriter

import (
	"strings"

	"github.com/leafproxy/leafproxy/internal/sqltext"
	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
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
	// of them is generated; lastKey: the last one's key when kept.
	keyed, keyFilled bool
	lastKey          int64
	// wrapLast: the last statement's wrapped key is in its last row
	// (Plan.WrapLast).
	wrapLast bool
	marks    []explicitMark
	fillTags []string
	scanned  int
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
	// texts: the edits' strings (edit), "" first.
	texts []string
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
		start := l.pos
		raw, versioned := l.pos, l.versioned
		inVersioned := l.inBang && l.bangVersioned // after a ';' inside /*!NNNNN ... */
		first, prev := token{kind: tEOF}, token{kind: tEOF}
		b.calls = b.calls[:0]
		compound := false
		tokens, depth, open := 0, 0, 0 // for parseCost, counted on the way
		var t token
		for {
			t = l.next()
			if t.kind == tEOF || l.isPunct(t, ';') {
				break
			}
			tokens++
			if t.kind == tPunct {
				switch b.sql[t.start] {
				case '(':
					open++
					depth = max(depth, open)
				case ')':
					open = max(open-1, 0)
				}
			}
			if first.kind == tEOF {
				first = t
				start = t.start
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
			if stmt == 0 && (l.is(first, "CREATE") && l.is(t, "BEGIN") ||
				l.is(first, "BEGIN") && prev.start == first.start && l.is(t, "NOT")) {
				compound = true
			}
			prev = t
		}
		if compound {
			b.edits = b.edits[:0]
			return nil
		}
		b.versioned, b.modeForced = l.versioned > versioned || inVersioned, false
		if first.kind != tEOF {
			b.nstmts++
			b.stmtRaw = raw
			b.cost = stmtCost{counted: true, tokens: tokens, depth: depth}
			if err := b.statement(raw, start, t.start, first); err != nil {
				return err
			}
			switch {
			case l.is(first, "USE"):
				// USE db: later statements resolve names against db. A USE
				// the server may skip, or one this does not read, leaves
				// the database unknown.
				u := lexer{sql: b.sql[:t.start], pos: first.end, mode: l.mode, inBang: b.inBang}
				name := u.next()
				if (name.kind == tWord || name.kind == tQuoted) && u.next().kind == tEOF && !b.versioned {
					b.db, b.dbUnknown = unquote(u.text(name), name.kind, u.mode), false
				} else {
					b.dbUnknown = true
				}
			case l.is(first, "SET") && b.namesSQLMode(start, t.start):
				b.modeSet = true
			}
		}
		if t.kind == tEOF {
			return nil
		}
		if b.modeSet && b.scan == scanNone {
			return b.afterModeSet(l, stmt+1)
		}
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

// statement plans sql[start:end), which starts with token first; raw
// (<= start) is where the statement's text begins, before comments.
func (b *builder) statement(raw, start, end int, first token) error {
	text := b.sql[start:end]
	mode := b.env.Mode
	if len(b.calls) > 0 {
		if w := b.sql[first.start:first.end]; sqltext.EqualFold(w, "CREATE") || sqltext.EqualFold(w, "ALTER") {
			// DDL: a DEFAULT NEXTVAL(s) names a MariaDB native sequence,
			// which the server evaluates per row; a proxy tag cannot be.
			return nil
		}
		for _, c := range b.calls {
			b.noteCall(c)
		}
	}
	if sqltext.EqualFold(b.sql[first.start:first.end], "SET") {
		if inner, innerFirst, setsMode, ok := b.setStatement(start, end); ok {
			// MariaDB's SET STATEMENT var=value[, ...] FOR <statement>:
			// plan the statement, in place.
			if len(b.calls) > 0 && b.calls[0].start < inner {
				return errorf(CodeNotSupported, "%s in the variable list of SET STATEMENT is not supported", b.sql[b.calls[0].start:b.calls[0].end])
			}
			b.modeForced = setsMode
			return b.statement(inner, inner, end, innerFirst)
		}
	}
	if sqltext.EqualFold(b.sql[first.start:first.end], "LOAD") {
		if handled, err := b.loadStatement(start, end); handled {
			return err
		}
	}
	if sqltext.EqualFold(b.sql[first.start:first.end], "PREPARE") || sqltext.EqualFold(b.sql[first.start:first.end], "EXECUTE") {
		if err := b.dynamicStatement(start, end); err != nil {
			return err
		}
	}
	var rule Rule
	var hasRule bool
	var db, table string
	var err error
	if f := b.first; f.ok && start == f.start && raw == 0 && b.scan == scanNone && b.db == b.env.DB && !b.dbUnknown {
		// What insertRule would find again: the same words, read in the
		// same mode from the same byte, looked up in the same rules.
		rule, hasRule, db, table = f.rule, true, f.db, f.table
	} else {
		if rule, hasRule, db, table, err = b.insertRule(text, mode, false); err != nil {
			return err
		}
	}
	if b.versioned {
		// The server may or may not run a versioned comment: the statement
		// must not touch a rule table in either reading.
		name, col := qualify(db, table), rule.Column
		if !hasRule {
			if r, ok, d, t, err := b.insertRule(b.sql[raw:end], mode, true); err != nil {
				return err
			} else if ok {
				hasRule, name, col = true, qualify(d, t), r.Column
			}
		}
		if hasRule {
			return errorf(CodeNotSupported, "this statement on %s has an executable comment that not every server runs "+
				"(/*!NNNNN with a version from 50700, /*!NNNNNN, /*M!...): the proxy cannot tell what the server will read, "+
				"so it cannot fill the key column %s; use /*! ... */ without a version or a version below 50700, or leave the comment out", name, col)
		}
	}
	if len(b.calls) == 0 && !hasRule {
		return nil
	}
	if b.scan != scanNone {
		return b.refuse(hasRule, qualify(db, table), rule)
	}
	if b.modeForced {
		return errorf(CodeNotSupported, "SET STATEMENT sql_mode=... FOR a statement the proxy rewrites is not supported: "+
			"it plans with the session's sql_mode; set the session's sql_mode first (SET sql_mode=...)")
	}
	for _, c := range b.calls {
		if c.param {
			return errorf(CodeNotSupported, "%s(?) with the sequence name as a parameter is not supported; write the name in the statement", c.function)
		}
		if c.function == Last {
			return errorf(CodeNotSupported, "%s is only answered in a SELECT of sequence calls alone, e.g. SELECT LASTVAL('%s')", b.sql[c.start:c.end], c.tag)
		}
		if c.function == Set {
			return errorf(CodeNotSupported, "%s is only answered in a SELECT of sequence calls alone, e.g. SELECT SETVAL('%s', 1000)", b.sql[c.start:c.end], c.tag)
		}
		if c.function == Decode {
			return errorf(CodeNotSupported, "%s is only answered as a statement of its own: SELECT LEAFPROXY_DECODE('%s', id)", b.sql[c.start:c.end], c.tag)
		}
		if c.block {
			return errorf(CodeNotSupported, "%s (a block of IDs) is only answered in a SELECT of sequence calls alone, e.g. SELECT NEXTVAL('%s', 100); "+
				"where a value goes into a row, use NEXTVAL('%s'): one fresh ID per row", b.sql[c.start:c.end], c.tag, c.tag)
		}
	}

	if hasRule && end-start > bigRows {
		// A many-row INSERT: its rows cost memory on either path.
		if err := b.charge.addRows(b.env, rowsMemory(b.sql[start:end])); err != nil {
			return err
		}
	}
	if hasRule && len(b.calls) == 0 && !b.noFast && b.fastInsert(start, end, rule, db, table) {
		b.fastHits++
		return nil
	}

	// What the parser may cost is bounded (parse.go): deeper nesting than
	// Limits.MaxDepth is refused, the memory is reserved from the shared
	// budget, and a parser that read a large text is not pooled.
	tokens, err := b.parseCost(start, end, hasRule, qualify(db, table), rule)
	if err != nil {
		return err
	}
	if err := b.charge.parse(b.env, parseMemory(tokens, len(text))); err != nil {
		return err
	}

	// The parser rejects NEXTVAL('tag'): parse a copy in which every call
	// is a same-length integer literal, so offsets stay valid.
	src := text
	if len(b.calls) > 0 {
		buf := []byte(text)
		for _, c := range b.calls {
			s, e := c.start-start, c.end-start
			buf[s] = '1'
			for i := s + 1; i < e; i++ {
				buf[i] = ' '
			}
		}
		src = string(buf)
	}
	p := parsers.Get().(*parser.Parser)
	broken := false
	defer func() {
		if !broken && tokens <= poolTokens {
			parsers.Put(p)
		}
	}()
	p.SetSQLMode(mode.parserMode())
	// MariaDB's INSERT / REPLACE ... RETURNING list: the parser reads the
	// text before RETURNING (a prefix: offsets stay valid); the list goes
	// to the server untouched.
	cut := len(text)
	var stmts []ast.StmtNode
	parsed := false
	if sqltext.EqualFold(b.sql[first.start:first.end], "INSERT") || sqltext.EqualFold(b.sql[first.start:first.end], "REPLACE") {
		if at, inBang := returningAt(text, mode); at >= 0 {
			parsed = true
			prefix := src[:at]
			if inBang {
				prefix += "*/" // RETURNING inside /*! ... */: close the comment
			}
			if stmts, err = parse(p, prefix, &broken); err == nil && len(stmts) == 1 {
				cut = at
			} else if all, errAll := parse(p, src, &broken); errAll == nil && len(all) == 1 {
				// MySQL, where RETURNING is not reserved: a column named
				// returning (MariaDB rejects this text).
				stmts, err = all, nil
			}
		}
	}
	if !parsed {
		stmts, err = parse(p, src, &broken)
	}
	if err != nil || len(stmts) != 1 {
		if err == nil {
			err = errorf(CodeNotSupported, "want one statement")
		}
		var e *Error
		if hasRule {
			e = errorf(CodeNotSupported, "cannot read this statement on %s to fill its key column %s (%v); write it in a form the proxy understands or give the key explicitly", qualify(db, table), rule.Column, firstLine(err))
		} else {
			e = errorf(CodeNotSupported, "cannot read the statement around %s (%v)", b.sql[b.calls[0].start:b.calls[0].end], firstLine(err))
		}
		e.unread = src
		return e
	}
	for _, c := range b.calls {
		if c.start >= start+cut {
			return errorf(CodeNotSupported, "%s in a RETURNING list is not supported: it would be evaluated per row, and the proxy can only splice values; "+
				"return the key column instead, or use %s in VALUES / SET", b.sql[c.start:c.end], b.sql[c.start:c.end])
		}
	}
	if ins, ok := stmts[0].(*ast.InsertStmt); ok && ins.Select != nil && (hasRule || len(b.calls) > 0) {
		if b.scan != scanNone {
			return b.refuse(hasRule, qualify(db, table), rule)
		}
		return b.numberInsertSelect(start, text[:cut], ins, rule, hasRule, db, table)
	}
	if up, ok := stmts[0].(*ast.UpdateStmt); ok && len(b.calls) > 0 {
		return b.numberUpdate(start, text[:cut], up)
	}
	s := stmtPlan{builder: b, start: start, text: text[:cut], placed: make([]bool, len(b.calls)), first: len(b.edits)}
	s.placeCalls(stmts[0])
	if hasRule {
		ins, ok := stmts[0].(*ast.InsertStmt)
		if !ok {
			return errorf(CodeNotSupported, "cannot read this statement on %s as an INSERT", qualify(db, table))
		}
		before := len(b.edits)
		if err := s.fillKey(ins, rule, db, table); err != nil {
			return err
		}
		if len(b.edits) > before {
			b.addFilled(Filled{DB: db, Table: table, Column: rule.Column, Tag: rule.Tag})
		}
	}
	for i, c := range b.calls {
		if !s.placed[i] {
			return errorf(CodeNotSupported, "%s here would repeat one value for many rows or is evaluated where the proxy cannot give it a value; use it in INSERT ... VALUES / SET, UPDATE ... SET, or a SELECT without FROM", b.sql[c.start:c.end])
		}
		if s.consumed[i] {
			continue
		}
		s.builder.edits = append(s.builder.edits, edit{start: c.start, end: c.end, tag: s.builder.text(c.tag)})
	}
	s.wrapFirstKey()
	return nil
}
