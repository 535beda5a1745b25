package killsql

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/leafproxy/leafproxy/internal/sqltext"
)

// What the proxy asks the session's backend while carrying a KILL out.
//
// An id written as an expression (KILL CONNECTION_ID(), KILL @id, KILL
// 1+1) is evaluated by the session's backend: the statement is prepared
// there as written first (so a syntax error or an unknown column is the
// server's own error, word for word), then the expression is evaluated
// by EvalID, EXECUTE IMMEDIATE 'SELECT CAST(? AS SIGNED)' USING <expr>,
// which converts it as KILL does (Item::val_int: NULL and text that is
// not a number are 0, a negative number wraps to a large unsigned one)
// and which, like KILL, refuses subqueries, sequences and stored
// functions (ER_SUBQUERIES_NOT_SUPPORTED).

// SubqueriesMessage is the server's message when a KILL's expression uses
// a subquery, a sequence or a stored function (ER_SUBQUERIES_NOT_SUPPORTED).
const SubqueriesMessage = "KILL does not support subqueries or stored functions"

// EvalID is the statement that evaluates a KILL's id expression to one
// row of one signed integer (or NULL, which KILL reads as 0). The
// expression ends the statement, as in the KILL: a syntax error quotes
// the same text, a line comment ending it ends both.
func EvalID(expr []byte) string {
	return "EXECUTE IMMEDIATE 'SELECT CAST(? AS SIGNED)' USING " + string(expr)
}

// EvalIDSubquery is EvalID for an expression that EvalID's USING refused
// as a subquery: KILL takes a subquery that reads no table, (SELECT 5);
// USING takes none. When KillRefuses(expr), KILL itself refuses it.
func EvalIDSubquery(expr []byte) string {
	return "SELECT CAST((" + string(expr) + "\n) AS SIGNED)"
}

// KillRefuses reports whether an expression USING refused as a subquery
// is one KILL refuses too (SubqueriesMessage): it reads a table or a
// sequence.
func KillRefuses(expr []byte) bool {
	return hasCodeWord(expr, "FROM", "NEXTVAL", "LASTVAL", "SETVAL", "VALUE")
}

// ThreadOfQuery looks up the backend thread running query id n (KILL
// QUERY ID n): one column, ID, of at most one row.
func ThreadOfQuery(n uint64) string {
	return "SELECT ID FROM information_schema.PROCESSLIST WHERE QUERY_ID = " + strconv.FormatUint(n, 10)
}

// ThreadsOfUser lists the backend threads of user (KILL USER): ID, HOST.
func ThreadsOfUser(user string) string {
	return "SELECT ID, HOST FROM information_schema.PROCESSLIST WHERE USER = X'" + fmt.Sprintf("%x", user) + "'"
}

// ParseAccount reads the account of KILL USER: user[@host] (each part a
// name or a quoted string; no host matches every host), or CURRENT_USER,
// for which currentUser is true (the caller asks the backend for
// CURRENT_USER() and splits it with SplitAccount). The statement has been
// validated by the backend, so only its shapes are read.
func ParseAccount(spec []byte) (user, host string, currentUser bool) {
	if w := skipSpace(spec); hasKeyword(w, "CURRENT_USER") {
		return "", "", true
	}
	part := func(q []byte) (string, []byte) {
		q = skipSpace(q)
		if len(q) == 0 {
			return "", q
		}
		if c := q[0]; c == '\'' || c == '"' || c == '`' {
			end, _ := sqltext.QuotedEnd(q, 0, c != '`')
			return string(sqltext.AppendUnquoted(nil, q[:end], literalEscapes(c != '`'))), q[end:]
		}
		i := 0
		for i < len(q) && q[i] != '@' && !sqltext.IsSpace(q[i]) && q[i] != ';' {
			i++
		}
		return string(q[:i]), q[i:]
	}
	user, rest := part(spec)
	if rest = skipSpace(rest); len(rest) > 0 && rest[0] == '@' {
		host, _ = part(rest[1:])
	}
	return user, host, false
}

// SplitAccount splits CURRENT_USER()'s user@host at its last @ (none: no
// host, which matches every host).
func SplitAccount(account string) (user, host string) {
	at := strings.LastIndexByte(account, '@')
	if at < 0 {
		return account, ""
	}
	return account[:at], account[at+1:]
}

// HostOnly drops the :port the processlist adds to a TCP client's host.
func HostOnly(h string) string {
	if i := strings.LastIndexByte(h, ':'); i > 0 {
		if _, err := strconv.Atoi(h[i+1:]); err == nil {
			return h[:i]
		}
	}
	return h
}

// WildMatch is the server's wild_case_compare for host names: % matches
// any run, _ one character, \ escapes, letters compare without case.
func WildMatch(s, pat string) bool {
	s, pat = strings.ToLower(s), strings.ToLower(pat)
	for len(pat) > 0 {
		switch c := pat[0]; {
		case c == '%':
			for i := len(s); i >= 0; i-- {
				if WildMatch(s[i:], pat[1:]) {
					return true
				}
			}
			return false
		case len(s) == 0:
			return false
		case c == '_':
		case c == '\\' && len(pat) > 1:
			pat = pat[1:]
			if pat[0] != s[0] {
				return false
			}
		case c != s[0]:
			return false
		}
		s, pat = s[1:], pat[1:]
	}
	return len(s) == 0
}
