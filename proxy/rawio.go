package proxy

import (
	"crypto/tls"
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

	// A command whose response is read next is not written by Write but
	// kept (holdNext, held) and written by the next Read inside its
	// RawConn callback, which then waits for the socket to become
	// readable without reading it first. Go's netpoller forgets readiness
	// when a read begins (pollDesc.prepareRead), so a read cannot in
	// general wait without first finding the socket empty: 1.6 of 3.6
	// reads per relayed request returned EAGAIN (BENCHMARKS.md, issue 11).
	// Here the response can only arrive after the command, which is
	// written after that reset, so its arrival is an edge the netpoller
	// reports. Only backend legs hold (leg.flushForResponse): a client
	// may pipeline, and its next command may already be in the socket.
	holdNext bool
	held     []byte
	heldOff  int
}

// maxHeld bounds the command a rawIO holds back; larger ones are written at
// once (their write cost dwarfs the saved read).
const maxHeld = 4096

// rawIOOn: LEAFPROXY_RAWIO=0 goes back to net.Conn's Read and Write (for
// comparing; bench/haproxy_test.go's LEAFPROXY_BENCH_VARIANTS).
var rawIOOn = os.Getenv("LEAFPROXY_RAWIO") != "0"

// holdOn: LEAFPROXY_RAWIO_HOLD=0 writes commands at once (for comparing).
var holdOn = os.Getenv("LEAFPROXY_RAWIO_HOLD") != "0"

// legIO is what a leg's buffers read from and write to: the connection, or
// a rawIO over it when it is a plain socket.
func legIO(c net.Conn) io.ReadWriter {
	if !rawIOOn || raceBuild {
		return c
	}
	rc, ok := plainSocket(c)
	if !ok {
		return c
	}
	return &rawIO{rc: rc}
}

// plainSocket is c's raw connection when c is a plain TCP or Unix socket
// (not TLS, not a test's pipe).
func plainSocket(c net.Conn) (syscall.RawConn, bool) {
	switch c.(type) {
	case *net.TCPConn, *net.UnixConn:
	default:
		return nil, false
	}
	rc, err := c.(syscall.Conn).SyscallConn()
	return rc, err == nil
}

func (r *rawIO) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var serr error
	err := r.rc.Read(func(fd uintptr) bool {
		if r.heldOff < len(r.held) {
			if !r.writeHeld(fd, &serr) || serr != nil {
				return true // the socket's buffer is full, or failed: below
			}
			return false // wait for the response without an empty read
		}
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
		r.dropHeld()
		return 0, err
	}
	if r.heldOff < len(r.held) {
		// The send buffer was full: write the rest waiting for room, then
		// read the ordinary way.
		if _, err := r.Write(nil); err != nil {
			return 0, err
		}
		return r.Read(p)
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// writeHeld writes what is left of the held command; false means the
// socket took only part of it (EAGAIN).
func (r *rawIO) writeHeld(fd uintptr, serr *error) bool {
	for r.heldOff < len(r.held) {
		rest := r.held[r.heldOff:]
		m, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptrOf(rest), uintptr(len(rest)))
		switch e {
		case 0:
			r.heldOff += int(m)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			*serr = os.NewSyscallError("write", e)
			r.dropHeld()
			return true
		}
	}
	r.dropHeld()
	return true
}

func (r *rawIO) dropHeld() {
	r.held, r.heldOff = r.held[:0], 0
}

// release gives up the held command's storage (the leg is idle).
func (r *rawIO) release() {
	if r.heldOff >= len(r.held) {
		r.held, r.heldOff = nil, 0
	}
}

func (r *rawIO) Write(p []byte) (int, error) {
	if r.holdNext {
		r.holdNext = false
		if r.heldOff >= len(r.held) && len(p) > 0 && len(p) <= maxHeld {
			r.held, r.heldOff = append(r.held[:0], p...), 0
			return len(p), nil
		}
	}
	var nn int
	var serr error
	err := r.rc.Write(func(fd uintptr) bool {
		// Anything held goes first: bytes leave in the order written.
		if r.heldOff < len(r.held) && !r.writeHeld(fd, &serr) {
			return false
		}
		if serr != nil {
			return true
		}
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
	if err != nil {
		r.dropHeld()
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

// socketState is what a socketPeeker saw.
type socketState int

const (
	socketUnknown socketState = iota // not a plain socket, or data waiting: look with the buffers
	socketQuiet                      // open, nothing to read
	socketClosed                     // the peer closed it (or it failed)
)

// socketPeeker looks at a TCP or Unix socket (a TLS connection's too)
// without reading from it, blocking, or touching buffers or deadlines: one
// recv(MSG_PEEK|MSG_DONTWAIT) of one byte, with nothing allocated per
// look. The idle watch (Session.backendGone) asks every 500 ms of every
// idle session; before, each ask took a 32 KB reader and a 32 KB writer
// from their pools and set two deadlines, which kept parked buffers alive
// and cost four timer updates per idle session and tick.
type socketPeeker struct {
	rc    syscall.RawConn
	fn    func(uintptr) // p.look, bound once
	state socketState
	b     [1]byte
}

// newSocketPeeker returns nil when c is not a socket it can look at; a nil
// peeker answers socketUnknown.
func newSocketPeeker(c net.Conn) *socketPeeker {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn() // any record waiting is "data": the caller looks closer
	}
	rc, ok := plainSocket(c)
	if !ok {
		return nil
	}
	p := &socketPeeker{rc: rc}
	p.fn = p.look
	return p
}

func (p *socketPeeker) peek() socketState {
	if p == nil {
		return socketUnknown
	}
	p.state = socketUnknown
	if err := p.rc.Control(p.fn); err != nil {
		return socketClosed // closed by this process
	}
	return p.state
}

func (p *socketPeeker) look(fd uintptr) {
	n, _, e := syscall.Recvfrom(int(fd), p.b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	switch {
	case e == syscall.EAGAIN:
		p.state = socketQuiet
	case e == syscall.ECONNRESET || e == syscall.ETIMEDOUT || e == syscall.EPIPE || e == syscall.ENOTCONN ||
		e == syscall.EHOSTUNREACH || e == syscall.ECONNABORTED:
		p.state = socketClosed
	case e != nil:
		// EINTR, ENOMEM, ...: not an answer; the buffered look decides.
	case n == 0:
		p.state = socketClosed
	}
}
