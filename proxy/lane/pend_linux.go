package lane

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/leafproxy/leafproxy/proxy/eventloop"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// What a lane writes that its sockets did not take yet, and the back
// pressure that bounds it both ways.

// sink writes to a lane's socket without blocking: what the socket does not
// take waits in the lane (clientPending, backendPending) until it is writable. Back pressure:
// while the client's waits the backend is not read, and while the
// backend's holds backendPendingMax bytes the client is not read (backendFull).
type sink struct {
	ln     *Lane
	fd     int
	client bool
}

func (k *sink) Write(p []byte) (int, error) {
	k.ln.wrote = true
	pend := &k.ln.backendPending
	if k.client {
		pend = &k.ln.clientPending
	}
	if len(*pend) > 0 {
		*pend = append(*pend, p...)
		return len(p), nil
	}
	n, errno := eventloop.WriteFD(k.fd, p)
	if errno != 0 && errno != unix.EAGAIN {
		return n, os.NewSyscallError("write", errno)
	}
	if n < len(p) {
		*pend = append(*pend, p[n:]...)
	}
	return len(p), nil
}

// drainPend writes what waits for a socket that has room again.
func (ln *Lane) drainPend(client bool) {
	pend, fd := &ln.backendPending, ln.BackendFD
	if client {
		pend, fd = &ln.clientPending, ln.ClientFD
	}
	n, errno := eventloop.WriteFD(fd, *pend)
	if errno != 0 && errno != unix.EAGAIN {
		err := &wire.IOError{Leg: "backend", Err: os.NewSyscallError("write", errno)}
		if client {
			err.Leg = "client"
		}
		ln.fail(err)
		return
	}
	rest := copy(*pend, (*pend)[n:])
	*pend = (*pend)[:rest]
	if rest == 0 && cap(*pend) > eventloop.BufSize {
		*pend = nil
	}
	switch {
	case client && rest == 0 && !ln.busy:
		ln.idleAgain()
	case !client && len(ln.clientIn) > 0 && !ln.backendFull():
		// The backend takes bytes again: run what the client sent while
		// it did not (commands stopped at backendFull); handle then reads
		// the client again.
		ln.commands(ln.clientIn)
	}
}

// backendPendingMax is how many bytes for the backend a lane holds before it stops
// reading its client: a client pipelining commands that have no answer
// (COM_STMT_SEND_LONG_DATA, COM_STMT_CLOSE) to a backend that reads
// nothing (stopped, or a full network path) then waits in its socket, as
// it does on a session's goroutine, instead of in the proxy's memory.
const backendPendingMax = 64 << 10

// backendFull reports whether the backend has not taken backendPendingMax bytes:
// the lane neither reads its client nor runs commands until it has
// (drainPend resumes).
func (ln *Lane) backendFull() bool { return len(ln.backendPending) >= backendPendingMax }
