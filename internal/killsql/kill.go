package killsql

import (
	"strconv"

	"github.com/leafproxy/leafproxy/internal/sqltext"
)

// Req is a KILL statement the proxy carries out itself.
type Req struct {
	ID         uint64
	Connection bool   // KILL [CONNECTION] n; false: KILL QUERY n
	Mode       string // "HARD ", "SOFT " or ""
	Param      bool   // a prepared KILL ?: the id is the execute's parameter
	QueryID    bool   // KILL QUERY ID: the id names a query, not a thread
	User       bool   // KILL [CONNECTION|QUERY] USER spec: every thread of an account
	Expr       []byte // not nil: the id (or the user spec) as written, for the backend to evaluate
	Text       []byte // with Expr: the whole statement as the client sent it
	Refuse     string // non-empty: a KILL form the proxy will not relay
	Multi      bool   // not ok: KILL among the statements of a multi-statement text (MapMulti)
	// PrepareName, with Refuse: the statement is PREPARE PrepareName FROM
	// '<KILL>' on its own, which the proxy carries out with StandIn.
	PrepareName []byte
}

// Refusals: what the proxy answers (1235) instead of relaying a KILL it
// cannot map.
const (
	AmongStatements = "leafproxy: send KILL as a statement of its own, not in a multi-statement text"
	InDynamic       = "leafproxy: KILL in the text of PREPARE ... FROM or EXECUTE IMMEDIATE is not supported through the proxy, " +
		"which maps KILL ids to its own sessions only in statements it sees; send the KILL as a statement of its own " +
		"or prepare it with the binary protocol (COM_STMT_PREPARE)"
	ParamInExpr = "leafproxy: a prepared KILL takes its id as the only parameter (KILL ?), not inside an expression"
)

// Parse recognises KILL statements in a COM_QUERY text. ok means q is a
// single KILL [HARD|SOFT] [CONNECTION|QUERY [ID]] followed by a number, an
// expression (k.Expr, evaluated by the backend before the proxy maps it)
// or USER and an account (k.User). A KILL among several statements of a
// client with multi-statements comes back with Multi set (its ids are
// mapped in place, MapMulti); one in the literal text of PREPARE ...
// FROM or EXECUTE IMMEDIATE, or among statements the server would not run
// as several, comes back with Refuse set: relayed as written it could
// reach a thread of a client that never went through this proxy. c is
// q's class (sqltext.Classify, made once per command by the proxy): a
// text whose first word is no KILL, PREPARE or EXECUTE, and that holds no
// ';' of a multi-statement client, is no KILL and is not read again.
func Parse(q []byte, c sqltext.Class, multi bool) (k Req, ok bool) {
	return parseIn(q, c, multi, false)
}

// ParsePrepared is Parse for a COM_STMT_PREPARE text, where the id may
// also be the statement's one parameter (KILL ?, k.Param).
func ParsePrepared(q []byte, c sqltext.Class) (k Req, ok bool) { return parseIn(q, c, false, true) }

func parseIn(q []byte, c sqltext.Class, multi, prepared bool) (k Req, ok bool) {
	// The hot path: the class's first word. Only a text with a ';' from
	// a client that negotiated multi-statements can hold a KILL further
	// on (otherwise the server reads one statement and rejects the rest);
	// such a text is walked statement by statement, looking at each one's
	// first word, without collecting them.
	semi := c.Semicolon()
	switch c.Word() {
	case sqltext.Kill, sqltext.Prepare, sqltext.Execute:
	default:
		if !semi || !multi {
			return k, false
		}
	}
	w := firstWord(q)
	switch {
	case hasKeyword(w, "KILL") && !semi:
		return withText(parseArgs(skipSpace(w[4:]), prepared))(q)
	case hasKeyword(w, "KILL"):
		stmts := splitStatements(q) // "KILL 5;" or KILL first among several: rare
		if len(stmts) > 1 && !multi {
			return Req{Refuse: AmongStatements}, false
		} else if len(stmts) == 1 {
			return withText(parseArgs(skipSpace(firstWord(stmts[0])[4:]), prepared))(q)
		}
	case (hasKeyword(w, "PREPARE") || hasKeyword(w, "EXECUTE")) && dynamicKill(w):
		k = Req{Refuse: InDynamic}
		if !prepared && hasKeyword(w, "PREPARE") && !c.Multi() {
			k.PrepareName = preparedName(w)
		}
		return k, false
	case !semi || !multi:
		return k, false
	}
	for start := 0; start < len(q); {
		end := sqltext.StatementEnd(q, start, true)
		switch w := firstWord(q[start:end]); {
		case hasKeyword(w, "KILL"):
			k.Multi = true // mapped in place (MapMulti)
		case (hasKeyword(w, "PREPARE") || hasKeyword(w, "EXECUTE")) && dynamicKill(w):
			return Req{Refuse: InDynamic}, false
		}
		start = end + 1
	}
	return k, false
}

// withText keeps the statement's text in a KILL the backend must read (an
// expression or an account), so that it validates the very text the
// client sent (an error's line number and quoted text are the server's).
func withText(k Req, ok bool) func(q []byte) (Req, bool) {
	return func(q []byte) (Req, bool) {
		if ok && k.Expr != nil {
			k.Text = append([]byte{}, q...)
		}
		return k, ok
	}
}

func parseArgs(q []byte, prepared bool) (Req, bool) {
	k := Req{Connection: true}
	word := func(kw string) bool {
		if hasKeyword(q, kw) {
			q = skipSpace(q[len(kw):])
			return true
		}
		return false
	}
	switch {
	case word("HARD"):
		k.Mode = "HARD "
	case word("SOFT"):
		k.Mode = "SOFT "
	}
	switch {
	case word("CONNECTION"):
	case word("QUERY"):
		k.Connection = false
		k.QueryID = word("ID")
	}
	if !k.QueryID && word("USER") {
		k.User = true
	}
	i := 0
	for i < len(q) && q[i] >= '0' && q[i] <= '9' {
		i++
	}
	if prepared && !k.User && i == 0 && len(q) > 0 && q[0] == '?' {
		if rest := skipSpace(q[1:]); len(rest) == 0 || len(skipSpace(rest[1:])) == 0 && rest[0] == ';' {
			k.Param = true
			return k, true
		}
	}
	rest := skipSpace(q[i:])
	for len(rest) > 0 && rest[0] == ';' {
		rest = skipSpace(rest[1:])
	}
	if i > 0 && i <= 20 && len(rest) == 0 && !k.User {
		if v, ok := parseUint64(q[:i]); ok {
			k.ID = v
			return k, true
		}
	}
	// Anything else is for the backend to read: an expression, an account,
	// or a syntax error the server reports in its own words.
	k.Expr = append([]byte{}, trimStatementEnd(q)...) // q is the packet buffer: a prepared KILL keeps it
	if prepared && hasParamMarker(k.Expr) {
		return Req{Refuse: ParamInExpr}, false
	}
	return k, true
}

// what is the KILL's target word with its trailing space.
func (k Req) what() string {
	if k.Connection {
		return "CONNECTION "
	}
	return "QUERY "
}

// ThreadStatement is the KILL the backend runs for this request on backend
// thread tid: KILL [HARD |SOFT ]CONNECTION|QUERY tid.
func (k Req) ThreadStatement(tid uint64) string {
	return "KILL " + k.Mode + k.what() + strconv.FormatUint(tid, 10)
}

// QueryStatement is KILL [HARD |SOFT ]QUERY ID n, for the backend.
func (k Req) QueryStatement(n uint64) string {
	return "KILL " + k.Mode + "QUERY ID " + strconv.FormatUint(n, 10)
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
