package proxy

import (
	"fmt"
	"runtime"
	"strings"
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
	ln := onlyLane(e)
	if ln == nil {
		return 0, 0
	}
	ln.Mu.Lock() // not while a runner handles it
	defer rearm(ln, ln.Gone)
	defer ln.Mu.Unlock()
	if ln.Gone {
		return 0, 0
	}
	unread, _ = unix.IoctlGetInt(ln.BackendFD, unix.SIOCINQ)
	return ln.State().ClientPending, unread
}

// rearm, after a test looked at a lane under its lock (gone: as it saw
// it there): a runner that had an event for the lane meanwhile found it
// locked and left it to the holder, which serves what is pending when it
// lets go (eventloop.Runner.serve); this test does not, so the event would wait for
// the next one. Modifying the sockets' registrations has the kernel
// report their readiness again, which brings a runner. The lane's slot,
// generation and descriptors do not change while it is attached.
func rearm(ln *lane, gone bool) {
	if gone || ln.Pend.Load() == 0 {
		return
	}
	ln.Rearm()
}

// clientUnread is how many bytes wait unread in c's socket.
func clientUnread(t testing.TB, c *rawClient) int {
	t.Helper()
	rc, err := c.l.Conn.(syscall.Conn).SyscallConn()
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
	for c := range e.srv.pending.Conns() {
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
	return held, unread
}

// laneState describes the one session e's loop serves, for a failure
// message: what waits in each of its sockets, what the lane holds and
// where it stands, and the loop runners' stacks.
func laneState(e *env) string {
	ln := onlyLane(e)
	if ln == nil {
		return "no session is on a loop"
	}
	if !ln.Mu.TryLock() {
		return "a runner holds the lane; " + runnerStacks()
	}
	defer rearm(ln, ln.Gone)
	defer ln.Mu.Unlock()
	cin, _ := unix.IoctlGetInt(ln.ClientFD, unix.SIOCINQ)
	bin, _ := unix.IoctlGetInt(ln.BackendFD, unix.SIOCINQ)
	st := ln.State()
	return fmt.Sprintf("lane: gone %v attached %v busy %v pend %#x clientReadable %v backendReadable %v clientEOF %v; "+
		"%d bytes unread in its client socket, %d in its backend socket; clientIn %d, backendPending %d, clientPending %d; %s",
		ln.Gone, ln.Attached(), st.Busy, ln.Pend.Load(), st.ClientReadable, st.BackendReadable, st.ClientEOF,
		cin, bin, st.ClientIn, st.BackendPending, st.ClientPending, runnerStacks())
}

// runnerStacks is the stacks of the goroutines in the proxy's event loop.
func runnerStacks() string {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "eventloop.(*Runner)") || strings.Contains(g, "lane.(*Lane)") {
			out = append(out, g)
		}
	}
	return fmt.Sprintf("%d loop goroutines:\n%s", len(out), strings.Join(out, "\n\n"))
}

// onlyLane is the lane of the one session e's proxy serves (nil when it
// is not on a loop).
func onlyLane(e *env) *lane {
	var ln *lane
	e.srv.mu.Lock()
	for _, s := range e.srv.sessions {
		s.mu.Lock()
		ln = s.loopSockets
		s.mu.Unlock()
	}
	e.srv.mu.Unlock()
	return ln
}
