package sessionend

import (
	"sync/atomic"
	"time"
)

// The hang-up watch of sessions on their own goroutines. One goroutine per
// server, running only while such a session has a command under way: it
// wakes every HangupTick and looks at the client socket of each command
// that has run for HangupArm or longer (nothing is done per command but
// one atomic load, where the server arms the watch). A statement whose
// client goes away is stopped once it has run HangupArm, on an event
// loop too (Session.abandonSoon).
const (
	HangupTick = 100 * time.Millisecond
	HangupArm  = 100 * time.Millisecond
)

// Session is a session as the hang-up watch sees it.
type Session interface {
	// LookForHangup looks at the session's client socket at now (unix
	// nanos): busy says the watch serves it (a command under way on its
	// own goroutine, not yet abandoned), gone that its client has gone
	// and the command has run HangupArm or longer.
	LookForHangup(now int64) (busy, gone bool)
	// Abandon stops the session's statement: its client has gone.
	Abandon()
}

// Sessions are the server's sessions as the watch sees them.
type Sessions interface {
	// Busy appends to buf the sessions with a command under way.
	Busy(buf []Session) []Session
}

// Watch runs the hang-up watch until done is closed or no session has a
// command under way; on says it runs (the server sets it before it starts
// the watch, once per run: the caller's CompareAndSwap from false).
func Watch(on *atomic.Bool, sessions Sessions, done <-chan struct{}) {
	t := time.NewTicker(HangupTick)
	defer t.Stop()
	var buf []Session
	for {
		select {
		case <-t.C:
		case <-done:
			on.Store(false)
			return
		}
		var busy bool
		if buf, busy = lookForHangups(sessions, buf); busy {
			continue
		}
		// Nothing under way: stop, unless a command began meanwhile (its
		// session saw the watch running and did not start another).
		on.Store(false)
		if buf, busy = lookForHangups(sessions, buf); !busy || !on.CompareAndSwap(false, true) {
			return
		}
	}
}

// lookForHangups abandons the command of every session on its own
// goroutine whose client has gone; busy reports that some such session
// has a command under way.
func lookForHangups(sessions Sessions, buf []Session) (_ []Session, busy bool) {
	buf = sessions.Busy(buf[:0])
	now := time.Now().UnixNano()
	for _, s := range buf {
		b, gone := s.LookForHangup(now)
		busy = busy || b
		if gone {
			s.Abandon()
		}
	}
	clear(buf)
	return buf, busy
}
