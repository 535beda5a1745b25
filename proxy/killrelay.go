package proxy

import (
	"errors"
	"math"
	"os"
	"time"
)

// KILL in backend-account mode (no users configured). Every session is
// logged in to the backend as the client's own account and greeted with
// its backend thread id (passThroughHandshake), so the id a client knows
// is the one CONNECTION_ID() and the processlist show, and a KILL means
// what it means without the proxy: every form (text, prepared, in a
// multi-statement text, in PREPARE ... FROM or EXECUTE IMMEDIATE,
// COM_PROCESS_KILL, KILL USER, KILL QUERY ID) is relayed untouched and the
// backend's privileges decide (1094, 1095 as directly). The proxy maps
// nothing and refuses nothing (kill.go is for sessions of configured
// users, which share backend accounts).
//
// What the proxy adds is only what the server's own connection would do:
// a killed session's client loses its connection. A lone
// KILL [HARD|SOFT] [CONNECTION] n, or COM_PROCESS_KILL, that the backend
// accepts closes the client of the idle session running on thread n
// before the killer hears OK (as killThread does); a session whose
// response ends in 1927 (Connection was killed) is closed once its backend
// connection has ended; any other killed session is closed when the proxy
// sees its backend connection end (an event loop at once, a session's own
// goroutine within backendWatch, or at its next command).

// erConnectionKilled is ER_CONNECTION_KILLED: the server's last word to a
// connection killed while it ran a command (its own KILL included).
const erConnectionKilled = 1927

// relayKill relays a KILL (a COM_QUERY of one KILL statement or a
// COM_PROCESS_KILL) as written; tid is the thread it names, when the text
// names one by number (0: not known).
func (s *Session) relayKill(pkt []byte, kind int, a afterAction, tid uint64) error {
	ok, err := s.exec.relay(s, pkt, kind, a)
	if err != nil {
		return err
	}
	if ok && tid > 0 && tid <= math.MaxUint32 {
		if target := s.srv.lookupThread(uint32(tid)); target != nil && target != s {
			target.closeIfIdle()
		}
	}
	return s.setFatal(s.c.Flush())
}

// relayedErr notes a relayed ERR packet (head: its first bytes): counted,
// and a 1927 marks the session's backend connection as about to end.
func (s *Session) relayedErr(head []byte) {
	s.countRelayedErr()
	s.countErrPacket(head)
	if len(head) >= 3 && uint16(head[1])|uint16(head[2])<<8 == erConnectionKilled {
		s.kills.markConnKilled()
	}
}

// killedWait bounds how long a session that heard 1927 waits for its
// backend connection to end (the server closes it right after the ERR; a
// SIGNAL of errno 1927 closes nothing and costs this wait).
const killedWait = 200 * time.Millisecond

// endIfKilled ends a session whose last response was 1927 once its backend
// connection has ended, so its client sees the connection close as it
// would directly.
func (s *Session) endIfKilled() bool {
	if !s.kills.takeConnKilled() {
		return false
	}
	if s.b.Buffered() > 0 {
		return false
	}
	_ = s.b.Conn.SetReadDeadline(time.Now().Add(killedWait))
	err := s.b.Peek()
	_ = s.b.Conn.SetReadDeadline(time.Time{})
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		return false // still open (or it sent more: the idle watch reads it)
	}
	s.log.Info("session closed: its backend connection was killed")
	s.ending = endClose
	return true
}
