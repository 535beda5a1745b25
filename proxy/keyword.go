package proxy

import (
	"bytes"

	"github.com/leafproxy/leafproxy/internal/sqltext"
)

// Keyword helpers: cheap prefix checks, no parsing. What is a comment, a
// quoted text or an executable comment is internal/sqltext's, shared with
// the engine and the rewriter.

// skipSpace skips whitespace and comments (not /*! */ which MySQL
// executes).
func skipSpace(q []byte) []byte { return q[sqltext.SkipSpace(q, 0):] }

// startsSet reports whether the statement's first word is SET, past
// whitespace, comments and executable-comment openers (/*!, /*!NNNNN,
// /*M!NNNNNN: their content is code the server may run, as mysqldump's
// /*!40101 SET SQL_MODE=... */). It does not ask whether the server runs
// a versioned comment: a false "yes" only costs a sql_mode re-read.
func startsSet(q []byte) bool { return hasKeyword(firstWord(q), "SET") }

// hasKeyword reports whether q starts with kw (upper case) as a whole word.
func hasKeyword(q []byte, kw string) bool { return sqltext.HasKeyword(q, kw) }

// parseUse reads the database name of `USE name` (rest after USE); ok is
// false when the statement has any other shape.
func parseUse(rest []byte) (string, bool) {
	rest = skipSpace(rest)
	var name []byte
	if len(rest) > 0 && rest[0] == '`' {
		i := 1
		for {
			j := bytes.IndexByte(rest[i:], '`')
			if j < 0 {
				return "", false
			}
			name = append(name, rest[i:i+j]...)
			i += j + 1
			if i < len(rest) && rest[i] == '`' { // `` is a literal backtick
				name = append(name, '`')
				i++
				continue
			}
			break
		}
		rest = rest[i:]
	} else {
		i := 0
		for i < len(rest) && rest[i] != ';' && rest[i] != ' ' && rest[i] != '\t' && rest[i] != '\n' && rest[i] != '\r' {
			i++
		}
		name, rest = rest[:i], rest[i:]
	}
	for _, c := range rest {
		if c != ';' && c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return "", false
		}
	}
	return string(name), len(name) > 0
}

// containsFold reports whether b contains the lower-case ASCII word w in
// any case, without allocating.
func containsFold(b []byte, w string) bool { return sqltext.ContainsFold(b, w) }

// killReq is a KILL statement the proxy carries out itself.
type killReq struct {
	id         uint64
	connection bool   // KILL [CONNECTION] n; false: KILL QUERY n
	mode       string // "HARD ", "SOFT " or ""
	param      bool   // a prepared KILL ?: the id is the execute's parameter
	queryID    bool   // KILL QUERY ID: the id names a query, not a thread
	user       bool   // KILL [CONNECTION|QUERY] USER spec: every thread of an account
	expr       []byte // not nil: the id (or the user spec) as written, for the backend to evaluate
	text       []byte // with expr: the whole statement as the client sent it
	refuse     string // non-empty: a KILL form the proxy will not relay
	multi      bool   // not ok: KILL among the statements of a multi-statement text (killmulti.go)
	// prepareName, with refuse: the statement is PREPARE prepareName FROM
	// '<KILL>' on its own, which prepareDynamicKill carries out.
	prepareName []byte
}

// parseKill recognises KILL statements in a COM_QUERY text. ok means q is a
// single KILL [HARD|SOFT] [CONNECTION|QUERY [ID]] followed by a number, an
// expression (k.expr, evaluated by the backend before the proxy maps it)
// or USER and an account (k.user). A KILL among several statements of a
// client with multi-statements comes back with multi set (its ids are
// mapped in place, killmulti.go); one in the literal text of PREPARE ...
// FROM or EXECUTE IMMEDIATE, or among statements the server would not run
// as several, comes back with refuse set: relayed as written it could
// reach a thread of a client that never went through this proxy.
func parseKill(q []byte, multi bool) (k killReq, ok bool) { return parseKillIn(q, multi, false) }

// parsePreparedKill is parseKill for a COM_STMT_PREPARE text, where the id
// may also be the statement's one parameter (KILL ?, k.param).
func parsePreparedKill(q []byte) (k killReq, ok bool) { return parseKillIn(q, false, true) }

func parseKillIn(q []byte, multi, prepared bool) (k killReq, ok bool) {
	// The hot path: one look at the first word. Only a text with a ';'
	// from a client that negotiated multi-statements can hold a KILL
	// further on (otherwise the server reads one statement and rejects
	// the rest); such a text is walked statement by statement, looking at
	// each one's first word, without collecting them.
	w := firstWord(q)
	semi := bytes.IndexByte(q, ';') >= 0
	switch {
	case hasKeyword(w, "KILL") && !semi:
		return withText(parseKillArgs(skipSpace(w[4:]), prepared))(q)
	case hasKeyword(w, "KILL"):
		stmts := splitStatements(q) // "KILL 5;" or KILL first among several: rare
		if len(stmts) > 1 && !multi {
			return killReq{refuse: killAmongStatements}, false
		} else if len(stmts) == 1 {
			return withText(parseKillArgs(skipSpace(firstWord(stmts[0])[4:]), prepared))(q)
		}
	case (hasKeyword(w, "PREPARE") || hasKeyword(w, "EXECUTE")) && dynamicKill(w):
		k = killReq{refuse: killInDynamic}
		if !prepared && hasKeyword(w, "PREPARE") && !moreStatements(q) {
			k.prepareName = preparedName(w)
		}
		return k, false
	case !semi || !multi:
		return k, false
	}
	for start := 0; start < len(q); {
		end := sqltext.StatementEnd(q, start, true)
		switch w := firstWord(q[start:end]); {
		case hasKeyword(w, "KILL"):
			k.multi = true // mapped in place (killmulti.go)
		case (hasKeyword(w, "PREPARE") || hasKeyword(w, "EXECUTE")) && dynamicKill(w):
			return killReq{refuse: killInDynamic}, false
		}
		start = end + 1
	}
	return k, false
}

// withText keeps the statement's text in a KILL the backend must read (an
// expression or an account), so that it validates the very text the
// client sent (an error's line number and quoted text are the server's).
func withText(k killReq, ok bool) func(q []byte) (killReq, bool) {
	return func(q []byte) (killReq, bool) {
		if ok && k.expr != nil {
			k.text = append([]byte{}, q...)
		}
		return k, ok
	}
}

const (
	killAmongStatements = "leafproxy: send KILL as a statement of its own, not in a multi-statement text"
	killInDynamic       = "leafproxy: KILL in the text of PREPARE ... FROM or EXECUTE IMMEDIATE is not supported through the proxy, " +
		"which maps KILL ids to its own sessions only in statements it sees; send the KILL as a statement of its own " +
		"or prepare it with the binary protocol (COM_STMT_PREPARE)"
)

// moreStatements reports whether q holds anything the server may run after
// its first statement. Both backslash rules are tried (the session's
// NO_BACKSLASH_ESCAPES is not known here): a false "yes" only costs a
// re-read of the session's database and sql_mode; a false "no" could miss
// a later USE.
func moreStatements(q []byte) bool {
	if bytes.IndexByte(q, ';') < 0 {
		return false
	}
	for _, escapes := range [2]bool{true, false} {
		if end := sqltext.StatementEnd(q, 0, escapes); end < len(q) && sqltext.SkipSpace(q, end+1) < len(q) {
			return true
		}
	}
	return false
}

func parseKillArgs(q []byte, prepared bool) (killReq, bool) {
	k := killReq{connection: true}
	word := func(kw string) bool {
		if hasKeyword(q, kw) {
			q = skipSpace(q[len(kw):])
			return true
		}
		return false
	}
	switch {
	case word("HARD"):
		k.mode = "HARD "
	case word("SOFT"):
		k.mode = "SOFT "
	}
	switch {
	case word("CONNECTION"):
	case word("QUERY"):
		k.connection = false
		k.queryID = word("ID")
	}
	if !k.queryID && word("USER") {
		k.user = true
	}
	i := 0
	for i < len(q) && q[i] >= '0' && q[i] <= '9' {
		i++
	}
	if prepared && !k.user && i == 0 && len(q) > 0 && q[0] == '?' {
		if rest := skipSpace(q[1:]); len(rest) == 0 || len(skipSpace(rest[1:])) == 0 && rest[0] == ';' {
			k.param = true
			return k, true
		}
	}
	rest := skipSpace(q[i:])
	for len(rest) > 0 && rest[0] == ';' {
		rest = skipSpace(rest[1:])
	}
	if i > 0 && i <= 20 && len(rest) == 0 && !k.user {
		if v, ok := parseUint64(q[:i]); ok {
			k.id = v
			return k, true
		}
	}
	// Anything else is for the backend to read: an expression, an account,
	// or a syntax error the server reports in its own words.
	k.expr = append([]byte{}, trimStatementEnd(q)...) // q is the packet buffer: a prepared KILL keeps it
	if prepared && hasParamMarker(k.expr) {
		return killReq{refuse: "leafproxy: a prepared KILL takes its id as the only parameter (KILL ?), not inside an expression"}, false
	}
	return k, true
}

// parseUint64 reads a decimal number; ok is false when it overflows.
func parseUint64(b []byte) (uint64, bool) {
	var v uint64
	for _, c := range b {
		d := uint64(c - '0')
		if v > (1<<64-1-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}

// trimStatementEnd drops the statement's trailing semicolons and
// whitespace (the server ignores them).
func trimStatementEnd(q []byte) []byte {
	q = bytes.TrimRight(q, " \t\r\n")
	for len(q) > 0 && q[len(q)-1] == ';' {
		q = bytes.TrimRight(q[:len(q)-1], " \t\r\n")
	}
	return q
}

// hasCodeWord reports whether q has one of words (upper case) as a word
// outside quotes and comments.
func hasCodeWord(q []byte, words ...string) bool {
	for i := sqltext.SkipToCode(q, 0); i < len(q); i = sqltext.SkipToCode(q, i) {
		switch c := q[i]; {
		case c == '\'' || c == '"' || c == '`':
			i, _ = sqltext.QuotedEnd(q, i, c != '`')
		case sqltext.IsIdentByte(c):
			j := i
			for j < len(q) && sqltext.IsIdentByte(q[j]) {
				j++
			}
			for _, w := range words {
				if sqltext.EqualFold(q[i:j], w) {
					return true
				}
			}
			i = j
		default:
			i++
		}
	}
	return false
}

// hasParamMarker reports whether q has a ? outside quotes and comments.
func hasParamMarker(q []byte) bool {
	for i := sqltext.SkipToCode(q, 0); i < len(q); i = sqltext.SkipToCode(q, i) {
		switch c := q[i]; c {
		case '\'', '"', '`':
			i, _ = sqltext.QuotedEnd(q, i, c != '`')
		case '?':
			return true
		default:
			i++
		}
	}
	return false
}

// firstWord skips whitespace, comments and executable-comment openers
// (/*!, /*!NNNNN, /*M!NNNNNN), whose content the server runs.
func firstWord(q []byte) []byte { return q[sqltext.SkipToCode(q, 0):] }

// splitStatements splits a text at the semicolons that end statements,
// skipping quoted strings, quoted names and comments (an executable
// comment's content counts as code). Backslash escapes are assumed (a
// false split only makes a KILL among statements refused).
func splitStatements(q []byte) [][]byte {
	var out [][]byte
	start := 0
	for {
		end := sqltext.StatementEnd(q, start, true)
		if end == len(q) {
			break
		}
		out = append(out, q[start:end])
		start = end + 1
	}
	if len(bytes.TrimSpace(q[start:])) > 0 || len(out) == 0 {
		out = append(out, q[start:])
	}
	return out
}
