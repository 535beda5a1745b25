package eventloop

import (
	"errors"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/leafproxy/leafproxy/internal/raw"
)

// Socket I/O on descriptors the proxy knows to be non-blocking: the event
// loop's (asserted when a session moves onto the loop: AssertNonblocking;
// the socket legs' own, inside syscall.RawConn's callbacks, are
// proxy/wire's RawIO's). No call here ever waits: a socket with nothing to read, or no room, answers
// EAGAIN. They are raw system calls (internal/raw says why), annotated
// for the race detector, so race builds run this same code.

// ReadFD reads what fd has, up to len(p) bytes.
func ReadFD(fd int, p []byte) (int, unix.Errno) { return raw.Read(fd, p) }

// WriteFD writes all of p unless the socket is full (EAGAIN) or fails; n
// is what it took.
func WriteFD(fd int, p []byte) (int, unix.Errno) {
	done := 0
	for done < len(p) {
		n, e := raw.Write(fd, p[done:])
		if e != 0 {
			return done, e
		}
		done += n
	}
	return done, 0
}

// AssertNonblocking refuses a descriptor the loop could block on: the loop
// reads and writes its sockets directly, and one blocking call would stall
// every session a runner serves.
func AssertNonblocking(fd int) error {
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return errors.Join(errors.New("fcntl F_GETFL"), err)
	}
	if flags&unix.O_NONBLOCK == 0 {
		return errors.New("socket is in blocking mode")
	}
	return nil
}

// DupSocket duplicates c's descriptor (close-on-exec; it shares the
// original's file status flags, O_NONBLOCK among them).
func DupSocket(c net.Conn) (int, error) {
	rc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		return -1, err
	}
	nfd, derr := -1, error(nil)
	err = rc.Control(func(fd uintptr) {
		nfd, derr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
		if derr != nil {
			nfd, derr = -1, os.NewSyscallError("fcntl F_DUPFD_CLOEXEC", derr)
		}
	})
	if err == nil {
		err = derr
	}
	return nfd, err
}

// FDConn makes a net.Conn of a socket descriptor, which it closes (the
// conn holds a dup).
func FDConn(fd int) (net.Conn, error) {
	f := os.NewFile(uintptr(fd), "")
	c, err := net.FileConn(f)
	f.Close()
	return c, err
}
