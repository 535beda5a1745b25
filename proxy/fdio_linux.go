package proxy

import (
	"syscall"
	"unsafe"
)

// readFD and writeFD are the event loops' socket I/O: raw system calls on
// non-blocking descriptors, no runtime bookkeeping (see rawIO). Race builds
// go through package syscall, whose Read and Write tell the race detector
// that bytes written by one goroutine and read by another are ordered.

func readFD(fd int, p []byte) (int, syscall.Errno) {
	for {
		var n int
		var e syscall.Errno
		if raceBuild {
			var err error
			n, err = syscall.Read(fd, p)
			e = errnoOf(err)
		} else {
			r, _, en := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			n, e = int(r), en
		}
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		return n, 0
	}
}

// writeFD writes all of p unless the socket is full (EAGAIN) or fails; n
// is what it took.
func writeFD(fd int, p []byte) (int, syscall.Errno) {
	done := 0
	for done < len(p) {
		var n int
		var e syscall.Errno
		if raceBuild {
			var err error
			n, err = syscall.Write(fd, p[done:])
			e = errnoOf(err)
		} else {
			r, _, en := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&p[done])), uintptr(len(p)-done))
			n, e = int(r), en
		}
		switch e {
		case 0:
			done += n
		case syscall.EINTR:
		default:
			return done, e
		}
	}
	return done, 0
}

func errnoOf(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	if e, ok := err.(syscall.Errno); ok {
		return e
	}
	return syscall.EIO
}
