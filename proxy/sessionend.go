package proxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/leafproxy/leafproxy/proxy/wire"
)

// endIfAbandoned ends a session whose client went away during the command
// just answered (hangup.go): its backend connection runs nothing more.
func (s *Session) endIfAbandoned() bool {
	if !s.isAbandoned() {
		return false
	}
	s.log.Info("session closed: the client went away during a command")
	return true
}

func (s *Session) endOnClientError(err error) {
	var gone *errBackendClosedIdle
	s.ending = endQuit // between commands, unless the client just left
	if leftWithoutQuit(err) {
		s.ending, s.left = endClose, true
	}
	switch {
	case errors.As(err, &gone):
		s.ending = endClose
		s.log.Info("session closed: backend closed its connection while the client was idle", "reason", gone.reason)
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		s.log.Debug("session closed by client")
	case errors.Is(err, os.ErrDeadlineExceeded) && s.srv.draining.Load():
		s.log.Debug("session closed: proxy shutting down")
	case errors.Is(err, os.ErrDeadlineExceeded):
		s.log.Info("session closed: idle timeout")
	default:
		s.log.Info("session closed: bad packet from client", "err", oneLine(err))
	}
}

// endOnError reports a fatal error: a lost backend gets the client an ERR
// packet (1158) before its connection closes.
func (s *Session) endOnError(err error) {
	if errors.Is(err, errQuit) {
		s.log.Debug("session closed: client quit")
		s.ending = endQuit
		return
	}
	var ie *wire.IOError
	if s.isAbandoned() && !s.closing.Load() {
		// Its client went away mid-command: the statement was killed and
		// the backend connection cut (hangup.go).
		s.log.Info("session closed: the client went away during a command", "err", oneLine(err))
		return
	}
	if errors.As(err, &ie) && ie.Leg == "client" && !s.closing.Load() {
		// The client's connection failed while a command was under way:
		// its statement may still be running (on a loop, lane.endBackend
		// looks).
		s.ending, s.left = endAbandon, leftWithoutQuit(err)
	}
	if errors.As(err, &ie) && ie.Leg == "backend" && !s.closing.Load() && s.c.Seq == s.cmdSeq {
		// Nothing of the answer has reached the client: close, as the
		// server's own connection would have, so the client sees a lost
		// connection (2013) that drivers and pools know to retry, not an
		// error packet they would take as the statement's answer.
		s.log.Warn("backend connection lost before any of the answer was relayed; closing the client connection",
			"backend", s.srv.cfg.Backend.Addr, "err", oneLine(err))
		return
	}
	if errors.As(err, &ie) && ie.Leg == "backend" && !s.closing.Load() {
		s.log.Warn("backend connection lost", "backend", s.srv.cfg.Backend.Addr, "err", oneLine(err))
		if s.c.Conn != nil { // on a loop the write does not block
			_ = s.c.Conn.SetWriteDeadline(time.Now().Add(2 * time.Second))
		}
		s.countErr(errBackendLost)
		_ = s.c.WritePacket(wire.ErrPacket(errBackendLost, "08S01", fmt.Sprintf("leafproxy: lost connection to backend MySQL server at '%s' during query", s.srv.cfg.Backend.Addr)))
		_ = s.c.Flush()
		return
	}
	if s.closing.Load() {
		s.log.Info("session closed by proxy shutdown")
		return
	}
	s.log.Info("session closed", "err", oneLine(err))
}

func rootCause(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
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
