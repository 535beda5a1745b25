package rewriter

import (
	"github.com/leafproxy/leafproxy/internal/sqltext"
	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// How one statement is planned, in the order statement takes the steps:
//
//   - byKeyword: statements whose first keyword asks for their own
//     reading (SET STATEMENT ... FOR, LOAD DATA, PREPARE / EXECUTE);
//   - target: the rule of the table an INSERT / REPLACE writes, if any,
//     and checkVersioned for executable comments that name it;
//   - checkCalls: sequence calls that are answered elsewhere or not at all;
//   - the fast path (fast.go), else parseStatement and planParsed.

// stmtTarget is the table a statement writes that has a rule.
type stmtTarget struct {
	rule      Rule
	hasRule   bool
	db, table string
}

// keywordStep is the step of statement for the statements whose first
// keyword is word: done says the statement is planned (with err), else
// statement goes on with the common steps.
type keywordStep struct {
	word string
	step func(b *builder, raw, start, end int) (done bool, err error)
}

// byKeyword is statement's table of first keywords that need a step of
// their own. (Filled by init: a step may plan a statement of its own.)
var byKeyword [4]keywordStep

func init() {
	byKeyword = [...]keywordStep{
		{"SET", (*builder).setStatementStep},
		{"LOAD", (*builder).loadStep},
		{"PREPARE", (*builder).dynamicStep},
		{"EXECUTE", (*builder).dynamicStep},
	}
}

// statement plans sql[start:end), which starts with token first; raw
// (<= start) is where the statement's text begins, before comments.
func (b *builder) statement(raw, start, end int, first token) error {
	word := b.sql[first.start:first.end]
	if len(b.calls) > 0 {
		if sqltext.EqualFold(word, "CREATE") || sqltext.EqualFold(word, "ALTER") {
			// DDL: a DEFAULT NEXTVAL(s) names a MariaDB native sequence,
			// which the server evaluates per row; a proxy tag cannot be.
			return nil
		}
		for _, c := range b.calls {
			b.noteCall(c)
		}
	}
	for i := range byKeyword {
		if sqltext.EqualFold(word, byKeyword[i].word) {
			if done, err := byKeyword[i].step(b, raw, start, end); done {
				return err
			}
			break
		}
	}
	tg, err := b.target(raw, start, end)
	if err != nil {
		return err
	}
	if err := b.checkVersioned(raw, end, tg); err != nil {
		return err
	}
	if len(b.calls) == 0 && !tg.hasRule {
		return nil
	}
	if b.scan != scanNone {
		return b.refuse(tg.hasRule, qualify(tg.db, tg.table), tg.rule)
	}
	if err := b.checkCalls(); err != nil {
		return err
	}
	if tg.hasRule && end-start > bigRows {
		// A many-row INSERT: its rows cost memory on either path.
		if err := b.charge.addRows(b.env, rowsMemory(b.sql[start:end])); err != nil {
			return err
		}
	}
	if tg.hasRule && len(b.calls) == 0 && !b.noFast && b.fastInsert(start, end, tg.rule, tg.db, tg.table) {
		b.fastHits++
		return nil
	}
	return b.parseStatement(start, end, first, &tg)
}

// setStatementStep: MariaDB's SET STATEMENT var=value[, ...] FOR
// <statement> plans the statement, in place.
func (b *builder) setStatementStep(_, start, end int) (bool, error) {
	inner, innerFirst, setsMode, ok := b.setStatement(start, end)
	if !ok {
		return false, nil
	}
	if len(b.calls) > 0 && b.calls[0].start < inner {
		return true, errorf(CodeNotSupported, "%s in the variable list of SET STATEMENT is not supported", b.sql[b.calls[0].start:b.calls[0].end])
	}
	b.modeForced = setsMode
	return true, b.statement(inner, inner, end, innerFirst)
}

// loadStep: LOAD DATA into a rule table (load.go).
func (b *builder) loadStep(_, start, end int) (bool, error) {
	return b.loadStatement(start, end)
}

// dynamicStep: PREPARE ... FROM and EXECUTE IMMEDIATE (dynamic.go).
func (b *builder) dynamicStep(_, start, end int) (bool, error) {
	err := b.dynamicStatement(start, end)
	return err != nil, err
}

// target finds the rule of the table the statement sql[start:end)
// writes, if it is an INSERT / REPLACE on one.
func (b *builder) target(raw, start, end int) (tg stmtTarget, err error) {
	if f := b.first; f.ok && start == f.start && raw == 0 && b.scan == scanNone && b.db == b.env.DB && !b.dbUnknown {
		// What insertRule would find again: the same words, read in the
		// same mode from the same byte, looked up in the same rules.
		tg = stmtTarget{rule: f.rule, hasRule: true, db: f.db, table: f.table}
	} else {
		tg.rule, tg.hasRule, tg.db, tg.table, err = b.insertRule(b.sql[start:end], b.env.Mode, false)
		if err != nil || !tg.hasRule {
			return tg, err
		}
	}
	tg.rule, tg.hasRule, err = b.resolve(tg.db, tg.table, tg.rule)
	return tg, err
}

// checkVersioned refuses a statement with an executable comment that not
// every server runs (b.versioned) when it touches a rule table in either
// reading: the server may or may not run the comment.
func (b *builder) checkVersioned(raw, end int, tg stmtTarget) error {
	if !b.versioned {
		return nil
	}
	name, col := qualify(tg.db, tg.table), tg.rule.Column
	if !tg.hasRule {
		if r, ok, d, t, err := b.insertRule(b.sql[raw:end], b.env.Mode, true); err != nil {
			return err
		} else if ok {
			tg.hasRule, name, col = true, qualify(d, t), r.Column
		}
	}
	if tg.hasRule {
		return errorf(CodeNotSupported, "this statement on %s has an executable comment that not every server runs "+
			"(/*!NNNNN with a version from 50700, /*!NNNNNN, /*M!...): the proxy cannot tell what the server will read, "+
			"so it cannot fill the key column %s; use /*! ... */ without a version or a version below 50700, or leave the comment out", name, col)
	}
	return nil
}

// checkCalls refuses a statement to plan under SET STATEMENT sql_mode,
// and the sequence calls that are answered only elsewhere or not at all.
func (b *builder) checkCalls() error {
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
	return nil
}

// parseStatement plans sql[start:end) with the parser. What the parser may
// cost is bounded (parse.go): deeper nesting than Limits.MaxDepth is
// refused, the memory is reserved from the shared budget, and a parser
// that read a large text is not pooled.
func (b *builder) parseStatement(start, end int, first token, tg *stmtTarget) error {
	text := b.sql[start:end]
	tokens, err := b.parseCost(start, end, tg.hasRule, qualify(tg.db, tg.table), tg.rule)
	if err != nil {
		return err
	}
	if err := b.charge.parse(b.env, parseMemory(tokens, len(text))); err != nil {
		return err
	}
	src := b.masked(start, text)
	p := parsers.Get().(*parser.Parser)
	broken := false
	defer func() {
		if !broken && tokens <= poolTokens {
			parsers.Put(p)
		}
	}()
	p.SetSQLMode(b.env.Mode.parserMode())
	// The statements stay p's until it goes back to the pool: they are
	// planned here.
	stmts, cut, err := b.parseText(p, &broken, src, text, first)
	if err != nil || len(stmts) != 1 {
		return b.unreadable(err, src, tg)
	}
	for _, c := range b.calls {
		if c.start >= start+cut {
			return errorf(CodeNotSupported, "%s in a RETURNING list is not supported: it would be evaluated per row, and the proxy can only splice values; "+
				"return the key column instead, or use %s in VALUES / SET", b.sql[c.start:c.end], b.sql[c.start:c.end])
		}
	}
	return b.planParsed(start, text[:cut], stmts[0], tg)
}

// masked is text (which begins at start) as the parser reads it: the
// parser rejects NEXTVAL('tag'), so every call is a same-length integer
// literal, and offsets stay valid.
func (b *builder) masked(start int, text string) string {
	if len(b.calls) == 0 {
		return text
	}
	buf := []byte(text)
	for _, c := range b.calls {
		s, e := c.start-start, c.end-start
		buf[s] = '1'
		for i := s + 1; i < e; i++ {
			buf[i] = ' '
		}
	}
	return string(buf)
}

// parseText parses src, the masked text of a statement that starts with
// token first. MariaDB's INSERT / REPLACE ... RETURNING list: the parser
// reads the text before RETURNING (a prefix: offsets stay valid), cut is
// where it ends; the list goes to the server untouched.
func (b *builder) parseText(p *parser.Parser, broken *bool, src, text string, first token) (stmts []ast.StmtNode, cut int, err error) {
	cut = len(text)
	word := b.sql[first.start:first.end]
	if !sqltext.EqualFold(word, "INSERT") && !sqltext.EqualFold(word, "REPLACE") {
		stmts, err = parse(p, src, broken)
		return stmts, cut, err
	}
	at, inBang := returningAt(text, b.env.Mode)
	if at < 0 {
		stmts, err = parse(p, src, broken)
		return stmts, cut, err
	}
	prefix := src[:at]
	if inBang {
		prefix += "*/" // RETURNING inside /*! ... */: close the comment
	}
	if stmts, err = parse(p, prefix, broken); err == nil && len(stmts) == 1 {
		cut = at
	} else if all, errAll := parse(p, src, broken); errAll == nil && len(all) == 1 {
		// MySQL, where RETURNING is not reserved: a column named
		// returning (MariaDB rejects this text).
		stmts, err = all, nil
	}
	return stmts, cut, err
}

// unreadable is the error for a statement the parser did not read as one
// statement (err nil: it read several, or none).
func (b *builder) unreadable(err error, src string, tg *stmtTarget) error {
	if err == nil {
		err = errorf(CodeNotSupported, "want one statement")
	}
	var e *Error
	if tg.hasRule {
		e = errorf(CodeNotSupported, "cannot read this statement on %s to fill its key column %s (%v); write it in a form the proxy understands or give the key explicitly", qualify(tg.db, tg.table), tg.rule.Column, firstLine(err))
	} else {
		e = errorf(CodeNotSupported, "cannot read the statement around %s (%v)", b.sql[b.calls[0].start:b.calls[0].end], firstLine(err))
	}
	e.unread = src
	return e
}

// planParsed plans the statement the parser read, stmt, whose text (up to
// a RETURNING list) begins at start: INSERT ... SELECT and UPDATE with
// sequence calls are numbered (numbered_plan.go, numbered_update.go);
// otherwise the calls are placed and the key filled (place.go, insert.go).
func (b *builder) planParsed(start int, text string, stmt ast.StmtNode, tg *stmtTarget) error {
	if ins, ok := stmt.(*ast.InsertStmt); ok && ins.Select != nil && (tg.hasRule || len(b.calls) > 0) {
		if b.scan != scanNone {
			return b.refuse(tg.hasRule, qualify(tg.db, tg.table), tg.rule)
		}
		return b.numberInsertSelect(start, text, ins, tg.rule, tg.hasRule, tg.db, tg.table)
	}
	if up, ok := stmt.(*ast.UpdateStmt); ok && len(b.calls) > 0 {
		return b.numberUpdate(start, text, up)
	}
	s := stmtPlan{builder: b, start: start, text: text, placed: make([]bool, len(b.calls)), first: len(b.edits)}
	s.placeCalls(stmt)
	if tg.hasRule {
		ins, ok := stmt.(*ast.InsertStmt)
		if !ok {
			return errorf(CodeNotSupported, "cannot read this statement on %s as an INSERT", qualify(tg.db, tg.table))
		}
		before := len(b.edits)
		if err := s.fillKey(ins, tg.rule, tg.db, tg.table); err != nil {
			return err
		}
		if len(b.edits) > before {
			b.addFilled(Filled{DB: tg.db, Table: tg.table, Column: tg.rule.Column, Tag: tg.rule.Tag})
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
