package wire

import (
	"golang.org/x/sys/unix"

	"github.com/leafproxy/leafproxy/internal/raw"
)

// rawIO's socket calls, on the runtime's non-blocking descriptors inside
// syscall.RawConn's callbacks: raw system calls (internal/raw says why),
// annotated for the race detector. They never wait: a socket with
// nothing to read, or no room, answers EAGAIN.

// readOnce reads what fd has, up to len(p).
func readOnce(fd int, p []byte) (int, unix.Errno) { return raw.Read(fd, p) }

// writeOnce writes what fd takes of p.
func writeOnce(fd int, p []byte) (int, unix.Errno) { return raw.Write(fd, p) }
