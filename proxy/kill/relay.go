package kill

import (
	"math"
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
// connection has ended (State.NoteErr, KilledWait: package proxy's
// Session.endIfKilled); any other killed session is closed when the proxy
// sees its backend connection end (an event loop at once, a session's own
// goroutine within idle.BackendWatch, or at its next command).

// erConnectionKilled is ER_CONNECTION_KILLED: the server's last word to a
// connection killed while it ran a command (its own KILL included).
const erConnectionKilled = 1927

// relayKill relays a KILL (a COM_QUERY of one KILL statement or a
// COM_PROCESS_KILL) as written; tid is the thread it names, when the text
// names one by number (0: not known).
func relayKill(s Session, pkt []byte, tid uint64) error {
	ok, err := s.RelayKill(pkt)
	if err != nil {
		return err
	}
	if ok && tid > 0 && tid <= math.MaxUint32 {
		if target := s.LookupThread(uint32(tid)); target != nil && target != s {
			target.CloseIfIdle()
		}
	}
	return s.Flush()
}

// NoteErr notes a relayed ERR packet (head: its first bytes): a 1927 marks
// the session's backend connection as about to end (TakeConnKilled).
func (ks *State) NoteErr(head []byte) {
	if len(head) >= 3 && uint16(head[1])|uint16(head[2])<<8 == erConnectionKilled {
		ks.MarkConnKilled()
	}
}

// KilledWait bounds how long a session that heard 1927 waits for its
// backend connection to end (the server closes it right after the ERR; a
// SIGNAL of errno 1927 closes nothing and costs this wait).
const KilledWait = 200 * time.Millisecond
