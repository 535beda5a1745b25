package proxy

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"testing"

	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// Sessions that go idle park their buffers; once a burst of parking has
// given back enough, the proxy returns the memory to the OS (two
// collections and debug.FreeOSMemory), and the sessions carry on as
// before. bench/TestIdleMemory measures the RSS.
func TestIdleMemoryReturned(t *testing.T) {
	e := startProxy(t, sharedDB(t).Addr, nil)
	e.srv.idleMem.Min.Store(1 << 20) // ~20 sessions' buffers instead of 16 MB
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
	testwait.For(t, fmt.Sprintf("a memory return after %d sessions parked", n), func() bool { return e.srv.idleMem.Returns.Load() != 0 },
		testwait.Detail(func() string { return fmt.Sprintf("%d bytes counted", e.srv.idleMem.Parked.Load()) }))
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
