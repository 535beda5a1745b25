package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strconv"
	"syscall"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"golang.org/x/sys/unix"

	"github.com/leafproxy/leafproxy/proxy/wire"
)

// How a session's end reaches the backend: the backend sees what the
// client did.
//
//   - The client quits (COM_QUIT), or the proxy closes the session between
//     commands for its own reasons (limits.idle_timeout, shutdown, a
//     malformed command): the proxy sends COM_QUIT before it closes the
//     backend connection, so the server counts no Aborted_clients and logs
//     no "Aborted connection" warning.
//   - The client closes its connection without COM_QUIT (a crash, a killed
//     process, a pool that drops sockets): the backend connection is
//     closed without it too, and the server counts the abort it would
//     have counted directly.
//   - The client goes away while its command runs on the backend: once the
//     command has run hangupArm, the statement is stopped with KILL QUERY
//     <thread> on a side connection (logged in as the session's backend
//     account, which owns the thread) and the backend connection is cut,
//     as the vanished client's own would be; it never runs another
//     command. (Directly, MariaDB notices such a client only when it next
//     writes to it, or every few seconds in SLEEP: a long report query
//     would go on.) On an event loop the lane sees the hang-up (EPOLLRDHUP)
//     while the command is under way; a session on its own goroutine is
//     blocked reading the backend, so a watch looks at its client socket.
//   - The backend failed, or the session is cut off mid-command (forced
//     shutdown): the connection is just closed.

// comQuit is a COM_QUIT packet.
var comQuit = [5]byte{1, 0, 0, 0, mysql.COM_QUIT}

// quitPacket is COM_QUIT as the backend leg l must frame it: in a stored
// compressed frame (sequence 0, a new command) when the leg compresses.
func quitPacket(l *wire.Leg) []byte {
	if l == nil || l.Comp == nil {
		return comQuit[:]
	}
	return append(wire.AppendFrameHeader(make([]byte, 0, 12), len(comQuit), 0, 0), comQuit[:]...)
}

// What a session's goroutine does with its backend connection when it
// ends (Session.ending).
const (
	endClose   = iota // close it as it is (the client left without quitting, the backend failed)
	endQuit           // between commands: COM_QUIT first, as a client that quits
	endAbandon        // the client's connection failed mid-command: stop the statement too
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
	_, _ = bc.Write(quitPacket(s.b))
}

// leftWithoutQuit reports a client connection that ended without COM_QUIT
// (closed, reset, cut mid-packet): the backend connection then ends the
// same way.
func leftWithoutQuit(err error) bool {
	var errno unix.Errno
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &errno)
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
// the command has run hangupArm: a statement that ends sooner completes,
// as it would had its client waited (a write sent just before a close).
func (s *Session) abandonSoon() {
	start := s.since.Load()
	wait := time.Duration(start + int64(hangupArm) - time.Now().UnixNano())
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
	bc, err := srv.connectBackend(ctx, backendLogin{user: acct.BackendUser, password: acct.BackendPassword, charset: 45})
	if err != nil {
		return err
	}
	defer bc.conn.Close()
	_ = bc.conn.SetDeadline(time.Now().Add(timeout))
	l := wire.NewLeg("backend", bc.conn, 4<<10, 4<<10)
	if err := l.WriteCommand(append([]byte{mysql.COM_QUERY}, "KILL QUERY "+strconv.FormatUint(uint64(tid), 10)...)); err != nil {
		return err
	}
	if err := l.Flush(); err != nil {
		return err
	}
	p, err := l.ReadPacket(nil, 64<<10)
	if err != nil {
		return err
	}
	_, _ = bc.conn.Write(comQuit[:])
	if wire.IsErr(p) {
		return wire.ParseErr(p)
	}
	return nil
}

// The hang-up watch of sessions on their own goroutines. One goroutine per
// server, running only while such a session has a command under way: it
// wakes every hangupTick and looks at the client socket of each command
// that has run for hangupArm or longer (nothing is done per command but
// one atomic load, Server.armHangupWatch). A statement whose client goes
// away is stopped once it has run hangupArm, on a loop too (abandonSoon).
const (
	hangupTick = 100 * time.Millisecond
	hangupArm  = 100 * time.Millisecond
)

// armHangupWatch makes sure the watch runs: the session's goroutine is
// about to serve a command.
func (srv *Server) armHangupWatch() {
	if srv.hangupOn.Load() || !srv.hangupOn.CompareAndSwap(false, true) {
		return
	}
	go srv.watchHangups()
}

func (srv *Server) watchHangups() {
	t := time.NewTicker(hangupTick)
	defer t.Stop()
	var buf []*Session
	for {
		select {
		case <-t.C:
		case <-srv.done:
			srv.hangupOn.Store(false)
			return
		}
		var busy bool
		if buf, busy = srv.lookForHangups(buf); busy {
			continue
		}
		// Nothing under way: stop, unless a command began meanwhile (its
		// session saw the watch running and did not start another).
		srv.hangupOn.Store(false)
		if buf, busy = srv.lookForHangups(buf); !busy || !srv.hangupOn.CompareAndSwap(false, true) {
			return
		}
	}
}

// lookForHangups abandons the command of every session on its own
// goroutine whose client has gone; busy reports that some such session
// has a command under way.
func (srv *Server) lookForHangups(buf []*Session) (_ []*Session, busy bool) {
	buf = buf[:0]
	srv.mu.Lock()
	for _, s := range srv.sessions {
		if !s.idle.Load() {
			buf = append(buf, s)
		}
	}
	srv.mu.Unlock()
	now := time.Now().UnixNano()
	for _, s := range buf {
		if s.isAbandoned() {
			continue
		}
		s.mu.Lock()
		c := s.cconn // nil while a loop serves the session
		gone := false
		if c != nil {
			busy = true
			if now-s.since.Load() >= int64(hangupArm) {
				gone = s.hup.gone(c)
			}
		}
		s.mu.Unlock()
		if gone {
			s.abandon()
		}
	}
	clear(buf)
	return buf, busy
}

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
