// Read, Write and EpollWait read, write and poll non-blocking descriptors
// with raw system calls (unix.RawSyscall): no entersyscall/exitsyscall
// around them.
//
// Why raw: a system call made through unix.Syscall marks its thread as in
// a system call; on a loaded machine, where the kernel often deschedules
// a thread inside a short write(2), the runtime's sysmon then hands the
// thread's P to another thread (futex wake-ups, nanosleeps, context
// switches). A read or write on a non-blocking socket, and epoll_wait with
// a zero timeout, never block, so they need none of that bookkeeping. The
// cost of going through unix.Read/unix.Write is in BENCHMARKS.md.
//
// Every function requires a non-blocking descriptor: on a blocking one a
// raw call that waits holds its P and stalls other goroutines.
//
// Race builds run the same calls and tell the race detector what unix.Read
// and unix.Write tell it: the bytes a read fills and a write takes, and
// that a write happens before the read of what it wrote.
package raw

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// ioSync orders, for the race detector, a Write before the Read that
// returns its bytes.
var ioSync int64

// Read reads into p from fd, retrying on EINTR; 0, 0 is the end of the
// stream, EAGAIN a socket with nothing to read.
func Read(fd int, p []byte) (int, unix.Errno) {
	if len(p) == 0 {
		return 0, 0
	}
	for {
		n, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		if raceEnabled {
			if n > 0 {
				raceWriteRange(unsafe.Pointer(unsafe.SliceData(p)), int(n))
			}
			raceAcquire(unsafe.Pointer(&ioSync))
		}
		return int(n), 0
	}
}

// Write writes p to fd once, retrying on EINTR: it may take less than p
// (a full socket buffer); EAGAIN when it takes nothing.
func Write(fd int, p []byte) (int, unix.Errno) {
	if len(p) == 0 {
		return 0, 0
	}
	if raceEnabled {
		raceReleaseMerge(unsafe.Pointer(&ioSync))
	}
	for {
		n, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		if raceEnabled && n > 0 {
			raceReadRange(unsafe.Pointer(unsafe.SliceData(p)), int(n))
		}
		return int(n), 0
	}
}

// EpollTake takes up to len(events) ready events from the epoll instance
// epfd without waiting (epoll_pwait with a zero timeout), retrying on
// EINTR.
func EpollTake(epfd int, events []unix.EpollEvent) (int, unix.Errno) {
	if len(events) == 0 {
		return 0, 0
	}
	for {
		n, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(unsafe.SliceData(events))), uintptr(len(events)), 0, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		return int(n), 0
	}
}
