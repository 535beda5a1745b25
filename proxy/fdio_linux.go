package proxy

import (
	"errors"

	"golang.org/x/sys/unix"
)

// readFD and writeFD are the event loop's socket I/O on descriptors the
// loop owns. Every such descriptor is non-blocking (asserted when a session
// moves onto the loop: assertNonblocking), so neither call ever waits: a
// socket with nothing to read, or no room, answers EAGAIN. unix.Read and
// unix.Write also tell the race detector that what one goroutine wrote is
// ordered before what another reads, so race builds run this same code.

func readFD(fd int, p []byte) (int, unix.Errno) {
	for {
		n, err := unix.Read(fd, p)
		switch e := errnoOf(err); e {
		case 0:
			return n, 0
		case unix.EINTR:
		default:
			return 0, e
		}
	}
}

// writeFD writes all of p unless the socket is full (EAGAIN) or fails; n
// is what it took.
func writeFD(fd int, p []byte) (int, unix.Errno) {
	done := 0
	for done < len(p) {
		n, err := unix.Write(fd, p[done:])
		switch e := errnoOf(err); e {
		case 0:
			done += n
		case unix.EINTR:
		default:
			return done, e
		}
	}
	return done, 0
}

// assertNonblocking refuses a descriptor the loop could block on: the loop
// reads and writes its sockets directly, and one blocking call would stall
// every session a runner serves.
func assertNonblocking(fd int) error {
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return errors.Join(errors.New("fcntl F_GETFL"), err)
	}
	if flags&unix.O_NONBLOCK == 0 {
		return errors.New("socket is in blocking mode")
	}
	return nil
}
