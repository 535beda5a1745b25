package proxy

import (
	"context"
	"encoding/binary"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/internal/killsql"
	"github.com/leafproxy/leafproxy/internal/sqltext"
)

// Whether a command is a KILL the proxy must act on, and which way it is
// carried out, is decided here and nowhere else (decideKill): the
// command paths (dispatch.go) ask once and hand the answer to runKill.
// How each way is carried out stays in its own file: killrelay.go
// (backend-account mode), kill.go (ids mapped to the proxy's sessions),
// killstmt.go (prepared KILL), killdynamic.go (PREPARE ... FROM a KILL),
// killmulti.go (KILLs in a multi-statement text).

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
	// mapped to one of its sessions (Session.kill); validated says the
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

// killDecision is decideKill's answer for one command.
type killDecision struct {
	way       killWay
	req       killsql.Req
	validated bool      // killMap: the backend has read the statement (no validateKill)
	stmt      *killStmt // killExecute: the prepared KILL
	code      uint16    // killRefuse: the ERR to answer
	state     string
	msg       string
}

// Messages of refusals decided here (killsql's own come in Req.Refuse).
const (
	killMalformed = "Malformed communication packet"
	killBulk      = "leafproxy: a prepared KILL cannot be bulk executed; execute it once per id"
)

// decideKill says whether pkt (a command, command byte first) is a KILL
// the proxy must act on and which way it is carried out. c is the class
// of a COM_QUERY's or COM_STMT_PREPARE's text (unused for other
// commands). It sends nothing, waits for nothing and changes no state, so
// an event loop may ask; carrying the answer out is runKill's.
//
// In backend-account mode (killrelay.go) every KILL is the backend's:
// only a lone KILL n by number (and COM_PROCESS_KILL) is marked, to close
// an idle target's client after the backend accepts it; a KILL in any
// other form, prepared or in PREPARE ... FROM, is relayed as any
// statement. With users every form is the proxy's (kill.go).
func (s *Session) decideKill(pkt []byte, c sqltext.Class) killDecision {
	switch pkt[0] {
	case mysql.COM_QUERY:
		if s.account.backendAuth {
			return decideRelayedKill(pkt[1:], c)
		}
		return decideTextKill(pkt[1:], c, s.caps&mysql.CLIENT_MULTI_STATEMENTS != 0)
	case mysql.COM_STMT_PREPARE:
		if s.account.backendAuth {
			return killDecision{}
		}
		k, ok := killsql.ParsePrepared(pkt[1:], c)
		switch {
		case ok:
			return killDecision{way: killPrepare, req: k}
		case k.Refuse != "":
			return refuseKill(mysql.ER_NOT_SUPPORTED_YET, "42000", k.Refuse)
		}
	case mysql.COM_STMT_EXECUTE:
		if ks := s.killStmtFor(pkt); ks != nil {
			return killDecision{way: killExecute, stmt: ks}
		}
	case comStmtBulkExecute:
		if s.killStmtFor(pkt) != nil {
			return refuseKill(mysql.ER_NOT_SUPPORTED_YET, "42000", killBulk)
		}
	case mysql.COM_PROCESS_KILL:
		if len(pkt) < 5 {
			return refuseKill(mysql.ER_MALFORMED_PACKET, "HY000", killMalformed)
		}
		id := uint64(binary.LittleEndian.Uint32(pkt[1:5]))
		if s.account.backendAuth {
			return killDecision{way: killRelay, req: killsql.Req{ID: id}}
		}
		return killDecision{way: killMap, req: killsql.Req{ID: id, Connection: true}, validated: true}
	}
	return killDecision{}
}

// decideRelayedKill is decideKill for a COM_QUERY text in backend-account
// mode: a lone KILL [CONNECTION] n by number is relayed by relayKill,
// anything else as any statement.
func decideRelayedKill(q []byte, c sqltext.Class) killDecision {
	if k, ok := killsql.Parse(q, c, false); ok && k.Connection && k.Expr == nil && !k.User {
		return killDecision{way: killRelay, req: k}
	}
	return killDecision{}
}

// decideTextKill is decideKill for a COM_QUERY text with users; multi: the
// client negotiated multi-statements.
func decideTextKill(q []byte, c sqltext.Class, multi bool) killDecision {
	k, ok := killsql.Parse(q, c, multi)
	switch {
	case ok:
		return killDecision{way: killMap, req: k}
	case k.PrepareName != nil:
		return killDecision{way: killDynamic, req: k}
	case k.Refuse != "":
		return refuseKill(mysql.ER_NOT_SUPPORTED_YET, "42000", k.Refuse)
	case k.Multi:
		return killDecision{way: killMulti}
	}
	return killDecision{}
}

func refuseKill(code uint16, state, msg string) killDecision {
	return killDecision{way: killRefuse, code: code, state: state, msg: msg}
}

// runKill carries out d (not killNone) for the command pkt. done says the
// command has been answered (or the session must end, err != nil);
// otherwise (killMulti) the command goes on as next, its text with the
// KILLs mapped.
func (s *Session) runKill(ctx context.Context, pkt []byte, d killDecision) (next []byte, done bool, err error) {
	switch d.way {
	case killRefuse:
		return nil, true, s.writeErrFlush(d.code, d.state, d.msg)
	case killRelay, killMap:
		if err := s.exec.mayWait(); err != nil {
			return nil, true, err
		}
		if d.way == killMap {
			return nil, true, s.kill(ctx, d.req, d.validated)
		}
		if pkt[0] == mysql.COM_PROCESS_KILL {
			return nil, true, s.relayKill(pkt, respSimple, afterAction{}, d.req.ID)
		}
		return nil, true, s.relayKill(pkt, respResult, s.queryAfter(pkt), d.req.ID)
	case killPrepare:
		return nil, true, s.prepareKill(pkt, d.req)
	case killExecute:
		return nil, true, s.executeKill(ctx, d.stmt, pkt)
	case killDynamic:
		return nil, true, s.prepareDynamicKill(ctx, pkt[1:], d.req.PrepareName)
	case killMulti:
		q, refuse := s.mapMultiKill(pkt[1:])
		if refuse != "" {
			return nil, true, s.writeErrFlush(mysql.ER_NOT_SUPPORTED_YET, "42000", refuse)
		}
		pkt = append([]byte{mysql.COM_QUERY}, q...)
		s.beginClass(pkt[1:]) // the text the interceptor and the backend see
		return pkt, false, nil
	}
	return pkt, false, nil
}
