package kill

import (
	"context"

	"github.com/leafproxy/leafproxy/internal/killsql"
)

// PREPARE name FROM '<KILL ...>' (SQL-level PREPARE of a KILL, as one
// statement): the statement is sent as written, which checks it and gives
// the server's own error (or replaces an older statement of that name, as
// the server does), and then name is prepared again as a stand-in that
// answers 1235 wherever it is executed (killsql.StandIn: the backend must
// never hold a KILL it could run as written). Nothing else runs on the
// session in between.

// prepareDynamicKill carries out PREPARE name FROM '<KILL>' (q, the whole
// statement) as described above and answers as the server does: its error,
// or OK.
func prepareDynamicKill(ctx context.Context, s Session, q, name []byte) error {
	if err := s.MayWait(); err != nil {
		return err
	}
	if err := s.BackendExec(ctx, string(q)); err != nil {
		return killFailed(s, err)
	}
	if err := s.BackendExec(ctx, killsql.StandIn(name)); err != nil {
		// The backend holds the KILL and would not replace it: drop it.
		if derr := s.BackendExec(ctx, "DEALLOCATE PREPARE "+string(name)); derr != nil {
			return s.Fatal(derr)
		}
		return killFailed(s, err)
	}
	s.Log().Info("kill", "what", "PREPARE FROM", "stand_in", true)
	return s.WriteOK(0)
}
