package rewriter

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/leafproxy/leafproxy/rewriter/loadfile"
)

// Load is the plan of a LOAD DATA LOCAL INFILE into a rule table
// (Plan.Kind LoadData; docs/loaddata.md). The statement is rendered so that
// each record of the file carries one more first field, its generated
// key: the column list gets @__leaf_g first, and the SET list puts it in
// the key column (or, where the file gives the key, keeps a value that
// AUTO_INCREMENT would keep). The caller runs LoadPrelude, sends Render's
// text, and streams the file through a loadfile.Transformer made from
// Format, which writes the keys.
type Load struct {
	// Filled is the table, its key column and tag.
	Filled Filled
	// Format is how the statement reads the file; Format.Charset is the
	// caller's to set from Charset.
	Format loadfile.Format
	// Charset is the CHARACTER SET clause's name, lower case; "" when
	// there is none (or DEFAULT): the session's character_set_database.
	Charset string
	edits   []loadEdit
}

type loadEdit struct {
	start, end int
	text       string
}

// Render appends the statement to send instead of sql, the text the plan
// was made from. The session's @__leaf_f must be NULL when it runs (and
// exist before the server reads the statement: a variable the statement
// reads before it exists stays NULL for the whole statement, measured on
// MariaDB 10.11), so that the first generated key becomes
// LAST_INSERT_ID().
func (l *Load) Render(dst []byte, sql string) []byte {
	last := 0
	for _, e := range l.edits {
		dst = append(append(dst, sql[last:e.start]...), e.text...)
		last = e.end
	}
	return append(dst, sql[last:]...)
}

// LoadPrelude is what a session must run before a rendered LOAD DATA:
// it creates and clears the flag the statement sets at its first
// generated key (see Render), and keeps the session's LAST_INSERT_ID()
// from before the statement in @__leaf_l for LoadRestore.
const LoadPrelude = "@__leaf_f := NULL, @__leaf_l := LAST_INSERT_ID()"

// LoadRestore is what a session runs after a rendered LOAD DATA that
// wrote no row (OK, 0 rows affected: every record skipped by IGNORE or
// the file empty): its first generated key was made LAST_INSERT_ID() as
// the record was read, but MariaDB leaves LAST_INSERT_ID() alone when no
// row with a generated key was written. A DO reads no table, keeps the
// statement's warnings, and leaves ROW_COUNT() at the 0 it was.
const LoadRestore = "DO LAST_INSERT_ID(IF(@__leaf_f IS NULL, LAST_INSERT_ID(), @__leaf_l))"

// loadStatement plans sql[start:end) when it is a LOAD DATA / LOAD XML
// into a rule table (handled); anything else is left to the caller.
func (b *builder) loadStatement(start, end int) (handled bool, err error) {
	l := lexer{sql: b.sql[:end], pos: start, mode: b.env.Mode, inBang: b.inBang}
	h, ok := l.loadHead()
	if !ok {
		return false, nil // LOAD INDEX INTO CACHE, or a syntax error for the server
	}
	xml, local, db, table := h.xml, h.local, h.db, h.table
	if db == "" {
		if b.dbUnknown && b.env.Rules.anyDBHas(table) {
			return true, errorf(CodeNotSupported, "cannot tell which database %s is in: an earlier USE in the same text "+
				"is one the proxy cannot follow; send the USE on its own or qualify the table as db.%s", table, table)
		}
		db = b.db
	}
	rule, ok := b.env.Rules.Lookup(db, table)
	if !ok {
		return false, nil
	}
	if rule, ok, err = b.resolve(db, table, rule); err != nil || !ok {
		return err != nil, err
	}
	name := qualify(db, table)
	what := "DATA"
	if xml {
		what = "XML"
	}
	refuse := func(format string, a ...any) (bool, error) {
		return true, errorf(CodeNotSupported, "LOAD %s into %s, whose key column %s the proxy fills: %s", what, name, rule.Column, fmt.Sprintf(format, a...))
	}
	switch {
	case xml:
		return refuse("LOAD XML is not supported; load the rows with LOAD DATA LOCAL INFILE or INSERT")
	case !local:
		return refuse("the file is read by the server (LOAD DATA INFILE without LOCAL), so the proxy cannot give its rows keys; use LOAD DATA LOCAL INFILE, which sends the file through the proxy")
	case b.prepared:
		return refuse("it cannot be prepared; send it as a text statement")
	case b.scan != scanNone || !b.onlyStatement(end):
		return refuse("it must be the only statement of its text (its file is keyed as it streams); send it on its own")
	case b.versioned || hasBang(b.sql):
		return refuse("executable comments (/*! ... */) are not supported in it; leave them out")
	case b.modeForced:
		return refuse("SET STATEMENT sql_mode=... FOR it is not supported: the proxy reads the file with the session's sql_mode; set sql_mode first")
	case len(b.calls) > 0:
		return refuse("%s in it would be one value for every row; leave it out (the key is filled)", b.sql[b.calls[0].start:b.calls[0].end])
	}
	p, why := b.readLoad(&l, rule, db, table)
	if why != "" {
		return refuse("%s", why)
	}
	if p == nil {
		return true, b.loadErr
	}
	b.load = p
	return true, nil
}

// onlyStatement reports whether the statement ending at end is the text's
// only one (runFrom recorded where it began).
func (b *builder) onlyStatement(end int) bool {
	for _, part := range [2]string{b.sql[:b.stmtRaw], b.sql[end:]} {
		l := lexer{sql: part, mode: b.env.Mode}
		for t := l.next(); t.kind != tEOF; t = l.next() {
			if !l.isPunct(t, ';') {
				return false
			}
		}
	}
	return true
}

// loadItem is an entry of LOAD DATA's column list.
type loadItem struct {
	start, end int
	key        bool // the rule's key column
}

// readLoad reads the clauses after the table name (MariaDB's grammar:
// [PARTITION (...)] [CHARACTER SET cs] [{FIELDS|COLUMNS} ...] [LINES ...]
// [IGNORE n {LINES|ROWS}] [(col_or_var, ...)] [SET col = expr, ...]) and
// builds the plan. why says what it cannot fill; b.loadErr is set for
// other errors (with a nil plan and no why). Each clause has a reader of
// its own (loadReader's methods), in the grammar's order.
func (b *builder) readLoad(l *lexer, rule Rule, db, table string) (p *Load, why string) {
	f := loadfile.Format{FieldTerm: "\t", Enclosed: -1, Escaped: '\\', LineTerm: "\n"}
	if b.env.Mode.NoBackslashEscapes {
		f.Escaped = -1 // the default escape is off unless ESCAPED BY is given
	}
	p = &Load{Filled: Filled{DB: strings.Clone(db), Table: strings.Clone(table), Column: rule.Column, Tag: rule.Tag}}
	r := loadReader{l: l, last: l.pos}
	r.t = l.next()
	if why = r.partition(); why != "" {
		return nil, why
	}
	if why = r.charset(p); why != "" {
		return nil, why
	}
	if l.is(r.t, "ROWS") {
		return nil, "ROWS IDENTIFIED BY is not supported"
	}
	if why = r.fields(&f); why != "" {
		return nil, why
	}
	if why = r.lines(&f); why != "" {
		return nil, why
	}
	if why = r.ignore(&f); why != "" {
		return nil, why
	}
	list, why := r.columnList(rule)
	if why != "" {
		return nil, why
	}
	set, why := r.setList(rule)
	if why != "" {
		return nil, why
	}
	if r.t.kind != tEOF {
		return nil, "cannot read it after " + strconv.Quote(b.sql[r.last-min(r.last, 20):r.last])
	}
	end := r.last

	keys, why, err := b.loadColumns(p, &f, list, rule, db, table)
	if err != nil {
		b.loadErr = err
		return nil, ""
	}
	if why != "" {
		return nil, why
	}
	if why := f.Check(); why != "" {
		return nil, why
	}
	p.edits = loadKeyEdits(p.edits, rule.Column, keys == 1, set, end, b.env.Mode.NoAutoValueOnZero || rule.keepZero)
	f.FieldTerm, f.LineTerm, f.LineStart = strings.Clone(f.FieldTerm), strings.Clone(f.LineTerm), strings.Clone(f.LineStart)
	p.Format = f
	return p, ""
}

// loadReader reads LOAD DATA's clauses: t is the current token, last the
// end of the token before it.
type loadReader struct {
	l    *lexer
	t    token
	last int
}

// next moves on to the next token.
func (r *loadReader) next() token {
	r.last = r.t.end
	r.t = r.l.next()
	return r.t
}

// str reads the string after clause (a quoted string, X'2c' or B'0101').
func (r *loadReader) str(clause string) (string, string) {
	l := r.l
	w := r.next()
	v, ok := "", false
	if x := l.text(w); w.kind == tWord && (x == "X" || x == "x" || x == "B" || x == "b") && w.end < len(l.sql) && l.sql[w.end] == '\'' {
		body := l.text(r.next()) // X'2c', B'0101'
		if r.t.kind == tString && len(body) >= 2 && body[len(body)-1] == '\'' {
			v, ok = radixString(body[1:len(body)-1], x == "X" || x == "x")
		}
	} else {
		v, ok = l.textString(w)
	}
	if !ok {
		return "", "cannot read the string after " + clause
	}
	return v, ""
}

// byteOf is a one-character clause's value v as a byte, -1 when empty.
func byteOf(clause, v string) (int, string) {
	switch len(v) {
	case 0:
		return -1, ""
	case 1:
		return int(v[0]), ""
	}
	return 0, clause + " must be one character or empty (the server's error 1083)"
}

// partition skips PARTITION (...).
func (r *loadReader) partition() (why string) {
	l := r.l
	if !l.is(r.t, "PARTITION") {
		return ""
	}
	if !l.isPunct(r.next(), '(') {
		return "cannot read its PARTITION clause"
	}
	for r.next(); !l.isPunct(r.t, ')'); r.next() {
		if r.t.kind == tEOF {
			return "cannot read its PARTITION clause"
		}
	}
	r.next()
	return ""
}

// charset reads CHARACTER SET cs into p.Charset.
func (r *loadReader) charset(p *Load) (why string) {
	l := r.l
	if !l.is(r.t, "CHARACTER") && !l.is(r.t, "CHAR") && !l.is(r.t, "CHARSET") {
		return ""
	}
	if !l.is(r.t, "CHARSET") && !l.is(r.next(), "SET") {
		return "cannot read its CHARACTER SET clause"
	}
	switch cs := r.next(); {
	case l.is(cs, "DEFAULT"):
	case cs.kind == tWord || cs.kind == tQuoted || cs.kind == tString:
		p.Charset = strings.ToLower(unquote(l.text(cs), cs.kind, l.mode))
	default:
		return "cannot read its CHARACTER SET clause"
	}
	r.next()
	return ""
}

// fields reads {FIELDS|COLUMNS} [TERMINATED BY s] [[OPTIONALLY] ENCLOSED
// BY c] [ESCAPED BY c] (in any order) into f.
func (r *loadReader) fields(f *loadfile.Format) (why string) {
	l := r.l
	if !l.is(r.t, "FIELDS") && !l.is(r.t, "COLUMNS") {
		return ""
	}
	for n := 0; ; n++ {
		var v string
		switch r.next(); {
		case l.is(r.t, "TERMINATED") && l.is(r.next(), "BY"):
			f.FieldTerm, why = r.str("FIELDS TERMINATED BY")
		case l.is(r.t, "OPTIONALLY") && l.is(r.next(), "ENCLOSED") && l.is(r.next(), "BY"),
			l.is(r.t, "ENCLOSED") && l.is(r.next(), "BY"):
			if v, why = r.str("FIELDS ENCLOSED BY"); why == "" {
				f.Enclosed, why = byteOf("FIELDS ENCLOSED BY", v)
			}
		case l.is(r.t, "ESCAPED") && l.is(r.next(), "BY"):
			if v, why = r.str("FIELDS ESCAPED BY"); why == "" {
				f.Escaped, why = byteOf("FIELDS ESCAPED BY", v)
			}
		default:
			if n == 0 {
				return "cannot read its FIELDS clause"
			}
			return ""
		}
		if why != "" {
			return why
		}
	}
}

// lines reads LINES [TERMINATED BY s] [STARTING BY s] (in any order)
// into f.
func (r *loadReader) lines(f *loadfile.Format) (why string) {
	l := r.l
	if !l.is(r.t, "LINES") {
		return ""
	}
	for n := 0; ; n++ {
		switch r.next(); {
		case l.is(r.t, "TERMINATED") && l.is(r.next(), "BY"):
			f.LineTerm, why = r.str("LINES TERMINATED BY")
		case l.is(r.t, "STARTING") && l.is(r.next(), "BY"):
			f.LineStart, why = r.str("LINES STARTING BY")
		default:
			if n == 0 {
				return "cannot read its LINES clause"
			}
			return ""
		}
		if why != "" {
			return why
		}
	}
}

// ignore reads IGNORE n {LINES|ROWS} into f.
func (r *loadReader) ignore(f *loadfile.Format) (why string) {
	l := r.l
	if !l.is(r.t, "IGNORE") {
		return ""
	}
	n := r.next()
	v, err := strconv.ParseUint(l.text(n), 10, 64)
	if n.kind != tNumber || err != nil || !(l.is(r.next(), "LINES") || l.is(r.t, "ROWS")) {
		return "cannot read its IGNORE n LINES clause"
	}
	f.Ignore = v
	r.next()
	return ""
}
