package killsql

import (
	"math"
	"strconv"

	"github.com/leafproxy/leafproxy/internal/sqltext"
)

// KILL among the statements of a multi-statement text, with the ids
// mapped as for a KILL of its own. Each KILL [HARD|SOFT]
// [CONNECTION|QUERY] n in the text is mapped in place before the text
// goes on, so the statements around it run as they would directly:
//
//   - n names a session the caller may kill (Target finds it): n is
//     replaced by that session's backend thread id;
//   - any other n: the statement is replaced by a SIGNAL of the server's
//     own answer, 1094 Unknown thread id: n, which stops the text there as
//     the server's error would.
//
// KILL [QUERY] CONNECTION_ID() names the session's own thread and goes on
// as written. What cannot be mapped before the text runs is refused as a
// whole (1235, nothing of it runs): a KILL whose id is an expression (its
// value may depend on the statements before it, SET @id = ...; KILL @id),
// KILL QUERY ID (the query it names may not have started), KILL USER (the
// threads it names are those of when it runs), and a text the two
// backslash rules split differently (the session's NO_BACKSLASH_ESCAPES
// decides which statement would be mapped).

// Refusals of MapMulti.
const (
	MultiUnmappable = "leafproxy: in a multi-statement text KILL takes a number (the connection id or CONNECTION_ID()); " +
		"send KILL with an expression, KILL QUERY ID or KILL USER as a statement of its own"
	SplitAmbiguous = "leafproxy: this multi-statement text splits differently with and without NO_BACKSLASH_ESCAPES " +
		"(a backslash in a quoted string); send its KILL as a statement of its own"
)

// Target says what a KILL of id reaches: the backend thread id of a
// session the caller may kill, or ok false (the KILL answers 1094, as the
// server does for a thread one may not see). It may be called more than
// once for one KILL.
type Target func(id uint32) (tid uint32, ok bool)

// edit replaces q[from:to] with with.
type edit struct {
	from, to int
	with     string
}

// MapMulti returns the text q with its KILLs mapped and how many it
// mapped, or a refusal (non-empty) to answer with 1235.
func MapMulti(q []byte, target Target) (out []byte, kills int, refuse string) {
	edits, refuse := multiEdits(q, true, target)
	if refuse != "" {
		return nil, 0, refuse
	}
	other, refuse := multiEdits(q, false, target)
	if refuse != "" {
		return nil, 0, refuse
	}
	if len(other) != len(edits) {
		return nil, 0, SplitAmbiguous
	}
	for i := range edits {
		if edits[i] != other[i] {
			return nil, 0, SplitAmbiguous
		}
	}
	out = make([]byte, 0, len(q)+16*len(edits))
	at := 0
	for _, e := range edits {
		out = append(append(out, q[at:e.from]...), e.with...)
		at = e.to
	}
	return append(out, q[at:]...), len(edits), ""
}

// multiEdits finds the KILL statements of q, split with the given
// backslash rule, and what each becomes.
func multiEdits(q []byte, escapes bool, target Target) ([]edit, string) {
	var edits []edit
	for start := 0; start < len(q); {
		end := sqltext.StatementEnd(q, start, escapes)
		w := firstWord(q[start:end])
		if hasKeyword(w, "KILL") {
			e, ok := multiEdit(q[:end], end-len(w), target)
			if !ok {
				return nil, MultiUnmappable
			}
			edits = append(edits, e)
		}
		start = end + 1
	}
	return edits, ""
}

// multiEdit reads the KILL statement q[at:] (q ends where the statement
// does) and says what it becomes; ok is false for a KILL whose id is not
// a plain number.
func multiEdit(q []byte, at int, target Target) (edit, bool) {
	rest := skipSpace(q[at+len("KILL"):])
	word := func(kw string) bool {
		if hasKeyword(rest, kw) {
			rest = skipSpace(rest[len(kw):])
			return true
		}
		return false
	}
	if !word("HARD") {
		word("SOFT")
	}
	if !word("CONNECTION") && word("QUERY") && hasKeyword(rest, "ID") {
		return edit{}, false
	}
	if isConnectionID(rest) {
		return edit{from: at, to: at}, true // the session's own thread, as written
	}
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	if n == 0 || len(skipSpace(rest[n:])) > 0 {
		return edit{}, false // an expression, USER, or the server's syntax error
	}
	from := len(q) - len(rest)
	id, ok := parseUint64(rest[:n])
	var tid uint32
	found := false
	if ok && id <= math.MaxUint32 {
		tid, found = target(uint32(id))
	}
	if !found {
		shown := "9223372036854775807" // a number past 2^64 is a decimal, which KILL reads as LONGLONG_MAX
		if ok {
			shown = strconv.FormatUint(id, 10)
		}
		return edit{from: at, to: len(q), with: "SIGNAL SQLSTATE 'HY000' SET MYSQL_ERRNO = 1094, MESSAGE_TEXT = 'Unknown thread id: " + shown + "'"}, true
	}
	return edit{from: from, to: from + n, with: strconv.FormatUint(uint64(tid), 10)}, true
}

// isConnectionID reports whether q is CONNECTION_ID() and nothing more.
func isConnectionID(q []byte) bool {
	if !hasKeyword(q, "CONNECTION_ID") {
		return false
	}
	q = skipSpace(q[len("CONNECTION_ID"):])
	if len(q) == 0 || q[0] != '(' {
		return false
	}
	q = skipSpace(q[1:])
	return len(q) > 0 && q[0] == ')' && len(skipSpace(q[1:])) == 0
}
