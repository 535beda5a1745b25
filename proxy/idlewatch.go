package proxy

import (
	"errors"
	"os"
	"time"

	"github.com/leafproxy/leafproxy/proxy/idle"
)

// The idle watch of a session on its own goroutine (package proxy/idle):
// waiting for the next command while making sure the backend has not
// closed the connection, and giving an idle session's buffers back
// meanwhile.

// legPools are the pools parked legs give their buffers to (legpools.go).
var legPools = idle.Pools{ClientWriters: &clientWriters, BackWriters: &backWriters, BackReaders: &backReaders,
	ClientWriteBuf: clientWriteBuf, BackWriteBuf: backWriteBuf, BackReadBuf: backReadBuf}

// awaitCommand waits for the client's next command while watching the
// backend: every idle.BackendWatch of silence it checks whether the
// backend has closed the connection (or sent anything, which between
// commands means it is about to). The idle timeout, if set, still applies.
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
		dl := idle.WatchDeadline(time.Now())
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
			s.park() // silent for idle.BackendWatch: give the buffers back
		}
		if !idleEnd.IsZero() && !time.Now().Before(idleEnd) {
			return err
		}
		if gone := s.backendGone(); gone != nil {
			return gone
		}
	}
}

// park gives an idle session's memory back: the legs' buffers go to pools
// (idle.Pools.Park), and command buffers grown by a large statement are
// dropped. An idle logged-in session then holds a few KB besides its
// goroutine. unpark takes buffers again when a command comes.
func (s *Session) park() {
	had := s.bufferBytes()
	legPools.Park(s.c, s.b)
	s.dropOver(idleBuf)
	s.parked = true
	s.srv.idleMem.Parks.Add(1)
	s.srv.idleMem.GaveBack(had - s.bufferBytes())
}

// bufferBytes is the size of the buffers park may give back.
func (s *Session) bufferBytes() int { return s.sessionBuffers.bytes() + idle.LegBytes(s.c, s.b) }

func (s *Session) unpark() {
	had := s.bufferBytes()
	legPools.Unpark(s.c, s.b)
	s.parked = false
	s.srv.idleMem.TookBack(s.bufferBytes() - had)
}

// backendGone checks, without blocking, whether the backend connection has
// been closed or has sent something unasked (idle.BackendGone).
func (s *Session) backendGone() error {
	return idle.BackendGone(s.c, s.b, s.peekerFor(s.b.Conn), s.parked, &legPools)
}
