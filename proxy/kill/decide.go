package kill

import (
	"context"
	"encoding/binary"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/internal/killsql"
	"github.com/leafproxy/leafproxy/internal/sqltext"
)

// Whether a command is a KILL the proxy must act on, and which way it is
// carried out, is decided here and nowhere else (Decide): package proxy's
// command paths ask once and hand the answer to Run. How each way is
// carried out stays in its own file: relay.go (backend-account mode),
// kill.go (ids mapped to the proxy's sessions), stmt.go (prepared KILL),
// dynamic.go (PREPARE ... FROM a KILL), multi.go (KILLs in a
// multi-statement text).

// comStmtBulkExecute is MariaDB's COM_STMT_BULK_EXECUTE.
const comStmtBulkExecute = 0xFA

// killWay is how a command that is (or holds) a KILL is carried out.
type killWay uint8

const (
	// killNone: no KILL the proxy acts on; the command goes on as any
	// other (to the interceptor, then the backend).
	killNone killWay = iota
	// killRelay: backend-account mode, a lone KILL [HARD|SOFT]
	// [CONNECTION] n or COM_PROCESS_KILL: relayed as written, the client
	// of an idle session on thread n closed once the backend accepts it
	// (relayKill). req.ID is n.
	killRelay
	// killMap: with users, a KILL the proxy carries out itself, its id
	// mapped to one of its sessions (killMapped); validated says the
	// backend has read the statement already (a COM_PROCESS_KILL, a
	// prepared KILL's execute).
	killMap
	// killPrepare: with users, a COM_STMT_PREPARE of a KILL: prepared on
	// the backend and remembered, each execute carried out by the proxy
	// (prepareKill).
	killPrepare
	// killExecute: an execute of a KILL the client prepared (executeKill).
	killExecute
	// killDynamic: with users, PREPARE name FROM '<KILL>' as one
	// statement: sent, then name replaced by a stand-in
	// (prepareDynamicKill). req.PrepareName is name.
	killDynamic
	// killMulti: with users, KILLs among the statements of a
	// multi-statement text: mapped in place, then the text goes on
	// (mapMultiKill).
	killMulti
	// killRefuse: answered with the ERR code, state, msg and nothing
	// relayed.
	killRefuse
)

// Decision is Decide's answer for one command: a plain value, which Run
// carries out.
type Decision struct {
	way       killWay
	req       killsql.Req
	validated bool   // killMap: the backend has read the statement (no validateKill)
	stmt      *Stmt  // killExecute: the prepared KILL
	code      uint16 // killRefuse: the ERR to answer
	state     string
	msg       string
}

// Messages of refusals decided here (killsql's own come in Req.Refuse).
const (
	killMalformed = "Malformed communication packet"
	killBulk      = "leafproxy: a prepared KILL cannot be bulk executed; execute it once per id"
)

// None says the command is no KILL the proxy acts on: it goes on as any
// other.
func (d Decision) None() bool { return d.way == killNone }

// Decide says whether pkt (a command, command byte first) is a KILL the
// proxy must act on and which way it is carried out. c is the class of a
// COM_QUERY's or COM_STMT_PREPARE's text (unused for other commands);
// relayed: the session is in backend-account mode; multi: its client
// negotiated multi-statements; prepared: the KILL the client prepared as
// the statement pkt names (State.Lookup), or nil. It sends nothing, waits
// for nothing and changes no state, so an event loop may ask; carrying
// the answer out is Run's.
//
// In backend-account mode (relay.go) every KILL is the backend's:
// only a lone KILL n by number (and COM_PROCESS_KILL) is marked, to close
// an idle target's client after the backend accepts it; a KILL in any
// other form, prepared or in PREPARE ... FROM, is relayed as any
// statement. With users every form is the proxy's (kill.go).
func Decide(pkt []byte, c sqltext.Class, relayed, multi bool, prepared *Stmt) Decision {
	switch pkt[0] {
	case mysql.COM_QUERY:
		if relayed {
			return decideRelayedKill(pkt[1:], c)
		}
		return decideTextKill(pkt[1:], c, multi)
	case mysql.COM_STMT_PREPARE:
		if relayed {
			return Decision{}
		}
		k, ok := killsql.ParsePrepared(pkt[1:], c)
		switch {
		case ok:
			return Decision{way: killPrepare, req: k}
		case k.Refuse != "":
			return refuseKill(mysql.ER_NOT_SUPPORTED_YET, "42000", k.Refuse)
		}
	case mysql.COM_STMT_EXECUTE:
		if prepared != nil {
			return Decision{way: killExecute, stmt: prepared}
		}
	case comStmtBulkExecute:
		if prepared != nil {
			return refuseKill(mysql.ER_NOT_SUPPORTED_YET, "42000", killBulk)
		}
	case mysql.COM_PROCESS_KILL:
		if len(pkt) < 5 {
			return refuseKill(mysql.ER_MALFORMED_PACKET, "HY000", killMalformed)
		}
		id := uint64(binary.LittleEndian.Uint32(pkt[1:5]))
		if relayed {
			return Decision{way: killRelay, req: killsql.Req{ID: id}}
		}
		return Decision{way: killMap, req: killsql.Req{ID: id, Connection: true}, validated: true}
	}
	return Decision{}
}

// decideRelayedKill is Decide for a COM_QUERY text in backend-account
// mode: a lone KILL [CONNECTION] n by number is relayed by relayKill,
// anything else as any statement.
func decideRelayedKill(q []byte, c sqltext.Class) Decision {
	if k, ok := killsql.Parse(q, c, false); ok && k.Connection && k.Expr == nil && !k.User {
		return Decision{way: killRelay, req: k}
	}
	return Decision{}
}

// decideTextKill is Decide for a COM_QUERY text with users; multi: the
// client negotiated multi-statements.
func decideTextKill(q []byte, c sqltext.Class, multi bool) Decision {
	k, ok := killsql.Parse(q, c, multi)
	switch {
	case ok:
		return Decision{way: killMap, req: k}
	case k.PrepareName != nil:
		return Decision{way: killDynamic, req: k}
	case k.Refuse != "":
		return refuseKill(mysql.ER_NOT_SUPPORTED_YET, "42000", k.Refuse)
	case k.Multi:
		return Decision{way: killMulti}
	}
	return Decision{}
}

func refuseKill(code uint16, state, msg string) Decision {
	return Decision{way: killRefuse, code: code, state: state, msg: msg}
}

// Run carries out d (not None) for the command pkt on the session s.
// done says the command has been answered (or the session must end, err
// != nil); otherwise (killMulti) the command goes on as next, its text
// with the KILLs mapped.
func Run(ctx context.Context, s Session, pkt []byte, d Decision) (next []byte, done bool, err error) {
	switch d.way {
	case killRefuse:
		return nil, true, s.WriteErr(d.code, d.state, d.msg)
	case killRelay, killMap:
		if err := s.MayWait(); err != nil {
			return nil, true, err
		}
		if d.way == killMap {
			return nil, true, killMapped(ctx, s, d.req, d.validated)
		}
		return nil, true, relayKill(s, pkt, d.req.ID)
	case killPrepare:
		return nil, true, prepareKill(s, pkt, d.req)
	case killExecute:
		return nil, true, executeKill(ctx, s, d.stmt, pkt)
	case killDynamic:
		return nil, true, prepareDynamicKill(ctx, s, pkt[1:], d.req.PrepareName)
	case killMulti:
		q, refuse := mapMultiKill(s, pkt[1:])
		if refuse != "" {
			return nil, true, s.WriteErr(mysql.ER_NOT_SUPPORTED_YET, "42000", refuse)
		}
		pkt = append([]byte{mysql.COM_QUERY}, q...)
		s.Reclassify(pkt[1:]) // the text the interceptor and the backend see
		return pkt, false, nil
	}
	return pkt, false, nil
}
