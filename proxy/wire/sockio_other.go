//go:build !linux

package wire

import (
	"errors"

	"golang.org/x/sys/unix"
)

// readOnce and writeOnce are RawIO's socket calls (sockio_linux.go): here
// through package unix, retrying on EINTR.

func readOnce(fd int, p []byte) (int, unix.Errno) {
	for {
		n, err := unix.Read(fd, p)
		if e := errnoOf(err); e != unix.EINTR {
			if e != 0 {
				return 0, e
			}
			return n, 0
		}
	}
}

func writeOnce(fd int, p []byte) (int, unix.Errno) {
	for {
		n, err := unix.Write(fd, p)
		if e := errnoOf(err); e != unix.EINTR {
			if e != 0 {
				return 0, e
			}
			return n, 0
		}
	}
}

// errnoOf is err's errno: 0 for nil, EIO for an error that carries none.
func errnoOf(err error) unix.Errno {
	if err == nil {
		return 0
	}
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return unix.EIO
}
