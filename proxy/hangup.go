package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"syscall"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"golang.org/x/sys/unix"

	"github.com/leafproxy/leafproxy/proxy/backend"
	"github.com/leafproxy/leafproxy/proxy/sessionend"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// How a session's end reaches the backend (package proxy/sessionend says
// why, in its doc.go): the session's plan (Session.ending), COM_QUIT, the
// abandoned statement's KILL QUERY and the hang-up watch, as methods of
// the session and the server.

// comQuit is a COM_QUIT packet.
var comQuit = sessionend.ComQuit

// What a session's goroutine does with its backend connection when it
// ends (Session.ending).
const (
	endClose   = sessionend.Close   // close it as it is (the client left without quitting, the backend failed)
	endQuit    = sessionend.Quit    // between commands: COM_QUIT first, as a client that quits
	endAbandon = sessionend.Abandon // the client's connection failed mid-command: stop the statement too
)

// finish ends the session's connections as s.ending says.
func (s *Session) finish() {
	switch s.ending {
	case endQuit:
		s.quitBackend()
	case endAbandon:
		s.abandon()
	}
	s.closeConns()
}

// quitBackend sends COM_QUIT on the backend connection (between commands:
// nothing is buffered or held for it).
func (s *Session) quitBackend() {
	s.mu.Lock()
	bc := s.bconn
	s.mu.Unlock()
	if bc == nil || s.closing.Load() || s.isAbandoned() {
		return
	}
	_ = bc.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = bc.Write(sessionend.QuitPacket(s.b))
}

// abandon stops the statement the session's backend thread runs for a
// client that has gone: KILL QUERY on a side connection, in the
// background, and the backend connection is cut (the session then ends
// on the error). Only the first call acts.
func (s *Session) abandon() {
	if !s.markAbandoned() {
		return
	}
	s.mu.Lock()
	acct := s.account
	s.mu.Unlock()
	tid := s.threadID.Load()
	s.log.Info("client went away during a command: stopping its statement on the backend", "backend_thread", tid)
	go func() {
		err := s.srv.killQuery(acct, tid)
		var me *mysql.MyError
		if err != nil && !(errors.As(err, &me) && me.Code == mysql.ER_NO_SUCH_THREAD) { // 1094: it ended meanwhile
			s.log.Warn("could not kill the statement of a client that went away; the backend stops it when it notices the closed connection",
				"backend_thread", tid, "err", oneLine(err))
		}
	}()
	s.cutBackend()
}

// abandonSoon is abandon for a command whose client has just gone, once
// the command has run sessionend.HangupArm: a statement that ends sooner completes,
// as it would had its client waited (a write sent just before a close).
func (s *Session) abandonSoon() {
	start := s.since.Load()
	wait := time.Duration(start + int64(sessionend.HangupArm) - time.Now().UnixNano())
	if wait <= 0 {
		s.abandon()
		return
	}
	time.AfterFunc(wait, func() {
		if !s.idle.Load() && s.since.Load() == start {
			s.abandon()
		}
	})
}

// cutBackend closes the backend connection from any goroutine; the
// session then ends on the error.
func (sh *sessionShared) cutBackend() {
	sh.mu.Lock()
	if sh.bconn != nil {
		sh.bconn.Close()
	}
	if ln := sh.loopSockets; ln != nil {
		ln.ShutdownBackend()
	}
	sh.mu.Unlock()
}

// killQuery runs KILL QUERY tid on a connection of its own, logged in as
// acct's backend user, and quits it.
func (srv *Server) killQuery(acct Account, tid uint32) error {
	timeout := srv.cfg.Backend.ConnectTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(srv.baseCtx, timeout)
	defer cancel()
	bc, err := srv.connectBackend(ctx, backend.Login{User: acct.BackendUser, Password: acct.BackendPassword, Charset: 45})
	if err != nil {
		return err
	}
	defer bc.Conn.Close()
	return sessionend.KillQuery(bc.Conn, timeout, tid)
}

// armHangupWatch makes sure the hang-up watch runs (sessionend.Watch):
// the session's goroutine is about to serve a command.
func (srv *Server) armHangupWatch() {
	if srv.hangupOn.Load() || !srv.hangupOn.CompareAndSwap(false, true) {
		return
	}
	go sessionend.Watch(&srv.hangupOn, (*hangupSessions)(srv), srv.done)
}

// hangupSessions are the server's sessions as the hang-up watch sees them.
type hangupSessions Server

// Busy appends to buf the sessions with a command under way.
func (hs *hangupSessions) Busy(buf []sessionend.Session) []sessionend.Session {
	srv := (*Server)(hs)
	srv.mu.Lock()
	for _, s := range srv.sessions {
		if !s.idle.Load() {
			buf = append(buf, (*hangupSession)(s))
		}
	}
	srv.mu.Unlock()
	return buf
}

// hangupSession is a session as the hang-up watch sees it.
type hangupSession Session

// LookForHangup looks at the client socket of a session on its own
// goroutine (cconn is nil while a loop serves the session).
func (hs *hangupSession) LookForHangup(now int64) (busy, gone bool) {
	s := (*Session)(hs)
	if s.isAbandoned() {
		return false, false
	}
	s.mu.Lock()
	if c := s.cconn; c != nil {
		busy = true
		if now-s.since.Load() >= int64(sessionend.HangupArm) {
			gone = s.hup.gone(c)
		}
	}
	s.mu.Unlock()
	return busy, gone
}

// Abandon stops the session's statement (Session.abandon).
func (hs *hangupSession) Abandon() { (*Session)(hs).abandon() }

// hangupPeeker looks at a client socket for the hang-up watch.
type hangupPeeker struct {
	conn net.Conn
	fd   *fdLook
}

// gone reports whether the client of c has closed its side and sent
// nothing more (pipelined commands still run, as the server would run
// them); for TLS any close counts (its close_notify comes first).
func (h *hangupPeeker) gone(c net.Conn) bool {
	if h.conn != c {
		h.conn, h.fd = c, newFDLook(c)
	}
	return h.fd.hungUp()
}

// fdLook looks at a client socket without reading from it, blocking or
// touching deadlines (hangup_linux.go).
type fdLook struct {
	rc     syscall.RawConn
	fn     func(uintptr) // look, bound once
	tls    bool
	gone   bool
	poll   [1]unix.PollFd // look's ppoll(2) argument, kept to allocate nothing per look
	noWait unix.Timespec  // zero: ppoll does not wait
}

// newFDLook returns nil for a connection that is not a socket (a test's
// pipe): such a client is never seen to hang up.
func newFDLook(c net.Conn) *fdLook {
	l := &fdLook{}
	if tc, ok := c.(*tls.Conn); ok {
		c, l.tls = tc.NetConn(), true
	}
	if bc, ok := c.(*wire.BufferedConn); ok { // TLS set up over the handshake's reader
		c = bc.Conn
	}
	rc, ok := wire.PlainSocket(c)
	if !ok {
		return nil
	}
	l.rc, l.fn = rc, l.look
	return l
}

func (l *fdLook) hungUp() bool {
	if l == nil {
		return false
	}
	l.gone = false
	if err := l.rc.Control(l.fn); err != nil {
		return false // closed here: the session is ending anyway
	}
	return l.gone
}

// emptyFD reports whether a read from fd would meet the end of the stream:
// one recv(MSG_PEEK|MSG_DONTWAIT) of one byte returning 0.
func emptyFD(fd uintptr) bool {
	var b [1]byte
	n, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
	return err == nil && n == 0
}
