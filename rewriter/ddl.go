package rewriter

import "strings"

// SchemaRef names what a DDL statement may change the columns of: one
// table (Table set), or every table of a database (Table empty). An empty
// DB is a table of that name in any database: the statement did not
// qualify it, and the session's current database is not asked for here.
type SchemaRef struct{ DB, Table string }

// DDLTargets reads the DDL statements of text (CREATE, ALTER, DROP, RENAME,
// TRUNCATE; every statement of a multi-statement text) and returns what
// they may change the columns of, so that a cache of tables' columns drops
// those entries only:
//
//	CREATE [OR REPLACE] [TEMPORARY] TABLE | SEQUENCE | VIEW [IF NOT EXISTS] t
//	CREATE [ONLINE|OFFLINE] [UNIQUE|FULLTEXT|SPATIAL] INDEX [IF NOT EXISTS] i [USING x] ON t
//	CREATE | DROP DATABASE | SCHEMA [IF [NOT] EXISTS] d      -> every table of d
//	ALTER [ONLINE] [IGNORE] TABLE | SEQUENCE [IF EXISTS] t   (no RENAME in it)
//	DROP [TEMPORARY] TABLE | TABLES | SEQUENCE | VIEW [IF EXISTS] t [, t2 ...]
//	DROP [ONLINE|OFFLINE] INDEX [IF EXISTS] i ON t
//	RENAME TABLE | TABLES [IF EXISTS] a [WAIT n | NOWAIT] TO b [, c TO d ...]
//	TRUNCATE [TABLE] t
//
// all is true when a DDL statement may change columns it does not name in
// one of these forms (ALTER TABLE ... RENAME, CREATE VIEW with options,
// procedures, triggers, a "..." name whose meaning depends on ANSI_QUOTES,
// anything else): the caller then drops everything. Other statements
// name nothing. The text is read with both backslash rules, as the
// session's NO_BACKSLASH_ESCAPES is not known to the caller; what either
// reading names is returned. Names are unquoted and may borrow text.
func DDLTargets(text string) (refs []SchemaRef, all bool) {
	refs, all = ddlTargets(text, Mode{}, nil)
	if !all && strings.IndexByte(text, '\\') >= 0 {
		refs, all = ddlTargets(text, Mode{NoBackslashEscapes: true}, refs)
	}
	if all {
		return nil, true
	}
	return refs, false
}

// ddlTargets is DDLTargets for one sql_mode, appending to refs.
func ddlTargets(text string, mode Mode, refs []SchemaRef) ([]SchemaRef, bool) {
	l := lexer{sql: text, mode: mode}
	for {
		t := l.next()
		for l.isPunct(t, '(') {
			t = l.next()
		}
		if t.kind == tEOF {
			return refs, false
		}
		var ok bool
		if refs, ok = l.ddlStatement(t, refs); !ok {
			return nil, true
		}
		for t = l.next(); t.kind != tEOF && !l.isPunct(t, ';'); t = l.next() {
		}
		if t.kind == tEOF {
			return refs, false
		}
	}
}

// ddlStatement reads the statement whose first token is t; ok is false
// when it is DDL whose targets it cannot name.
func (l *lexer) ddlStatement(t token, refs []SchemaRef) ([]SchemaRef, bool) {
	switch {
	case l.is(t, "CREATE"):
		return l.createTargets(refs)
	case l.is(t, "ALTER"):
		return l.alterTargets(refs)
	case l.is(t, "DROP"):
		return l.dropTargets(refs)
	case l.is(t, "RENAME"):
		return l.renameTargets(refs)
	case l.is(t, "TRUNCATE"):
		if t = l.next(); l.is(t, "TABLE") {
			t = l.next()
		}
		return l.appendName(refs, t)
	}
	return refs, true
}

func (l *lexer) createTargets(refs []SchemaRef) ([]SchemaRef, bool) {
	t := l.next()
	if l.is(t, "OR") {
		if !l.is(l.next(), "REPLACE") {
			return refs, false
		}
		t = l.next()
	}
	if l.is(t, "TEMPORARY") {
		t = l.next()
	}
	switch {
	case l.is(t, "TABLE") || l.is(t, "SEQUENCE") || l.is(t, "VIEW"):
		t, ok := l.skipIfExists(l.next())
		if !ok {
			return refs, false
		}
		return l.appendName(refs, t)
	case l.is(t, "DATABASE") || l.is(t, "SCHEMA"):
		return l.appendDatabase(refs)
	}
	for l.is(t, "ONLINE") || l.is(t, "OFFLINE") || l.is(t, "UNIQUE") || l.is(t, "FULLTEXT") || l.is(t, "SPATIAL") {
		t = l.next()
	}
	if l.is(t, "INDEX") {
		return l.indexTable(refs)
	}
	return refs, false
}

func (l *lexer) alterTargets(refs []SchemaRef) ([]SchemaRef, bool) {
	t := l.next()
	for l.is(t, "ONLINE") || l.is(t, "IGNORE") {
		t = l.next()
	}
	if !l.is(t, "TABLE") && !l.is(t, "SEQUENCE") {
		return refs, false
	}
	t, ok := l.skipIfExists(l.next())
	if !ok {
		return refs, false
	}
	if refs, ok = l.appendName(refs, t); !ok {
		return refs, false
	}
	// ALTER TABLE t RENAME [TO] u, RENAME COLUMN ...: the new name's
	// entries are not named here precisely enough.
	save, saveBang := l.pos, l.inBang
	for t = l.next(); t.kind != tEOF && !l.isPunct(t, ';'); t = l.next() {
		if l.is(t, "RENAME") {
			return refs, false
		}
	}
	l.pos, l.inBang = save, saveBang
	return refs, true
}

func (l *lexer) dropTargets(refs []SchemaRef) ([]SchemaRef, bool) {
	t := l.next()
	if l.is(t, "TEMPORARY") {
		t = l.next()
	}
	switch {
	case l.is(t, "TABLE") || l.is(t, "TABLES") || l.is(t, "SEQUENCE") || l.is(t, "VIEW"):
		t, ok := l.skipIfExists(l.next())
		for ok {
			if refs, ok = l.appendName(refs, t); !ok {
				return refs, false
			}
			save, saveBang := l.pos, l.inBang
			if !l.isPunct(l.next(), ',') {
				l.pos, l.inBang = save, saveBang
				return refs, true
			}
			t = l.next()
		}
		return refs, false
	case l.is(t, "DATABASE") || l.is(t, "SCHEMA"):
		return l.appendDatabase(refs)
	}
	for l.is(t, "ONLINE") || l.is(t, "OFFLINE") {
		t = l.next()
	}
	if l.is(t, "INDEX") {
		return l.indexTable(refs)
	}
	return refs, false
}

// renameTargets reads RENAME TABLE's pairs: both names of each count.
func (l *lexer) renameTargets(refs []SchemaRef) ([]SchemaRef, bool) {
	if t := l.next(); !l.is(t, "TABLE") && !l.is(t, "TABLES") {
		return refs, false
	}
	t, ok := l.skipIfExists(l.next())
	if !ok {
		return refs, false
	}
	for {
		if refs, ok = l.appendName(refs, t); !ok {
			return refs, false
		}
		save, saveBang := l.pos, l.inBang
		t = l.next()
		if l.is(t, "WAIT") {
			l.next() // the timeout
			t = l.next()
		} else if l.is(t, "NOWAIT") {
			t = l.next()
		}
		switch {
		case l.is(t, "TO") || l.isPunct(t, ','):
			t = l.next()
		case t.kind == tEOF || l.isPunct(t, ';'):
			l.pos, l.inBang = save, saveBang
			return refs, true
		default:
			return refs, false
		}
	}
}

// indexTable reads what follows INDEX: [IF [NOT] EXISTS] name [USING x] ON table.
func (l *lexer) indexTable(refs []SchemaRef) ([]SchemaRef, bool) {
	t, ok := l.skipIfExists(l.next())
	if !ok || t.kind != tWord && t.kind != tQuoted {
		return refs, false
	}
	if t = l.next(); l.is(t, "USING") {
		l.next()
		t = l.next()
	}
	if !l.is(t, "ON") {
		return refs, false
	}
	return l.appendName(refs, l.next())
}

// appendDatabase reads [IF [NOT] EXISTS] name after DATABASE / SCHEMA.
func (l *lexer) appendDatabase(refs []SchemaRef) ([]SchemaRef, bool) {
	t, ok := l.skipIfExists(l.next())
	if !ok || t.kind != tWord && t.kind != tQuoted {
		return refs, false
	}
	return append(refs, SchemaRef{DB: unquote(l.text(t), t.kind, l.mode)}), true
}

// appendName reads [db.]table starting at t and appends it.
func (l *lexer) appendName(refs []SchemaRef, t token) ([]SchemaRef, bool) {
	db, table, ok := l.qualifiedName(t)
	if !ok {
		return refs, false
	}
	return append(refs, SchemaRef{DB: db, Table: table}), true
}

// skipIfExists passes IF [NOT] EXISTS when t starts it and returns the
// token after it (t itself otherwise).
func (l *lexer) skipIfExists(t token) (token, bool) {
	if !l.is(t, "IF") {
		return t, true
	}
	if t = l.next(); l.is(t, "NOT") {
		t = l.next()
	}
	if !l.is(t, "EXISTS") {
		return t, false
	}
	return l.next(), true
}

// EmptiesTables reports whether text is one statement that leaves the
// tables it names without rows, as AUTO_INCREMENT restarts for them:
// DROP [TEMPORARY] TABLE[S] or TRUNCATE [TABLE] (DDLTargets names them).
// CREATE TABLE is not one: CREATE TABLE IF NOT EXISTS on a table with
// rows, which ORMs send at every start, keeps them.
func EmptiesTables(text string) bool {
	l := lexer{sql: text}
	t := l.next()
	switch {
	case l.is(t, "TRUNCATE"):
		return true
	case l.is(t, "DROP"):
		if t = l.next(); l.is(t, "TEMPORARY") {
			t = l.next()
		}
		return l.is(t, "TABLE") || l.is(t, "TABLES")
	}
	return false
}
