package proxy

import (
	"errors"

	"golang.org/x/sys/unix"

	"github.com/leafproxy/leafproxy/proxy/eventloop"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// look asks the kernel, without waiting, whether the peer has shut down
// its sending side (POLLRDHUP, set even while bytes it sent before are
// still unread) and, if so, whether anything waits to be read.
func (l *fdLook) look(fd uintptr) {
	l.poll[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN | unix.POLLRDHUP}
	n, err := unix.Ppoll(l.poll[:], &l.noWait, nil)
	p := l.poll[0]
	switch {
	case err != nil || n == 0:
	case p.Revents&(unix.POLLERR|unix.POLLHUP) != 0:
		l.gone = true
	case p.Revents&unix.POLLRDHUP == 0:
	case l.tls:
		l.gone = true // a close_notify record may come before the end
	default:
		l.gone = emptyFD(fd)
	}
}

// endBackend is how the backend hears that the session ends (hangup.go):
// COM_QUIT between commands, unless the client left without one;
// mid-command the statement is killed (its client is gone or the session
// is being cut); nothing when the backend failed or a command is half
// written.
func (ln *lane) endBackend() {
	var ie *wire.IOError
	switch {
	case errors.As(ln.s.fatal, &ie) && ie.Leg == "backend":
	case ln.busy:
		ln.s.abandon()
	case len(ln.backendPending) == 0 && !ln.s.left:
		_, _ = eventloop.WriteFD(ln.BackendFD, comQuit[:])
	}
}
