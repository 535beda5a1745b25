package proxy

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// Sessions that go idle park their buffers; once a burst of parking has
// given back enough, the proxy returns the memory to the OS (two
// collections and debug.FreeOSMemory), and the sessions carry on as
// before. bench/TestIdleMemory measures the RSS.
func TestIdleMemoryReturned(t *testing.T) {
	e := startProxy(t, sharedDB(t).Addr, nil)
	e.srv.idleMem.min.Store(1 << 20) // ~20 sessions' buffers instead of 16 MB
	db := e.open(t, "", "")
	const n = 24
	db.SetMaxIdleConns(n)
	ctx := context.Background()
	conns := make([]*sql.Conn, n)
	for i := range conns {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
		var s string
		if err := c.QueryRowContext(ctx, "SELECT REPEAT('x', 65536)").Scan(&s); err != nil || len(s) != 65536 {
			t.Fatalf("connection %d: %d bytes, %v", i, len(s), err)
		}
	}
	testwait.For(t, fmt.Sprintf("a memory return after %d sessions parked", n), func() bool { return e.srv.idleMem.returns.Load() != 0 },
		testwait.Detail(func() string { return fmt.Sprintf("%d bytes counted", e.srv.idleMem.parked.Load()) }))
	for i, c := range conns {
		var s string
		if err := c.QueryRowContext(ctx, "SELECT REPEAT('y', 100000)").Scan(&s); err != nil || len(s) != 100000 {
			t.Fatalf("connection %d after the return: %d bytes, %v", i, len(s), err)
		}
	}
}

// socketPeeker tells an open quiet socket, one with data waiting and one the
// peer closed apart, without consuming anything.
func TestPeekSocket(t *testing.T) {
	c, peer := tcpPair(t)
	if got := wire.NewSocketPeeker(c).Peek(); got != wire.SocketQuiet {
		t.Fatalf("quiet socket: %v", got)
	}
	if _, err := peer.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "the byte to arrive", func() bool { return wire.NewSocketPeeker(c).Peek() != wire.SocketQuiet })
	if got := wire.NewSocketPeeker(c).Peek(); got != wire.SocketUnknown {
		t.Fatalf("socket with data: %v, want socketUnknown (look with the buffers)", got)
	}
	b := make([]byte, 1)
	if _, err := c.Read(b); err != nil || b[0] != 'x' {
		t.Fatalf("the peeked byte was consumed: %q %v", b, err)
	}
	peer.Close()
	testwait.For(t, "the close to arrive", func() bool { return wire.NewSocketPeeker(c).Peek() != wire.SocketQuiet })
	if got := wire.NewSocketPeeker(c).Peek(); got != wire.SocketClosed {
		t.Fatalf("closed socket: %v", got)
	}
	if got := wire.NewSocketPeeker(&net.IPConn{}).Peek(); got != wire.SocketUnknown {
		t.Fatalf("not a TCP or Unix socket: %v", got)
	}
}

// The count of parked bytes is net of what unparking sessions took back,
// and stops at zero: sessions that alternate between busy and idle do not
// add up to a return, and sessions parked before a return that unpark and
// park again count anew.
func TestIdleMemoryCountsNet(t *testing.T) {
	var m idleMemory
	m.min.Store(1 << 40) // never start a return here
	m.gaveBack(100)
	m.tookBack(60)
	if got := m.parked.Load(); got != 40 {
		t.Fatalf("after +100 -60: %d", got)
	}
	m.tookBack(1000)
	if got := m.parked.Load(); got != 0 {
		t.Fatalf("below zero: %d", got)
	}
	for range 1000 { // busy/idle churn
		m.gaveBack(68 << 10)
		m.tookBack(68 << 10)
	}
	if got := m.parked.Load(); got != 0 {
		t.Fatalf("after churn: %d", got)
	}
}

// The idle watch's deadlines fall on a 100 ms grid, 400-500 ms ahead: idle
// sessions' timers fire together, and a closed backend is still noticed
// within half a second.
func TestWatchDeadlineOnGrid(t *testing.T) {
	base := time.Date(2026, 11, 23, 14, 0, 0, 0, time.UTC)
	for _, off := range []time.Duration{0, time.Nanosecond, 37 * time.Millisecond, 99*time.Millisecond + 999*time.Microsecond, 100 * time.Millisecond, 733 * time.Millisecond} {
		now := base.Add(off)
		dl := watchDeadline(now)
		if d := dl.Sub(now); d <= backendWatch-watchGrid || d > backendWatch {
			t.Errorf("now+%v: deadline %v ahead, want in (%v, %v]", off, d, backendWatch-watchGrid, backendWatch)
		}
		if dl.UnixNano()%int64(watchGrid) != 0 {
			t.Errorf("now+%v: deadline %v is not on the %v grid", off, dl, watchGrid)
		}
	}
}
