package kill

import (
	"github.com/leafproxy/leafproxy/internal/killsql"
)

// KILL among the statements of a multi-statement text, with users
// configured (sessions share backend accounts, so ids stay mapped as in
// kill.go): each KILL n in the text is mapped in place before the text
// goes on (to the interceptor, then the backend), n replaced by the
// backend thread id of a session this one may kill (mayKill: its greeting
// id or its backend thread id), any other n by the server's own 1094;
// what cannot be mapped before the text runs is refused as a whole. How
// the text is read and rewritten is killsql.MapMulti's.

// mapMultiKill returns the text q with its KILLs mapped, or a refusal
// (non-empty) to answer with 1235.
func mapMultiKill(s Session, q []byte) ([]byte, string) {
	out, n, refuse := killsql.MapMulti(q, func(id uint32) (uint32, bool) {
		target := s.Lookup(id)
		if !mayKill(s, target) {
			return 0, false
		}
		return target.ThreadID(), true
	})
	if refuse != "" {
		return nil, refuse
	}
	s.Log().Info("kill", "what", "in a multi-statement text", "statements", n)
	return out, ""
}
