package killsql

import (
	"github.com/leafproxy/leafproxy/internal/sqltext"
)

// KILL in the literal text of PREPARE ... FROM or EXECUTE IMMEDIATE: the
// proxy cannot map the ids of a KILL it does not see as a statement, so
// such a text is refused (InDynamic), except PREPARE name FROM '<KILL>' as
// a statement of its own: the server accepts it, and so does the proxy,
// but the backend must never hold a KILL it could run as written (EXECUTE
// name from a text, a multi-statement or a stored routine would reach
// threads the proxy did not open). So the statement is sent as written,
// which checks it and gives the server's own error (or replaces an older
// statement of that name, as the server does), and then name is prepared
// again as the stand-in (StandIn): whatever later executes it, anywhere,
// hears 1235 from the backend itself. What the proxy cannot see (PREPARE
// s FROM @var, stored routines, events, triggers) reaches the backend as
// written.

// standIn is the statement a PREPARE'd KILL is replaced with. SIGNAL's
// MESSAGE_TEXT holds at most 128 characters.
const standIn = `SIGNAL SQLSTATE '42000' SET MYSQL_ERRNO = 1235, ` +
	`MESSAGE_TEXT = 'leafproxy: EXECUTE of a KILL from PREPARE ... FROM is not supported; send the KILL on its own'`

// StandIn is the statement that prepares name (as the client wrote it in
// Req.PrepareName) as the stand-in for a KILL.
func StandIn(name []byte) string {
	return "PREPARE " + string(name) + " FROM " + quoteString(standIn)
}

// dynamicKill reports whether q, a statement starting with PREPARE or
// EXECUTE, has the server run a KILL: PREPARE s FROM src or EXECUTE
// IMMEDIATE src [USING ...] where the string (or hex) literals of src,
// unescaped and concatenated as the rewriter reads them, start with KILL
// (one literal, adjacent ones, or an expression such as CONCAT('KILL ',
// @id)). Both backslash rules are tried, as the session's
// NO_BACKSLASH_ESCAPES is not known here; a "..." counts as a string
// (under ANSI_QUOTES it is a name, and the server rejects the statement
// anyway). A variable (PREPARE s FROM @q) and EXECUTE s are not seen.
func dynamicKill(q []byte) bool {
	for _, escapes := range [2]bool{true, false} {
		end := sqltext.StatementEnd(q, 0, escapes)
		if hasKeyword(firstWord(literalText(nil, q[:end], escapes)), "KILL") {
			return true
		}
	}
	return false
}

// literalText appends to dst the contents of the string, hex and bit
// literals of a PREPARE / EXECUTE IMMEDIATE statement q, in order, up to
// EXECUTE IMMEDIATE's USING.
func literalText(dst []byte, q []byte, escapes bool) []byte {
	immediate := hasKeyword(q, "EXECUTE")
	depth := 0
	for i := sqltext.SkipToCode(q, 0); i < len(q); i = sqltext.SkipToCode(q, i) {
		switch c := q[i]; {
		case c == '\'' || c == '"':
			end, _ := sqltext.QuotedEnd(q, i, escapes)
			dst = sqltext.AppendUnquoted(dst, q[i:end], literalEscapes(escapes))
			i = end
		case c == '`':
			i, _ = sqltext.QuotedEnd(q, i, false)
		case sqltext.IsIdentByte(c):
			// A hex or bit literal, or a word (EXECUTE IMMEDIATE's USING
			// ends the text).
			var radix bool
			if dst, i, radix = appendRadixAt(dst, q, i); !radix {
				j := i
				for j < len(q) && sqltext.IsIdentByte(q[j]) {
					j++
				}
				if immediate && depth == 0 && sqltext.EqualFold(q[i:j], "USING") {
					return dst
				}
				i = j
			}
		case c == '(':
			depth++
			i++
		case c == ')':
			depth--
			i++
		default:
			i++
		}
	}
	return dst
}

// appendRadixAt reads the hex or bit literal (X'..', B'..', 0x..) that
// starts at q[i], when one does (not inside a word): radix, dst with its
// bytes appended and the index after it. Otherwise dst and i come back
// as they were.
func appendRadixAt(dst, q []byte, i int) (_ []byte, next int, radix bool) {
	if i+1 >= len(q) || i > 0 && sqltext.IsIdentByte(q[i-1]) {
		return dst, i, false
	}
	switch c := q[i]; {
	case (c == 'x' || c == 'X' || c == 'b' || c == 'B') && q[i+1] == '\'':
		end, _ := sqltext.QuotedEnd(q, i+1, false)
		dst, _ = sqltext.AppendRadix(dst, q[i+2:max(end-1, i+2)], c == 'x' || c == 'X')
		return dst, end, true
	case c == '0' && (q[i+1] == 'x' || q[i+1] == 'X'):
		j := i + 2
		for j < len(q) && sqltext.IsIdentByte(q[j]) {
			j++
		}
		dst, _ = sqltext.AppendRadix(dst, q[i+2:j], true)
		return dst, j, true
	}
	return dst, i, false
}

// literalEscapes is how a string literal's backslashes read: as MariaDB
// reads them (\% and \_ keep theirs), or not at all.
func literalEscapes(escapes bool) sqltext.Escapes {
	if escapes {
		return sqltext.BackslashLike
	}
	return sqltext.NoEscapes
}

// preparedName returns the statement name of PREPARE name FROM ... as
// written (an identifier, or a backquoted one), or nil.
func preparedName(q []byte) []byte {
	q = skipSpace(q[len("PREPARE"):])
	if len(q) == 0 {
		return nil
	}
	if q[0] == '`' {
		end, ok := sqltext.QuotedEnd(q, 0, false)
		if !ok {
			return nil
		}
		return q[:end]
	}
	i := 0
	for i < len(q) && sqltext.IsIdentByte(q[i]) {
		i++
	}
	if i == 0 {
		return nil
	}
	return q[:i]
}

// quoteString writes v as a single-quoted SQL string literal that reads
// the same under either backslash rule (v holds no backslash).
func quoteString(v string) string {
	out := make([]byte, 0, len(v)+8)
	out = append(out, '\'')
	for i := 0; i < len(v); i++ {
		if v[i] == '\'' {
			out = append(out, '\'')
		}
		out = append(out, v[i])
	}
	return string(append(out, '\''))
}
