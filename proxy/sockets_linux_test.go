package proxy

import (
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// What waits unread in sockets, for tests that wait for the proxy to have
// read something, or to have stopped reading.

// heldForClient looks at the one session e's loop serves: the bytes its
// lane holds for the client (its socket did not take them) and those
// waiting unread in its backend socket.
func heldForClient(e *env) (held, unread int) {
	var ln *lane
	e.srv.mu.Lock()
	for _, s := range e.srv.sessions {
		s.mu.Lock()
		ln = s.loopSockets
		s.mu.Unlock()
	}
	e.srv.mu.Unlock()
	if ln == nil {
		return 0, 0
	}
	ln.mu.Lock() // not while a runner handles it
	defer ln.mu.Unlock()
	if ln.gone {
		return 0, 0
	}
	unread, _ = unix.IoctlGetInt(ln.backendFD, unix.SIOCINQ)
	return len(ln.clientPending), unread
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
			rc, err := c.c.(syscall.Conn).SyscallConn()
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
