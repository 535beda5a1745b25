package proxy

import (
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// What waits unread in sockets, for tests that wait for the proxy to have
// read something, or to have stopped reading.

// backendUnread is how many bytes wait unread in the backend socket of
// the one session e's loop serves.
func backendUnread(t testing.TB, e *env) int {
	t.Helper()
	e.srv.mu.Lock()
	defer e.srv.mu.Unlock()
	for _, s := range e.srv.sessions {
		s.mu.Lock()
		ln := s.loopSockets
		n := 0
		if ln != nil {
			n, _ = unix.IoctlGetInt(ln.backendFD, unix.SIOCINQ)
		}
		s.mu.Unlock()
		return n
	}
	return 0
}

// clientUnread is how many bytes wait unread in c's socket.
func clientUnread(t testing.TB, c *rawClient) int {
	t.Helper()
	rc, err := c.l.conn.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	_ = rc.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.SIOCINQ) })
	return n
}

// pendingUnread counts the handshakes e's proxy holds and those whose
// sockets still have bytes it has not read.
func pendingUnread(e *env) (held, unread int) {
	e.srv.mu.Lock()
	defer e.srv.mu.Unlock()
	for _, conns := range e.srv.pending.byHost {
		for _, c := range conns {
			held++
			rc, err := c.(syscall.Conn).SyscallConn()
			if err != nil {
				continue
			}
			n := 0
			_ = rc.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.SIOCINQ) })
			if n > 0 {
				unread++
			}
		}
	}
	return held, unread
}
