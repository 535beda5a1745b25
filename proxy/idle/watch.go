package idle

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/leafproxy/leafproxy/proxy/wire"
)

// The idle watch of a session on its own goroutine: waiting for the next
// command while making sure the backend has not closed the connection,
// and giving an idle session's buffers back meanwhile. (On the event loop
// the epoll instance watches both sockets instead.)

// BackendWatch is how long a client may stay silent before the session
// checks that its backend connection is still alive; a backend that closed
// the connection (wait_timeout, KILL, restart) closes the client's too, so
// pools see a dead connection instead of a live one that answers 1158.
const BackendWatch = 500 * time.Millisecond

// WatchGrid aligns the idle watch's deadlines: a deadline falls on a
// multiple of WatchGrid between BackendWatch-WatchGrid and BackendWatch
// from now, so the timers of many idle sessions fire together and one
// thread wake-up serves them all. Spread evenly, 1,000 idle sessions
// cost 2,000 separate wake-ups a second, 6% of a core (bench
// TestIdleMemory).
const WatchGrid = 100 * time.Millisecond

// WatchDeadline is the idle watch's next deadline from now.
func WatchDeadline(now time.Time) time.Time {
	return now.Add(BackendWatch - WatchGrid).Truncate(WatchGrid).Add(WatchGrid)
}

// Pools are where a parked session's legs put their buffers: a parked leg
// has no writer (and a backend leg no reader) until the next command. The
// pools hold buffers of the session's standard sizes only.
type Pools struct {
	ClientWriters, BackWriters, BackReaders   *sync.Pool
	ClientWriteBuf, BackWriteBuf, BackReadBuf int
}

// Park gives the buffers of an idle session's legs to the pools (the
// client's read buffer stays: the session waits on it).
func (p *Pools) Park(c, b *wire.Leg) {
	c.ParkWriter(p.ClientWriters, p.ClientWriteBuf)
	b.ParkWriter(p.BackWriters, p.BackWriteBuf)
	b.ParkReader(p.BackReaders, p.BackReadBuf)
	if ri, ok := b.RW.(*wire.RawIO); ok {
		ri.Release()
	}
}

// Unpark takes buffers for the legs again: a command came.
func (p *Pools) Unpark(c, b *wire.Leg) {
	c.UnparkWriter(p.ClientWriters)
	b.UnparkWriter(p.BackWriters)
	b.UnparkReader(p.BackReaders)
	// The backend may have written something unasked while the session
	// was idle (MariaDB's ERR before it closes an idle connection): the
	// first command reads the socket before waiting (see rawIO).
	b.NoHold = true
}

// LegBytes is the size of the legs' buffers Park may give back.
func LegBytes(c, b *wire.Leg) int {
	n := 0
	if c.W != nil {
		n += c.W.Size()
	}
	if b.W != nil {
		n += b.W.Size()
	}
	if b.R != nil {
		n += b.R.Size()
	}
	return n
}

// BackendClosedError ends a session whose backend went away between
// commands.
type BackendClosedError struct{ Reason string }

func (e *BackendClosedError) Error() string {
	return "backend closed the idle connection: " + e.Reason
}

// BackendGone checks, without blocking, whether the backend connection b
// has been closed or has sent something unasked (MariaDB sends an ERR
// such as 4031 before closing an idle connection). Such a packet is
// passed on to the client c, which then sees the connection close as it
// would directly. peek is the watch's look at b's socket; parked says the
// legs' buffers are in p.
func BackendGone(c, b *wire.Leg, peek *wire.SocketPeeker, parked bool, p *Pools) error {
	if b.R == nil || b.Buffered() == 0 { // parked: no reader, nothing buffered
		switch peek.Peek() {
		case wire.SocketQuiet:
			return nil
		case wire.SocketClosed:
			return &BackendClosedError{Reason: "connection closed"}
		}
	}
	if parked {
		b.UnparkReader(p.BackReaders)
		defer b.ParkReader(p.BackReaders, p.BackReadBuf)
		c.UnparkWriter(p.ClientWriters)
		defer c.ParkWriter(p.ClientWriters, p.ClientWriteBuf)
	}
	_ = b.Conn.SetReadDeadline(time.Now().Add(time.Millisecond))
	err := b.Peek()
	_ = b.Conn.SetReadDeadline(time.Time{})
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		return nil
	}
	reason := "connection closed"
	if err == nil {
		// An unsolicited packet: pass a small ERR on, whatever its sequence id.
		_ = b.Conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if h, herr := b.R.Peek(4); herr == nil {
			n := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
			if pkt, perr := b.R.Peek(4 + n); perr == nil && n < 4096 && wire.IsErr(pkt[4:]) {
				e := wire.ParseErr(pkt[4:])
				reason = fmt.Sprintf("ERR %d: %s", e.Code, e.Message)
				c.Seq = 0
				_ = c.Conn.SetWriteDeadline(time.Now().Add(time.Second))
				_ = c.WritePacket(pkt[4:])
				_ = c.Flush()
			}
		}
	}
	return &BackendClosedError{Reason: reason}
}
