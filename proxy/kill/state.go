package kill

import "github.com/leafproxy/leafproxy/internal/killsql"

// State is a session's part of KILL beyond one command: the KILLs its
// client prepared, which the proxy executes itself (stmt.go), and the
// 1927 its last response ended in (relay.go). Owner only; other sessions'
// KILLs reach a session only through its Target. Package proxy holds one
// in each session (Session.kills): its methods keep the prepared KILLs
// (Add, Lookup, Forget, ForgetAll) and the 1927 (MarkConnKilled,
// TakeConnKilled).
type State struct {
	stmts      map[uint32]*Stmt // KILLs the client prepared, by statement id (stmt.go)
	connKilled bool             // the last response relayed ended in 1927 (relay.go)
}

// Has says the client has prepared a KILL (not yet closed or reset).
func (ks *State) Has() bool { return ks.stmts != nil }

// Add records the KILL k the client prepared as statement id.
func (ks *State) Add(id uint32, k killsql.Req) {
	if ks.stmts == nil {
		ks.stmts = map[uint32]*Stmt{}
	}
	ks.stmts[id] = &Stmt{req: k}
}

// Lookup is the KILL prepared as statement id, nil if none.
func (ks *State) Lookup(id uint32) *Stmt { return ks.stmts[id] }

// Forget forgets the prepared KILL id (COM_STMT_CLOSE).
func (ks *State) Forget(id uint32) { delete(ks.stmts, id) }

// ForgetAll forgets every prepared KILL (COM_RESET_CONNECTION).
func (ks *State) ForgetAll() { ks.stmts = nil }

// MarkConnKilled notes that the response just relayed ended in 1927.
func (ks *State) MarkConnKilled() { ks.connKilled = true }

// TakeConnKilled reports, and clears, that the last response ended in 1927.
func (ks *State) TakeConnKilled() bool {
	if !ks.connKilled {
		return false
	}
	ks.connKilled = false
	return true
}
