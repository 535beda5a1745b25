package proxy

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/proxy/login"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// Fault tests for the front door: hostile or broken input before and right
// after authentication, floods of garbage and silent connections, memory
// claimed by strangers and by huge commands. Bounds asserted here are the
// ones stated in doc.go ("Limits on hostile input").

// startLoggedProxy is startProxy with the proxy's log captured.
func startLoggedProxy(t testing.TB, mutate func(*testConfig)) (*env, *testdb.LockedBuffer) {
	t.Helper()
	buf := &testdb.LockedBuffer{}
	log := slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	return startProxy(t, sharedDB(t).Addr, mutate, WithLogger(log)), buf
}

// witness is a logged-in go-sql-driver session kept open across a test:
// whatever strangers do, it must keep working.
type witness struct {
	t    testing.TB
	conn *sql.Conn
}

func newWitness(t testing.TB, e *env) *witness {
	t.Helper()
	db := e.open(t, "", "")
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatalf("witness login: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	w := &witness{t: t, conn: c}
	w.check()
	return w
}

func (w *witness) check() {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var v int
	if err := w.conn.QueryRowContext(ctx, "SELECT 41 + 1").Scan(&v); err != nil || v != 42 {
		w.t.Fatalf("logged-in witness broken: %v (%d)", err, v)
	}
}

// noPanics fails when the proxy recovered a panic in a handshake: the
// recover keeps the process alive, but a panic is still a parser bug.
func noPanics(t testing.TB, log *testdb.LockedBuffer) {
	t.Helper()
	if s := log.String(); strings.Contains(s, "internal error") || strings.Contains(s, "panic") {
		i := strings.Index(s, "panic")
		if i < 0 {
			i = strings.Index(s, "internal error")
		}
		t.Fatalf("proxy recovered a panic: %s", s[max(0, i-200):min(len(s), i+300)])
	}
}

// preAuth dials the proxy and reads its greeting.
func preAuth(t testing.TB, addr string) (net.Conn, *wire.Greeting) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	l := wire.NewLeg("test", nc, 4<<10, 4<<10)
	p, err := l.ReadPacket(nil, 1<<16)
	if err != nil {
		t.Fatalf("greeting: %v", err)
	}
	g, err := wire.ParseGreeting(p)
	if err != nil {
		t.Fatal(err)
	}
	return nc, g
}

// framed is payload as one packet with sequence id seq.
func framed(payload []byte, seq byte) []byte {
	n := len(payload)
	return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}, payload...)
}

// answer reads what the proxy sends until it closes the connection: its
// ERR code (0 for none) and how long the close took.
func answer(t testing.TB, nc net.Conn, within time.Duration) (code uint16, took time.Duration) {
	t.Helper()
	start := time.Now()
	_ = nc.SetReadDeadline(start.Add(within))
	all, err := io.ReadAll(nc)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("proxy kept the connection open for %v (read %x)", within, all)
	}
	if len(all) >= 7 && all[4] == 0xFF {
		code = binary.LittleEndian.Uint16(all[5:7])
	}
	return code, time.Since(start)
}

// validResponse is a well-formed handshake response body (wrong password).
func validResponse(g *wire.Greeting) []byte {
	caps := uint32(rawBaseCaps | gomysql.CLIENT_CONNECT_WITH_DB)
	return wire.AppendHandshakeResponse(nil, &wire.HandshakeResponse{Caps: caps, MaxPacket: 1 << 24, Charset: 45,
		User: "app", DB: "test", Plugin: gomysql.AUTH_NATIVE_PASSWORD, Auth: nativeAuth(g.Scramble, "wrong"),
		Attrs: wire.AttrsWith(nil, "_client_name", "frontdoor")}, false)
}

// Malformed, truncated and oversized handshake packets: each connection is
// answered (ERR 1043 "Bad handshake" or 1045) or closed promptly, no panic
// is recovered, and a logged-in client keeps working throughout.
func TestHandshakeFaults(t *testing.T) {
	t.Parallel() // waits more than it works; own servers or own tables
	e, log := startLoggedProxy(t, func(c *testConfig) { c.Limits.HandshakeTimeout = testDuration(3 * time.Second) })
	w := newWitness(t, e)
	hdr := func(g *wire.Greeting) []byte { return validResponse(g)[:32] }

	cases := []struct {
		name string
		body func(g *wire.Greeting) []byte // bytes sent after the greeting, framing included
		want uint16                        // ERR code, 0: closed without one
	}{
		{"user without NUL", func(g *wire.Greeting) []byte { return framed(append(hdr(g), "app"...), 1) }, gomysql.ER_HANDSHAKE_ERROR},
		{"auth longer than packet", func(g *wire.Greeting) []byte {
			return framed(append(hdr(g), "app\x00\x14short"...), 1)
		}, gomysql.ER_HANDSHAKE_ERROR},
		{"auth length 2^64", func(g *wire.Greeting) []byte {
			return framed(append(hdr(g), "app\x00\xfe\xff\xff\xff\xff\xff\xff\xff\xff"...), 1)
		}, gomysql.ER_HANDSHAKE_ERROR},
		{"db without NUL", func(g *wire.Greeting) []byte { return framed(append(hdr(g), "app\x00\x00test"...), 1) }, gomysql.ER_HANDSHAKE_ERROR},
		{"plugin without NUL", func(g *wire.Greeting) []byte {
			// Accepted (some clients send it so); the login then fails on the password.
			return framed(append(hdr(g), "app\x00\x00test\x00mysql_native_password"...), 1)
		}, gomysql.ER_ACCESS_DENIED_ERROR},
		{"attributes claim 16 MB", func(g *wire.Greeting) []byte {
			return framed(append(hdr(g), "app\x00\x00test\x00mysql_native_password\x00\xfd\xff\xff\xff"...), 1)
		}, gomysql.ER_HANDSHAKE_ERROR},
		{"shorter than 32 bytes", func(g *wire.Greeting) []byte { return framed(hdr(g)[:20], 1) }, gomysql.ER_HANDSHAKE_ERROR},
		{"no protocol 4.1", func(g *wire.Greeting) []byte {
			b := validResponse(g)
			b[1] &^= byte(gomysql.CLIENT_PROTOCOL_41 >> 8)
			return framed(b, 1)
		}, gomysql.ER_HANDSHAKE_ERROR},
		{"truncated payload", func(g *wire.Greeting) []byte { return framed(validResponse(g), 1)[:40] }, 0},
		{"truncated header", func(g *wire.Greeting) []byte { return []byte{0x40, 0} }, 0},
		{"wrong sequence id", func(g *wire.Greeting) []byte { return framed(validResponse(g), 7) }, 0},
		{"header claims 16 MB", func(g *wire.Greeting) []byte { return []byte{0xff, 0xff, 0xff, 1} }, 0},
		{"header claims 16 MB then data", func(g *wire.Greeting) []byte {
			return append([]byte{0xff, 0xff, 0xff, 1}, bytes.Repeat([]byte{'A'}, 256<<10)...)
		}, 0},
		{"just over the pre-auth limit", func(g *wire.Greeting) []byte {
			return framed(append(validResponse(g), make([]byte, login.PreAuthMaxPacket)...), 1)
		}, 0},
		{"SSL request then garbage", func(g *wire.Greeting) []byte {
			b := hdr(g)
			binary.LittleEndian.PutUint32(b, binary.LittleEndian.Uint32(b)|gomysql.CLIENT_SSL)
			return append(framed(b, 1), bytes.Repeat([]byte{0x17}, 64)...)
		}, 0},
		{"empty packet", func(g *wire.Greeting) []byte { return framed(nil, 1) }, gomysql.ER_HANDSHAKE_ERROR},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nc, g := preAuth(t, e.addr)
			if _, err := nc.Write(tc.body(g)); err != nil {
				t.Fatal(err)
			}
			// Truncated input needs the client's end of stream to be seen
			// as such; everything else is answered without it.
			if tc.want == 0 {
				nc.(*net.TCPConn).CloseWrite()
			}
			// "At once" is told from the handshake_timeout (3 s) that a
			// proxy waiting for more would run into, with room for a slow
			// machine on both sides.
			code, took := answer(t, nc, 10*time.Second)
			if code != tc.want {
				t.Errorf("answered ERR %d, want %d", code, tc.want)
			}
			if took > 2500*time.Millisecond {
				t.Errorf("closed after %v, not at once (handshake_timeout is 3s)", took)
			}
			w.check()
		})
	}
	// A 16 MB claim is refused without waiting for the data: nothing is
	// buffered for it, and the stranger does not get to hold its slot.
	t.Run("16 MB claim refused at once", func(t *testing.T) {
		nc, _ := preAuth(t, e.addr)
		if _, err := nc.Write([]byte{0xff, 0xff, 0xff, 1}); err != nil {
			t.Fatal(err)
		}
		if _, took := answer(t, nc, 10*time.Second); took > 2500*time.Millisecond {
			t.Fatalf("closed after %v, not at once (handshake_timeout is 3s)", took)
		}
	})
	// Silence is cut off at the handshake deadline.
	t.Run("silent client closed at handshake_timeout", func(t *testing.T) {
		nc, _ := preAuth(t, e.addr)
		// The deadline is handshake_timeout plus up to half of it (3-4.5 s);
		// the upper bound only tells a late close from none.
		if _, took := answer(t, nc, 30*time.Second); took < 2*time.Second || took > 20*time.Second {
			t.Fatalf("silent client closed after %v, want 3-4.5s", took)
		}
	})
	// After login: a malformed COM_CHANGE_USER gets 1835 and closes only
	// that session.
	t.Run("malformed change user after login", func(t *testing.T) {
		c := dialRaw(t, e.addr)
		if p := c.login("app", "secret", "", 0, 0); p[0] != 0 {
			t.Fatalf("login: %x", p)
		}
		if p := c.command(append([]byte{gomysql.COM_CHANGE_USER}, "app\x00\x40x"...)); errCode(p) != gomysql.ER_MALFORMED_PACKET {
			t.Fatalf("answered %x, want ERR 1835", p)
		}
		w.check()
	})
	noPanics(t, log)
	if n := strings.Count(log.String(), "\n"); n < len(cases) {
		t.Logf("log:\n%s", log.String())
	}
}

// A few thousand connections sending random bytes, random packets and
// mutated handshake responses: the proxy never panics or dies, and the
// witness keeps working. Bounded: at most 60 s (4,000 connections; 300
// with -short).
func TestRandomByteConnections(t *testing.T) {
	e, log := startLoggedProxy(t, func(c *testConfig) { c.Limits.HandshakeTimeout = testDuration(time.Second) })
	w := newWitness(t, e)
	n := 4000
	if testing.Short() {
		n = 300
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	deadline := time.Now().Add(60 * time.Second)
	var done atomic.Int64
	var wg sync.WaitGroup
	jobs := make(chan int)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				randomConnection(e.addr, rand.New(rand.NewPCG(seed, uint64(i))))
				done.Add(1)
			}
		}()
	}
	for i := 0; i < n && time.Now().Before(deadline); i++ {
		jobs <- i
		if i%500 == 499 {
			w.check()
		}
	}
	close(jobs)
	wg.Wait()
	t.Logf("%d garbage connections", done.Load())
	if done.Load() < int64(n)/2 {
		t.Errorf("only %d of %d connections in 60 s", done.Load(), n)
	}
	w.check()
	noPanics(t, log)
	// New clients still get in; from another host, since the mutated
	// handshake responses' wrong passwords have spent 127.0.0.1's login
	// budget (limits.login_failures).
	db, _ := sql.Open("mysql", from2DSN(e, "app", "secret"))
	defer db.Close()
	if err := db.Ping(); err != nil {
		t.Fatalf("login after the flood: %v", err)
	}
}

func randomConnection(addr string, r *rand.Rand) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(3 * time.Second))
	junk := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	var g *wire.Greeting
	if r.IntN(4) != 0 { // most read the greeting first, some talk over it
		l := wire.NewLeg("test", nc, 4<<10, 4<<10)
		p, err := l.ReadPacket(nil, 1<<16)
		if err != nil {
			return
		}
		if g, err = wire.ParseGreeting(p); err != nil {
			return
		}
	}
	var out []byte
	switch r.IntN(4) {
	case 0: // raw random bytes
		out = junk(r.IntN(300))
	case 1: // a random payload, correctly framed
		out = framed(junk(r.IntN(300)), 1)
	case 2: // a mutated or truncated real response
		if g == nil {
			g = &wire.Greeting{Scramble: make([]byte, 20)}
		}
		b := validResponse(g)
		for range 1 + r.IntN(6) {
			b[r.IntN(len(b))] = byte(r.Uint32())
		}
		if r.IntN(2) == 0 {
			b = b[:r.IntN(len(b))]
		}
		out = framed(b, 1)
		if r.IntN(8) == 0 { // lie about the length
			out[0], out[1], out[2] = byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32())
		}
	case 3: // an SSL request followed by junk or a cut TLS hello
		if g == nil {
			g = &wire.Greeting{Scramble: make([]byte, 20)}
		}
		b := validResponse(g)[:32]
		binary.LittleEndian.PutUint32(b, binary.LittleEndian.Uint32(b)|gomysql.CLIENT_SSL)
		out = append(framed(b, 1), junk(r.IntN(200))...)
	}
	_, _ = nc.Write(out)
	if r.IntN(2) == 0 {
		_, _ = io.Copy(io.Discard, nc) // wait for the proxy to answer and close
	}
}
