package proxy

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/leafproxy/leafproxy/proxy/wire"
)

// The idle watch of a session on its own goroutine: waiting for the next
// command while making sure the backend has not closed the connection,
// and giving an idle session's buffers back meanwhile. (On the event loop
// the epoll instance watches both sockets instead.)

// backendWatch is how long a client may stay silent before the session
// checks that its backend connection is still alive; a backend that closed
// the connection (wait_timeout, KILL, restart) closes the client's too, so
// pools see a dead connection instead of a live one that answers 1158.
const backendWatch = 500 * time.Millisecond

// watchGrid aligns the idle watch's deadlines: a deadline falls on a
// multiple of watchGrid between backendWatch-watchGrid and backendWatch
// from now, so the timers of many idle sessions fire together and one
// thread wake-up serves them all. Spread evenly, 1,000 idle sessions
// cost 2,000 separate wake-ups a second, 6% of a core (bench
// TestIdleMemory).
const watchGrid = 100 * time.Millisecond

func watchDeadline(now time.Time) time.Time {
	return now.Add(backendWatch - watchGrid).Truncate(watchGrid).Add(watchGrid)
}

// awaitCommand waits for the client's next command while watching the
// backend: every backendWatch of silence it checks whether the backend has
// closed the connection (or sent anything, which between commands means it
// is about to). The idle timeout, if set, still applies.
func (s *Session) awaitCommand() error {
	if s.c.Buffered() > 0 {
		return nil
	}
	idleTimeout := s.srv.cfg.Limits.IdleTimeout
	var idleEnd time.Time
	if idleTimeout > 0 {
		idleEnd = time.Now().Add(idleTimeout)
	}
	for {
		dl := watchDeadline(time.Now())
		if !idleEnd.IsZero() && idleEnd.Before(dl) {
			dl = idleEnd
		}
		_ = s.c.Conn.SetReadDeadline(dl)
		err := s.c.Peek()
		if err == nil {
			_ = s.c.Conn.SetReadDeadline(time.Time{})
			return nil
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) || s.srv.draining.Load() {
			return err
		}
		if !s.parked {
			s.park() // silent for backendWatch: give the buffers back
		}
		if !idleEnd.IsZero() && !time.Now().Before(idleEnd) {
			return err
		}
		if gone := s.backendGone(); gone != nil {
			return gone
		}
	}
}

// park gives an idle session's memory back: the write buffers of both
// legs and the backend's read buffer go to pools (the client's read buffer
// stays: the session waits on it), and command buffers grown by a large
// statement are dropped. An idle logged-in session then holds a few KB
// besides its goroutine. unpark takes buffers again when a command comes.
func (s *Session) park() {
	had := s.bufferBytes()
	s.c.ParkWriter(&clientWriters, clientWriteBuf)
	s.b.ParkWriter(&backWriters, backWriteBuf)
	s.b.ParkReader(&backReaders, backReadBuf)
	if ri, ok := s.b.RW.(*wire.RawIO); ok {
		ri.Release()
	}
	s.dropOver(idleBuf)
	s.parked = true
	s.srv.idleMem.parks.Add(1)
	s.srv.idleMem.gaveBack(had - s.bufferBytes())
}

// bufferBytes is the size of the buffers park may give back.
func (s *Session) bufferBytes() int {
	n := s.sessionBuffers.bytes()
	if s.c.W != nil {
		n += s.c.W.Size()
	}
	if s.b.W != nil {
		n += s.b.W.Size()
	}
	if s.b.R != nil {
		n += s.b.R.Size()
	}
	return n
}

func (s *Session) unpark() {
	had := s.bufferBytes()
	s.c.UnparkWriter(&clientWriters)
	s.b.UnparkWriter(&backWriters)
	s.b.UnparkReader(&backReaders)
	s.parked = false
	s.srv.idleMem.tookBack(s.bufferBytes() - had)
	// The backend may have written something unasked while the session
	// was idle (MariaDB's ERR before it closes an idle connection): the
	// first command reads the socket before waiting (see rawIO).
	s.b.NoHold = true
}

// errBackendClosedIdle ends a session whose backend went away between
// commands.
type errBackendClosedIdle struct{ reason string }

func (e *errBackendClosedIdle) Error() string {
	return "backend closed the idle connection: " + e.reason
}

// backendGone checks, without blocking, whether the backend connection has
// been closed or has sent something unasked (MariaDB sends an ERR such as
// 4031 before closing an idle connection). Such a packet is passed on to
// the client, which then sees the connection close as it would directly.
func (s *Session) backendGone() error {
	if s.b.R == nil || s.b.Buffered() == 0 { // parked: no reader, nothing buffered
		switch s.peekerFor(s.b.Conn).Peek() {
		case wire.SocketQuiet:
			return nil
		case wire.SocketClosed:
			return &errBackendClosedIdle{reason: "connection closed"}
		}
	}
	if s.parked {
		s.b.UnparkReader(&backReaders)
		defer s.b.ParkReader(&backReaders, backReadBuf)
		s.c.UnparkWriter(&clientWriters)
		defer s.c.ParkWriter(&clientWriters, clientWriteBuf)
	}
	_ = s.b.Conn.SetReadDeadline(time.Now().Add(time.Millisecond))
	err := s.b.Peek()
	_ = s.b.Conn.SetReadDeadline(time.Time{})
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		return nil
	}
	reason := "connection closed"
	if err == nil {
		// An unsolicited packet: pass a small ERR on, whatever its sequence id.
		_ = s.b.Conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if h, herr := s.b.R.Peek(4); herr == nil {
			n := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
			if p, perr := s.b.R.Peek(4 + n); perr == nil && n < 4096 && wire.IsErr(p[4:]) {
				e := wire.ParseErr(p[4:])
				reason = fmt.Sprintf("ERR %d: %s", e.Code, e.Message)
				s.c.Seq = 0
				_ = s.c.Conn.SetWriteDeadline(time.Now().Add(time.Second))
				_ = s.c.WritePacket(p[4:])
				_ = s.c.Flush()
			}
		}
	}
	return &errBackendClosedIdle{reason: reason}
}
