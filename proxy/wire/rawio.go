package wire

import (
	"crypto/tls"
	"io"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// RawIO reads and writes a plain TCP or Unix socket inside
// syscall.RawConn's Read/Write callbacks, with raw system calls
// (fdio_linux.go): the Go netpoller still parks the goroutine when the
// socket is not ready, and deadlines still apply; what goes is the
// runtime's bookkeeping around a system call that may block. The socket
// is non-blocking (the runtime made it so), so no call in a callback
// waits. rawIO also holds a command back (below).
// TLS and compressed legs keep their own Read/Write.
type RawIO struct {
	rc syscall.RawConn

	// A command whose response is read next is not written by Write but
	// kept (holdNext, held) and written by the next Read inside its
	// RawConn callback, which then waits for the socket to become
	// readable without reading it first. Go's netpoller forgets readiness
	// when a read begins (pollDesc.prepareRead), so a read cannot in
	// general wait without first finding the socket empty (one wasted
	// read(2) per response). Here the response can only arrive after the command, which is
	// written after that reset, so its arrival is an edge the netpoller
	// reports. Only backend legs hold (leg.flushForResponse): a client
	// may pipeline, and its next command may already be in the socket.
	holdNext bool
	held     []byte
	heldOff  int
	// sendFull, when set (tests), is called when the held command meets a
	// full send buffer.
	sendFull func()
}

// maxHeld bounds the command a rawIO holds back; larger ones are written at
// once (their write cost dwarfs the saved read).
const maxHeld = 4096

// rawIOOn: LEAFPROXY_RAWIO=0 goes back to net.Conn's Read and Write (for
// comparing; bench/haproxy_test.go's LEAFPROXY_BENCH_VARIANTS).
var rawIOOn = os.Getenv("LEAFPROXY_RAWIO") != "0"

// holdOn: LEAFPROXY_RAWIO_HOLD=0 writes commands at once (for comparing).
var holdOn = os.Getenv("LEAFPROXY_RAWIO_HOLD") != "0"

// LegIO is what a leg's buffers read from and write to: the connection, or
// a rawIO over it when it is a plain socket.
func LegIO(c net.Conn) io.ReadWriter {
	if !rawIOOn {
		return c
	}
	rc, ok := PlainSocket(c)
	if !ok {
		return c
	}
	return &RawIO{rc: rc}
}

// PlainSocket is c's raw connection when c is a plain TCP or Unix socket
// (not TLS, not a test's pipe).
func PlainSocket(c net.Conn) (syscall.RawConn, bool) {
	switch c.(type) {
	case *net.TCPConn, *net.UnixConn:
	default:
		return nil, false
	}
	rc, err := c.(syscall.Conn).SyscallConn()
	return rc, err == nil
}

func (r *RawIO) Read(p []byte) (int, error) {
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
		m, e := readOnce(int(fd), p)
		switch e {
		case 0:
			n = m
			return true
		case unix.EAGAIN:
			return false
		default:
			serr = os.NewSyscallError("read", e)
			return true
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
func (r *RawIO) writeHeld(fd uintptr, serr *error) bool {
	for r.heldOff < len(r.held) {
		rest := r.held[r.heldOff:]
		m, e := writeOnce(int(fd), rest)
		switch e {
		case 0:
			r.heldOff += m
		case unix.EAGAIN:
			if r.sendFull != nil {
				r.sendFull()
			}
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

func (r *RawIO) dropHeld() {
	r.held, r.heldOff = r.held[:0], 0
}

// Release gives up the held command's storage (the leg is idle).
func (r *RawIO) Release() {
	if r.heldOff >= len(r.held) {
		r.held, r.heldOff = nil, 0
	}
}

func (r *RawIO) Write(p []byte) (int, error) {
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
			m, e := writeOnce(int(fd), p[nn:])
			switch e {
			case 0:
				nn += m
			case unix.EAGAIN:
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

// SocketState is what a socketPeeker saw.
type SocketState int

const (
	SocketUnknown SocketState = iota // not a plain socket, or data waiting: look with the buffers
	SocketQuiet                      // open, nothing to read
	SocketClosed                     // the peer closed it (or it failed)
)

// SocketPeeker looks at a TCP or Unix socket (a TLS connection's too)
// without reading from it, blocking, or touching buffers or deadlines: one
// recv(MSG_PEEK|MSG_DONTWAIT) of one byte, with nothing allocated per
// look. The idle watch (Session.backendGone) asks every 500 ms of every
// idle session; before, each ask took a 32 KB reader and a 32 KB writer
// from their pools and set two deadlines, which kept parked buffers alive
// and cost four timer updates per idle session and tick.
type SocketPeeker struct {
	rc    syscall.RawConn
	fn    func(uintptr) // p.look, bound once
	state SocketState
	b     [1]byte
}

// NewSocketPeeker returns nil when c is not a socket it can look at; a nil
// peeker answers socketUnknown.
func NewSocketPeeker(c net.Conn) *SocketPeeker {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn() // any record waiting is "data": the caller looks closer
	}
	rc, ok := PlainSocket(c)
	if !ok {
		return nil
	}
	p := &SocketPeeker{rc: rc}
	p.fn = p.look
	return p
}

func (p *SocketPeeker) Peek() SocketState {
	if p == nil {
		return SocketUnknown
	}
	p.state = SocketUnknown
	if err := p.rc.Control(p.fn); err != nil {
		return SocketClosed // closed by this process
	}
	return p.state
}

func (p *SocketPeeker) look(fd uintptr) {
	n, _, e := unix.Recvfrom(int(fd), p.b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
	switch {
	case e == unix.EAGAIN:
		p.state = SocketQuiet
	case e == unix.ECONNRESET || e == unix.ETIMEDOUT || e == unix.EPIPE || e == unix.ENOTCONN ||
		e == unix.EHOSTUNREACH || e == unix.ECONNABORTED:
		p.state = SocketClosed
	case e != nil:
		// EINTR, ENOMEM, ...: not an answer; the buffered look decides.
	case n == 0:
		p.state = SocketClosed
	}
}
