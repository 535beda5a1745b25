package proxy

import (
	"errors"
	"fmt"
	"time"

	"github.com/leafproxy/leafproxy/proxy/sessionend"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// endIfAbandoned ends a session whose client went away during the command
// just answered (abandon, hangup.go): its backend connection runs nothing more.
func (s *Session) endIfAbandoned() bool {
	if !s.isAbandoned() {
		return false
	}
	s.log.Info("session closed: the client went away during a command")
	return true
}

// endOnClientError ends the session on err, which ended the wait for the
// client's next command or its read (sessionend.ClientError).
func (s *Session) endOnClientError(err error) {
	s.ending, s.left = sessionend.ClientError(s.log, err, s.srv.draining.Load())
}

// endOnError reports a fatal error (sessionend.CommandError): a lost
// backend gets the client an ERR packet (1158) before its connection
// closes.
func (s *Session) endOnError(err error) {
	if errors.Is(err, errQuit) {
		s.log.Debug("session closed: client quit")
		s.ending = endQuit
		return
	}
	v := sessionend.CommandError(s.log, err, sessionend.Facts{Abandoned: s.isAbandoned(), Closing: s.closing.Load(),
		Unanswered: s.c.Seq == s.cmdSeq, Backend: s.srv.cfg.Backend.Addr})
	if v.Abandon {
		s.ending, s.left = endAbandon, v.Left
	}
	if v.LostBackend {
		if s.c.Conn != nil { // on a loop the write does not block
			_ = s.c.Conn.SetWriteDeadline(time.Now().Add(2 * time.Second))
		}
		s.countErr(errBackendLost)
		_ = s.c.WritePacket(wire.ErrPacket(errBackendLost, "08S01", fmt.Sprintf("leafproxy: lost connection to backend MySQL server at '%s' during query", s.srv.cfg.Backend.Addr)))
		_ = s.c.Flush()
	}
}

// pokeIfIdle ends the wait for the next command of an idle session on its
// own goroutine (Shutdown; loops are asked to drain theirs).
func (sh *sessionShared) pokeIfIdle() {
	if sh.idle.Load() {
		sh.mu.Lock()
		if sh.cconn != nil {
			_ = sh.cconn.SetReadDeadline(time.Unix(1, 0))
		}
		sh.mu.Unlock()
	}
}

// closeIfIdle closes the client connection of a session waiting for its
// next command; the session then ends. A busy session is left to relay
// what its backend answers.
func (sh *sessionShared) closeIfIdle() {
	if sh.idle.Load() {
		sh.mu.Lock()
		if sh.cconn != nil {
			sh.cconn.Close()
		}
		if ln := sh.loopSockets; ln != nil {
			ln.ShutdownClient()
		}
		sh.mu.Unlock()
	}
}

// forceClose cuts both connections; the session then ends.
func (s *Session) forceClose() {
	s.closing.Store(true)
	s.closeConns()
}

func (sh *sessionShared) closeConns() {
	sh.mu.Lock()
	if sh.cconn != nil {
		sh.cconn.Close()
	}
	if sh.bconn != nil {
		sh.bconn.Close()
	}
	if ln := sh.loopSockets; ln != nil {
		ln.ShutdownClient()
		ln.ShutdownBackend()
	}
	sh.mu.Unlock()
}

// info is the session as admin views show it; safe from any goroutine.
func (s *Session) info() SessionInfo {
	cmd := "Query"
	if s.idle.Load() {
		cmd = "Sleep"
	}
	db := ""
	if p := s.dbShared.Load(); p != nil {
		db = *p
	}
	return SessionInfo{ID: s.clientID, ThreadID: s.threadID.Load(), User: s.userName(), Remote: s.remote,
		DB: db, Command: cmd, Since: time.Unix(0, s.since.Load())}
}

// userName is the session's proxy user for other goroutines (a change user
// replaces it under s.mu).
func (s *Session) userName() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.user
}
