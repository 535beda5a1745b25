package proxy

import (
	"errors"
	"syscall"
	"unsafe"
)

// pollfd and the poll(2) bits package syscall does not define.
type pollFD struct {
	fd      int32
	events  int16
	revents int16
}

const (
	pollIn    = 0x1
	pollErr   = 0x8
	pollHup   = 0x10
	pollRDHup = 0x2000
)

// look asks the kernel, without waiting, whether the peer has shut down
// its sending side (POLLRDHUP, set even while bytes it sent before are
// still unread) and, if so, whether anything waits to be read.
func (l *fdLook) look(fd uintptr) {
	p := pollFD{fd: int32(fd), events: pollIn | pollRDHup}
	var ts syscall.Timespec // zero: do not wait
	n, _, e := syscall.RawSyscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&p)), 1, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
	switch {
	case e != 0 || n == 0:
	case p.revents&(pollErr|pollHup) != 0:
		l.gone = true
	case p.revents&pollRDHup == 0:
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
	var ie *ioError
	switch {
	case errors.As(ln.s.fatal, &ie) && ie.leg == "backend":
	case ln.busy:
		ln.s.abandon()
	case len(ln.bpend) == 0 && !ln.s.left:
		_, _ = writeFD(ln.bfd, comQuit[:])
	}
}
