package proxy

import (
	"math"
	"strconv"

	"github.com/leafproxy/leafproxy/internal/sqltext"
)

// KILL among the statements of a multi-statement text, with users
// configured (sessions share backend accounts, so ids stay mapped as in
// kill.go). Each KILL [HARD|SOFT] [CONNECTION|QUERY] n in the text is
// mapped in place before the text goes on (to the interceptor, then the
// backend), so the statements around it run as they would directly:
//
//   - n names a session this one may kill (mayKill: its greeting id or its
//     backend thread id): n is replaced by that session's backend thread id;
//   - any other n: the statement is replaced by a SIGNAL of the server's
//     own answer, 1094 Unknown thread id: n, which stops the text there as
//     the server's error would.
//
// KILL [QUERY] CONNECTION_ID() names the session's own thread and goes on
// as written. What the proxy cannot map before the text runs is refused as a whole
// (1235, nothing of it runs): a KILL whose id is an expression (its value
// may depend on the statements before it, SET @id = ...; KILL @id), KILL
// QUERY ID (the query it names may not have started), KILL USER (the
// threads it names are those of when it runs), and a text the two
// backslash rules split differently (the session's NO_BACKSLASH_ESCAPES
// decides which statement the proxy would be mapping).

const killMultiUnmappable = "leafproxy: in a multi-statement text KILL takes a number (the connection id or CONNECTION_ID()); " +
	"send KILL with an expression, KILL QUERY ID or KILL USER as a statement of its own"

const killSplitAmbiguous = "leafproxy: this multi-statement text splits differently with and without NO_BACKSLASH_ESCAPES " +
	"(a backslash in a quoted string); send its KILL as a statement of its own"

// killEdit replaces q[from:to] with with.
type killEdit struct {
	from, to int
	with     string
}

// mapMultiKill returns the text q with its KILLs mapped, or a refusal
// (non-empty) to answer with 1235.
func (s *Session) mapMultiKill(q []byte) ([]byte, string) {
	edits, refuse := s.multiKillEdits(q, true)
	if refuse != "" {
		return nil, refuse
	}
	other, refuse := s.multiKillEdits(q, false)
	if refuse != "" {
		return nil, refuse
	}
	if len(other) != len(edits) {
		return nil, killSplitAmbiguous
	}
	for i := range edits {
		if edits[i] != other[i] {
			return nil, killSplitAmbiguous
		}
	}
	s.log.Info("kill", "what", "in a multi-statement text", "statements", len(edits))
	out := make([]byte, 0, len(q)+16*len(edits))
	at := 0
	for _, e := range edits {
		out = append(append(out, q[at:e.from]...), e.with...)
		at = e.to
	}
	return append(out, q[at:]...), ""
}

// multiKillEdits finds the KILL statements of q, split with the given
// backslash rule, and what each becomes.
func (s *Session) multiKillEdits(q []byte, escapes bool) ([]killEdit, string) {
	var edits []killEdit
	for start := 0; start < len(q); {
		end := sqltext.StatementEnd(q, start, escapes)
		w := firstWord(q[start:end])
		if hasKeyword(w, "KILL") {
			e, ok := s.multiKillEdit(q[:end], end-len(w))
			if !ok {
				return nil, killMultiUnmappable
			}
			edits = append(edits, e)
		}
		start = end + 1
	}
	return edits, ""
}

// multiKillEdit reads the KILL statement q[at:] (q ends where the
// statement does) and says what it becomes; ok is false for a KILL whose
// id is not a plain number.
func (s *Session) multiKillEdit(q []byte, at int) (killEdit, bool) {
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
		return killEdit{}, false
	}
	if isConnectionID(rest) {
		return killEdit{from: at, to: at}, true // the session's own thread, as written
	}
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	if n == 0 || len(skipSpace(rest[n:])) > 0 {
		return killEdit{}, false // an expression, USER, or the server's syntax error
	}
	from := len(q) - len(rest)
	id, ok := parseUint64(rest[:n])
	var target *Session
	if ok && id <= math.MaxUint32 {
		target = s.srv.lookupSession(uint32(id))
	}
	if !s.mayKill(target) {
		shown := "9223372036854775807" // a number past 2^64 is a decimal, which KILL reads as LONGLONG_MAX
		if ok {
			shown = strconv.FormatUint(id, 10)
		}
		return killEdit{from: at, to: len(q), with: "SIGNAL SQLSTATE 'HY000' SET MYSQL_ERRNO = 1094, MESSAGE_TEXT = 'Unknown thread id: " + shown + "'"}, true
	}
	tid := target.threadID.Load()
	return killEdit{from: from, to: from + n, with: strconv.FormatUint(uint64(tid), 10)}, true
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
