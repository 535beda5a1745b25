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
// generated key (see Render).
const LoadPrelude = "@__leaf_f := NULL"

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
// other errors (with a nil plan and no why).
func (b *builder) readLoad(l *lexer, rule Rule, db, table string) (p *Load, why string) {
	f := loadfile.Format{FieldTerm: "\t", Enclosed: -1, Escaped: '\\', LineTerm: "\n"}
	if b.env.Mode.NoBackslashEscapes {
		f.Escaped = -1 // the default escape is off unless ESCAPED BY is given
	}
	p = &Load{Filled: Filled{DB: strings.Clone(db), Table: strings.Clone(table), Column: rule.Column, Tag: rule.Tag}}
	last := l.pos // the end of the last token read
	t := l.next()
	next := func() token {
		last = t.end
		t = l.next()
		return t
	}
	str := func(clause string) (string, string) {
		w := next()
		v, ok := "", false
		if x := l.text(w); w.kind == tWord && (x == "X" || x == "x" || x == "B" || x == "b") && w.end < len(l.sql) && l.sql[w.end] == '\'' {
			body := l.text(next()) // X'2c', B'0101'
			if t.kind == tString && len(body) >= 2 && body[len(body)-1] == '\'' {
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
	byteOf := func(clause, v string) (int, string) {
		switch len(v) {
		case 0:
			return -1, ""
		case 1:
			return int(v[0]), ""
		}
		return 0, clause + " must be one character or empty (the server's error 1083)"
	}
	if l.is(t, "PARTITION") {
		if !l.isPunct(next(), '(') {
			return nil, "cannot read its PARTITION clause"
		}
		for next(); !l.isPunct(t, ')'); next() {
			if t.kind == tEOF {
				return nil, "cannot read its PARTITION clause"
			}
		}
		next()
	}
	if l.is(t, "CHARACTER") || l.is(t, "CHAR") || l.is(t, "CHARSET") {
		if !l.is(t, "CHARSET") && !l.is(next(), "SET") {
			return nil, "cannot read its CHARACTER SET clause"
		}
		switch cs := next(); {
		case l.is(cs, "DEFAULT"):
		case cs.kind == tWord || cs.kind == tQuoted || cs.kind == tString:
			p.Charset = strings.ToLower(unquote(l.text(cs), cs.kind, l.mode))
		default:
			return nil, "cannot read its CHARACTER SET clause"
		}
		next()
	}
	if l.is(t, "ROWS") {
		return nil, "ROWS IDENTIFIED BY is not supported"
	}
	if l.is(t, "FIELDS") || l.is(t, "COLUMNS") {
		n := 0
		for next(); ; n++ {
			var v, why string
			switch {
			case l.is(t, "TERMINATED") && l.is(next(), "BY"):
				if f.FieldTerm, why = str("FIELDS TERMINATED BY"); why != "" {
					return nil, why
				}
			case l.is(t, "OPTIONALLY") && l.is(next(), "ENCLOSED") && l.is(next(), "BY"),
				l.is(t, "ENCLOSED") && l.is(next(), "BY"):
				if v, why = str("FIELDS ENCLOSED BY"); why == "" {
					f.Enclosed, why = byteOf("FIELDS ENCLOSED BY", v)
				}
			case l.is(t, "ESCAPED") && l.is(next(), "BY"):
				if v, why = str("FIELDS ESCAPED BY"); why == "" {
					f.Escaped, why = byteOf("FIELDS ESCAPED BY", v)
				}
			default:
				if n == 0 {
					return nil, "cannot read its FIELDS clause"
				}
				goto lines
			}
			if why != "" {
				return nil, why
			}
			next()
		}
	}
lines:
	if l.is(t, "LINES") {
		n := 0
		for next(); ; n++ {
			var why string
			switch {
			case l.is(t, "TERMINATED") && l.is(next(), "BY"):
				f.LineTerm, why = str("LINES TERMINATED BY")
			case l.is(t, "STARTING") && l.is(next(), "BY"):
				f.LineStart, why = str("LINES STARTING BY")
			default:
				if n == 0 {
					return nil, "cannot read its LINES clause"
				}
				goto ignore
			}
			if why != "" {
				return nil, why
			}
			next()
		}
	}
ignore:
	if l.is(t, "IGNORE") {
		n := next()
		v, err := strconv.ParseUint(l.text(n), 10, 64)
		if n.kind != tNumber || err != nil || !(l.is(next(), "LINES") || l.is(t, "ROWS")) {
			return nil, "cannot read its IGNORE n LINES clause"
		}
		f.Ignore = v
		next()
	}
	// The column list.
	var items []loadItem
	listAt, listOpen, listClose := last, -1, -1
	if l.isPunct(t, '(') {
		listOpen = t.start
		for next(); !l.isPunct(t, ')'); {
			it := loadItem{start: t.start}
			switch t.kind {
			case tVar:
				next()
			case tWord, tQuoted:
				col := unquote(l.text(t), t.kind, l.mode)
				for l.isPunct(next(), '.') { // db.table.column: the last part names it
					if n := next(); n.kind != tWord && n.kind != tQuoted {
						return nil, "cannot read its column list"
					} else {
						col = unquote(l.text(n), n.kind, l.mode)
					}
				}
				it.key = strings.EqualFold(col, rule.Column)
			default:
				return nil, "cannot read its column list"
			}
			it.end = last
			items = append(items, it)
			if l.isPunct(t, ',') {
				next()
			} else if !l.isPunct(t, ')') {
				return nil, "cannot read its column list"
			}
		}
		listClose = t.end
		next()
	}
	// The SET list.
	setAt, hasSet := -1, false
	if l.is(t, "SET") {
		hasSet, setAt = true, t.end
		for next(); ; {
			col, ok := "", false
			for t.kind == tWord || t.kind == tQuoted {
				col, ok = unquote(l.text(t), t.kind, l.mode), true
				if !l.isPunct(next(), '.') {
					break
				}
				next()
			}
			if !ok || !(l.isPunct(t, '=') || l.isPunct(t, ':') && l.isPunct(next(), '=')) {
				return nil, "cannot read its SET list"
			}
			if strings.EqualFold(col, rule.Column) {
				return nil, fmt.Sprintf("its SET list assigns the key column %s; leave the key out (the proxy fills it) or read it from the file in the column list", rule.Column)
			}
			depth := 0
			for next(); t.kind != tEOF && !(depth == 0 && l.isPunct(t, ',')); next() {
				switch {
				case l.isPunct(t, '('):
					depth++
				case l.isPunct(t, ')'):
					depth--
				}
			}
			if t.kind == tEOF {
				break
			}
			next()
		}
	}
	if t.kind != tEOF {
		return nil, "cannot read it after " + strconv.Quote(b.sql[last-min(last, 20):last])
	}
	end := last

	// Which field holds the key, if any.
	keys := 0
	for _, it := range items {
		if it.key {
			keys++
		}
	}
	if keys > 1 {
		b.loadErr = errorf(CodeFieldTwice, "Column '%s' specified twice (LOAD DATA into %s)", rule.Column, qualify(db, table))
		return nil, ""
	}
	if len(items) > 0 {
		p.edits = append(p.edits, loadEdit{start: listOpen + 1, end: listOpen + 1, text: "@__leaf_g, "})
		for _, it := range items {
			if it.key {
				p.edits = append(p.edits, loadEdit{start: it.start, end: it.end, text: "@__leaf_v"})
			}
		}
		f.Fields = len(items)
	} else {
		// No column list, or (): the file holds every visible column.
		if b.env.Columns == nil {
			return nil, "it has no column list and the proxy does not know the table's columns; list them"
		}
		cols, err := b.env.Columns(db, table)
		if err != nil {
			e := errorf(CodeUnknown, "reading the columns of %s to fill %s: %v", qualify(db, table), rule.Column, err)
			e.cause = err
			b.loadErr = e
			return nil, ""
		}
		var list strings.Builder
		list.WriteString("(@__leaf_g")
		for _, c := range cols {
			list.WriteString(", ")
			if strings.EqualFold(c, rule.Column) {
				keys = 1
				list.WriteString("@__leaf_v")
			} else {
				list.WriteString(quoteIdent(c))
			}
		}
		list.WriteString(")")
		if listOpen >= 0 {
			p.edits = append(p.edits, loadEdit{start: listOpen, end: listClose, text: list.String()})
		} else {
			p.edits = append(p.edits, loadEdit{start: listAt, end: listAt, text: " " + list.String()})
		}
		f.Fields = len(cols)
	}
	if why := f.Check(); why != "" {
		return nil, why
	}
	// The key: the file's value where AUTO_INCREMENT would keep it, else
	// the generated one. The file's value goes in first, so that the
	// statement's own SET items see it as they would; the decision comes
	// last.
	key := quoteIdent(rule.Column)
	// The generated key: a "0" (the transformer's mark for a key it could
	// not draw) fails the statement; the first one becomes LAST_INSERT_ID().
	gen := "IF(@__leaf_g = '0', (SELECT 1 UNION ALL SELECT 2), IF(@__leaf_f IS NULL, LAST_INSERT_ID(@__leaf_f := @__leaf_g), @__leaf_g))"
	first, final := "", key+" = "+gen
	if keys == 1 {
		first = key + " = IFNULL(@__leaf_v, 0)"
		// NO_AUTO_VALUE_ON_ZERO keeps a 0 from the file, except that
		// MariaDB (10.11) generates for 0 and empty key fields when the
		// statement has a SET clause of its own: measured, and matched.
		if b.env.Mode.NoAutoValueOnZero && !hasSet {
			final = key + " = IF(@__leaf_v IS NULL, " + gen + ", " + key + ")"
		} else {
			final = key + " = IF(" + key + " = 0, " + gen + ", " + key + ")"
		}
	}
	switch {
	case hasSet && first != "":
		p.edits = append(p.edits, loadEdit{start: setAt, end: setAt, text: " " + first + ","})
		p.edits = append(p.edits, loadEdit{start: end, end: end, text: ", " + final})
	case hasSet:
		p.edits = append(p.edits, loadEdit{start: end, end: end, text: ", " + final})
	case first != "":
		p.edits = append(p.edits, loadEdit{start: end, end: end, text: " SET " + first + ", " + final})
	default:
		p.edits = append(p.edits, loadEdit{start: end, end: end, text: " SET " + final})
	}
	f.FieldTerm, f.LineTerm, f.LineStart = strings.Clone(f.FieldTerm), strings.Clone(f.LineTerm), strings.Clone(f.LineStart)
	p.Format = f
	return p, ""
}
