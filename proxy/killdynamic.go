package proxy

import (
	"context"

	"github.com/leafproxy/leafproxy/internal/sqltext"
)

// PREPARE name FROM '<KILL ...>' (SQL-level PREPARE of a KILL, as one
// statement): the server accepts it, and so does the proxy, but the
// backend must never hold a KILL it could run as written (EXECUTE name
// from a text, a multi-statement or a stored routine would reach threads
// the proxy did not open). So the statement is sent as written, which
// checks it and gives the server's own error (or replaces an older
// statement of that name, as the server does), and then name is prepared
// again as killStandIn: whatever later executes it, anywhere, hears 1235
// from the backend itself. Nothing else runs on the session in between.

// killStandIn is the statement a PREPARE'd KILL is replaced with. SIGNAL's
// MESSAGE_TEXT holds at most 128 characters.
const killStandIn = `SIGNAL SQLSTATE '42000' SET MYSQL_ERRNO = 1235, ` +
	`MESSAGE_TEXT = 'leafproxy: EXECUTE of a KILL from PREPARE ... FROM is not supported; send the KILL on its own'`

// prepareDynamicKill carries out PREPARE name FROM '<KILL>' (q, the whole
// statement) as described above and answers as the server does: its error,
// or OK.
func (s *Session) prepareDynamicKill(ctx context.Context, q, name []byte) error {
	if err := s.exec.mayWait(); err != nil {
		return err
	}
	if _, _, err := s.BackendExec(ctx, string(q)); err != nil {
		return s.killFailed(err)
	}
	standIn := "PREPARE " + string(name) + " FROM " + quoteString(killStandIn)
	if _, _, err := s.BackendExec(ctx, standIn); err != nil {
		// The backend holds the KILL and would not replace it: drop it.
		if _, _, derr := s.BackendExec(ctx, "DEALLOCATE PREPARE "+string(name)); derr != nil {
			return s.setFatal(derr)
		}
		return s.killFailed(err)
	}
	s.log.Info("kill", "what", "PREPARE FROM", "stand_in", true)
	return s.WriteOK(0, 0, 0)
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
