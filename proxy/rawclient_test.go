package proxy

import (
	"net"
	"testing"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/wire"
)

// rawClient is a minimal MySQL client written for these tests: it chooses
// its own capability flags, so tests can negotiate what real drivers do
// (session tracking, extended type metadata, change user) and look at the
// bytes the proxy sends.
type rawClient struct {
	t     testing.TB
	l     *wire.Leg
	hello *wire.Greeting
	caps  uint32
	ext   uint32
}

const rawBaseCaps = gomysql.CLIENT_PROTOCOL_41 | gomysql.CLIENT_SECURE_CONNECTION | gomysql.CLIENT_PLUGIN_AUTH |
	gomysql.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA | gomysql.CLIENT_TRANSACTIONS | gomysql.CLIENT_LONG_FLAG |
	gomysql.CLIENT_CONNECT_ATTRS

// dialRaw connects and reads the greeting.
func dialRaw(t testing.TB, addr string) *rawClient {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(30 * time.Second))
	c := &rawClient{t: t, l: wire.NewLeg("test", nc, 64<<10, 64<<10)}
	p, err := c.l.ReadPacket(nil, 1<<20)
	if err != nil {
		t.Fatalf("read greeting: %v", err)
	}
	if c.hello, err = wire.ParseGreeting(p); err != nil {
		t.Fatalf("parse greeting: %v", err)
	}
	return c
}

// login answers the greeting with caps (and MariaDB extended caps ext)
// and returns the server's final answer (OK or ERR payload).
func (c *rawClient) login(user, pass, db string, caps, ext uint32) []byte {
	c.t.Helper()
	caps |= rawBaseCaps
	if db != "" {
		caps |= gomysql.CLIENT_CONNECT_WITH_DB
	}
	if ext != 0 {
		caps &^= gomysql.CLIENT_LONG_PASSWORD
	}
	c.caps, c.ext = caps, ext
	r := &wire.HandshakeResponse{Caps: caps, ExtCaps: ext, MaxPacket: 1 << 24, Charset: 45, User: user, DB: db,
		Plugin: gomysql.AUTH_NATIVE_PASSWORD, Auth: nativeAuth(c.hello.Scramble, pass),
		Attrs: wire.AttrsWith(nil, "_client_name", "rawclient", "program_name", "leafproxy-test")}
	if err := c.l.WritePacket(wire.AppendHandshakeResponse(nil, r, false)); err != nil {
		c.t.Fatal(err)
	}
	if err := c.l.Flush(); err != nil {
		c.t.Fatal(err)
	}
	return c.read()
}

func nativeAuth(scramble []byte, pass string) []byte {
	if pass == "" {
		return nil
	}
	return gomysql.CalcPassword(scramble, []byte(pass))
}

// command sends one command and returns the first response packet.
func (c *rawClient) command(payload []byte) []byte {
	c.t.Helper()
	if err := c.l.WriteCommand(payload); err != nil {
		c.t.Fatal(err)
	}
	if err := c.l.Flush(); err != nil {
		c.t.Fatal(err)
	}
	return c.read()
}

func (c *rawClient) read() []byte {
	c.t.Helper()
	p, err := c.l.ReadPacket(nil, 1<<24)
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	return p
}

// query sends a COM_QUERY and returns every packet of the response (one
// result set at most, without MORE_RESULTS).
func (c *rawClient) query(sql string) [][]byte {
	c.t.Helper()
	first := c.command(append([]byte{gomysql.COM_QUERY}, sql...))
	out := [][]byte{first}
	if first[0] == 0x00 || first[0] == 0xFF {
		return out
	}
	eofs := 0
	for eofs < 2 {
		p := c.read()
		out = append(out, p)
		if wire.IsEOF(p, len(p)) {
			eofs++
		}
		if p[0] == 0xFF {
			break
		}
	}
	return out
}
