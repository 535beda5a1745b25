package proxy

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// rawIO reads and writes a plain TCP or Unix socket with raw system calls
// inside syscall.RawConn's Read/Write (issue 11). The Go netpoller still
// parks the goroutine when the socket is not ready, and deadlines still
// apply; what goes is the runtime's bookkeeping around a blocking system
// call (entersyscall/exitsyscall), which on a busy machine made sysmon take
// the P away from a thread descheduled inside write(2) and wake another
// thread for it: a futex, a nanosleep of sysmon and context switches per
// few requests. Reads and writes on a non-blocking socket never block.
// Measured (BENCHMARKS.md, issue 11): 0.8 -> 0.5 context switches and
// 6.3 -> 5.8 system calls per pass-through SELECT 1, CPU per request down
// by about a sixth. TLS and compressed legs keep their own Read/Write.
type rawIO struct {
	rc syscall.RawConn
}

// rawIOOn: LEAFPROXY_RAWIO=0 goes back to net.Conn's Read and Write (for
// comparing; bench/haproxy_test.go's LEAFPROXY_BENCH_VARIANTS).
var rawIOOn = os.Getenv("LEAFPROXY_RAWIO") != "0"

// legIO is what a leg's buffers read from and write to: the connection, or
// a rawIO over it when it is a plain socket.
func legIO(c net.Conn) io.ReadWriter {
	if !rawIOOn || raceBuild {
		return c
	}
	switch c.(type) {
	case *net.TCPConn, *net.UnixConn:
	default:
		return c
	}
	rc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		return c
	}
	return &rawIO{rc: rc}
}

func (r *rawIO) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var serr error
	err := r.rc.Read(func(fd uintptr) bool {
		for {
			m, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptrOf(p), uintptr(len(p)))
			switch e {
			case 0:
				n = int(m)
				return true
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false
			default:
				serr = os.NewSyscallError("read", e)
				return true
			}
		}
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

func (r *rawIO) Write(p []byte) (int, error) {
	var nn int
	var serr error
	err := r.rc.Write(func(fd uintptr) bool {
		for nn < len(p) {
			m, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptrOf(p[nn:]), uintptr(len(p)-nn))
			switch e {
			case 0:
				nn += int(m)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false
			default:
				serr = os.NewSyscallError("write", e)
				return true
			}
		}
		return true
	})
	if err == nil {
		err = serr
	}
	if err == nil && nn < len(p) {
		err = io.ErrShortWrite
	}
	return nn, err
}

func uintptrOf(p []byte) uintptr {
	if len(p) == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(&p[0]))
}
