package rewriter

import (
	"fmt"
	"strings"

	"github.com/leafproxy/leafproxy/internal/sqltext"
	"github.com/leafproxy/leafproxy/rewriter/loadfile"
)

// loadList is LOAD DATA's column list: at is where it would go (the end
// of the clauses before it), open and close its parentheses (-1 when
// there is none).
type loadList struct {
	items           []loadItem
	at, open, close int
}

// columnList reads the column list, (col_or_var, ...), if any.
func (r *loadReader) columnList(rule Rule) (list loadList, why string) {
	l := r.l
	list = loadList{at: r.last, open: -1, close: -1}
	if !l.isPunct(r.t, '(') {
		return list, ""
	}
	list.open = r.t.start
	for r.next(); !l.isPunct(r.t, ')'); {
		it := loadItem{start: r.t.start}
		switch t := r.t; t.kind {
		case tVar:
			r.next()
		case tWord, tQuoted:
			col := unquote(l.text(t), t.kind, l.mode)
			for l.isPunct(r.next(), '.') { // db.table.column: the last part names it
				if n := r.next(); n.kind != tWord && n.kind != tQuoted {
					return list, "cannot read its column list"
				} else {
					col = unquote(l.text(n), n.kind, l.mode)
				}
			}
			it.key = strings.EqualFold(col, rule.Column)
		default:
			return list, "cannot read its column list"
		}
		it.end = r.last
		list.items = append(list.items, it)
		if l.isPunct(r.t, ',') {
			r.next()
		} else if !l.isPunct(r.t, ')') {
			return list, "cannot read its column list"
		}
	}
	list.close = r.t.end
	r.next()
	return list, ""
}

// loadSet is where LOAD DATA's SET list begins (after the word), -1 when
// there is none.
type loadSet struct{ at int }

// setList reads the SET list, SET col = expr, ..., if any: it must not
// assign the key column.
func (r *loadReader) setList(rule Rule) (set loadSet, why string) {
	l := r.l
	if !l.is(r.t, "SET") {
		return loadSet{at: -1}, ""
	}
	set.at = r.t.end
	for r.next(); ; {
		col, ok := "", false
		for r.t.kind == tWord || r.t.kind == tQuoted {
			col, ok = unquote(l.text(r.t), r.t.kind, l.mode), true
			if !l.isPunct(r.next(), '.') {
				break
			}
			r.next()
		}
		if !ok || !(l.isPunct(r.t, '=') || l.isPunct(r.t, ':') && l.isPunct(r.next(), '=')) {
			return set, "cannot read its SET list"
		}
		if strings.EqualFold(col, rule.Column) {
			return set, fmt.Sprintf("its SET list assigns the key column %s; leave the key out (the proxy fills it) or read it from the file in the column list", rule.Column)
		}
		depth := 0
		for r.next(); r.t.kind != tEOF && !(depth == 0 && l.isPunct(r.t, ',')); r.next() {
			switch {
			case l.isPunct(r.t, '('):
				depth++
			case l.isPunct(r.t, ')'):
				depth--
			}
		}
		if r.t.kind == tEOF {
			return set, ""
		}
		r.next()
	}
}

// loadColumns edits the column list so that each record's first field,
// the generated key, goes to @__leaf_g and a key field the file gives to
// @__leaf_v; it sets f.Fields. keys is the number of key fields (0 or 1);
// err is an error that is not a refusal.
func (b *builder) loadColumns(p *Load, f *loadfile.Format, list loadList, rule Rule, db, table string) (keys int, why string, err error) {
	for _, it := range list.items {
		if it.key {
			keys++
		}
	}
	if keys > 1 {
		return 0, "", errorf(CodeFieldTwice, "Column '%s' specified twice (LOAD DATA into %s)", rule.Column, qualify(db, table))
	}
	if len(list.items) > 0 {
		p.edits = append(p.edits, loadEdit{start: list.open + 1, end: list.open + 1, text: "@__leaf_g, "})
		for _, it := range list.items {
			if it.key {
				p.edits = append(p.edits, loadEdit{start: it.start, end: it.end, text: "@__leaf_v"})
			}
		}
		f.Fields = len(list.items)
		return keys, "", nil
	}
	// No column list, or (): the file holds every visible column.
	if b.env.Columns == nil {
		return 0, "it has no column list and the proxy does not know the table's columns; list them", nil
	}
	cols, err := b.env.Columns(db, table)
	if err != nil {
		e := errorf(CodeUnknown, "reading the columns of %s to fill %s: %v", qualify(db, table), rule.Column, err)
		e.cause = err
		return 0, "", e
	}
	var text strings.Builder
	text.WriteString("(@__leaf_g")
	for _, c := range cols {
		text.WriteString(", ")
		if strings.EqualFold(c, rule.Column) {
			keys = 1
			text.WriteString("@__leaf_v")
		} else {
			text.WriteString(sqltext.QuoteIdent(c))
		}
	}
	text.WriteString(")")
	if list.open >= 0 {
		p.edits = append(p.edits, loadEdit{start: list.open, end: list.close, text: text.String()})
	} else {
		p.edits = append(p.edits, loadEdit{start: list.at, end: list.at, text: " " + text.String()})
	}
	f.Fields = len(cols)
	return keys, "", nil
}

// loadKeyEdits appends to edits the SET items that give column its
// value: the file's value where AUTO_INCREMENT would keep it (fileKey: the
// file has a key field), else the generated one. The file's value goes in
// first, so that the statement's own SET items see it as they would; the
// decision comes last, at end (the statement's end).
func loadKeyEdits(edits []loadEdit, column string, fileKey bool, set loadSet, end int, noAutoValueOnZero bool) []loadEdit {
	key := sqltext.QuoteIdent(column)
	// The generated key: a "0" (the transformer's mark for a key it could
	// not draw) fails the statement; the first one becomes LAST_INSERT_ID().
	gen := "IF(@__leaf_g = '0', (SELECT 1 UNION ALL SELECT 2), IF(@__leaf_f IS NULL, LAST_INSERT_ID(@__leaf_f := @__leaf_g), @__leaf_g))"
	hasSet := set.at >= 0
	first, final := "", key+" = "+gen
	if fileKey {
		first = key + " = IFNULL(@__leaf_v, 0)"
		// NO_AUTO_VALUE_ON_ZERO keeps a 0 from the file, except that
		// MariaDB (10.11) generates for 0 and empty key fields when the
		// statement has a SET clause of its own: measured, and matched.
		if noAutoValueOnZero && !hasSet {
			final = key + " = IF(@__leaf_v IS NULL, " + gen + ", " + key + ")"
		} else {
			final = key + " = IF(" + key + " = 0, " + gen + ", " + key + ")"
		}
	}
	switch {
	case hasSet && first != "":
		edits = append(edits, loadEdit{start: set.at, end: set.at, text: " " + first + ","})
		edits = append(edits, loadEdit{start: end, end: end, text: ", " + final})
	case hasSet:
		edits = append(edits, loadEdit{start: end, end: end, text: ", " + final})
	case first != "":
		edits = append(edits, loadEdit{start: end, end: end, text: " SET " + first + ", " + final})
	default:
		edits = append(edits, loadEdit{start: end, end: end, text: " SET " + final})
	}
	return edits
}
