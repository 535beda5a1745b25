package proxy

import (
	"bytes"
	"context"
	"crypto/tls"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/internal/testkit/leafproc"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// Front-door tests of memory: what strangers and huge commands may make
// the proxy hold, slow clients, and failed handshakes in the log.

// heapSampler records the peak of HeapInuse+StackInuse while it runs.
type heapSampler struct {
	base uint64
	peak atomic.Uint64
	stop chan struct{}
	done chan struct{}
}

func inuse() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

func startHeapSampler() *heapSampler {
	runtime.GC()
	h := &heapSampler{base: inuse(), stop: make(chan struct{}), done: make(chan struct{})}
	h.peak.Store(h.base)
	go func() {
		defer close(h.done)
		tk := time.NewTicker(5 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-h.stop:
				return
			case <-tk.C:
				if v := inuse(); v > h.peak.Load() {
					h.peak.Store(v)
				}
			}
		}
	}()
	return h
}

// growth stops the sampler and returns the peak growth over the start.
func (h *heapSampler) growth() uint64 {
	close(h.stop)
	<-h.done
	if p := h.peak.Load(); p > h.base {
		return p - h.base
	}
	return 0
}

const mib = 1 << 20

// 200 unauthenticated connections each claiming a huge packet: before the
// rewrite the proxy grew buffers to the claimed 16 MB (3.1 GB RSS). Now a
// claim over login.PreAuthMaxPacket (64 KiB) closes the connection at once, and a
// claim just under it costs at most 64 KiB per pending handshake, bounded by
// limits.max_handshakes. Bound asserted: < 64 MiB heap growth in-process.
func TestPreAuthMemoryBound(t *testing.T) {
	e := startProxy(t, sharedDB(t).Addr, func(c *testConfig) { c.Limits.HandshakeTimeout = testDuration(20 * time.Second) })
	w := newWitness(t, e)
	const conns = 200
	for _, claim := range []struct {
		name   string
		hdr    []byte
		closes bool // the proxy closes the connection at once
	}{
		{"16 MB claims", []byte{0xff, 0xff, 0xff, 1}, true},
		{"64 KiB-1 claims held open", []byte{0xff, 0xff, 0, 1}, false},
	} {
		t.Run(claim.name, func(t *testing.T) {
			h := startHeapSampler()
			var open []net.Conn
			for range conns {
				nc, err := net.Dial("tcp", e.addr)
				if err != nil {
					t.Fatal(err)
				}
				open = append(open, nc)
				// Claim, send a little, and stay silent: the proxy must
				// not reserve what is claimed.
				if _, err := nc.Write(append(append([]byte{}, claim.hdr...), bytes.Repeat([]byte{'x'}, 100)...)); err != nil {
					t.Fatal(err)
				}
			}
			if claim.closes {
				for i, nc := range open { // each closed by the proxy
					_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
					if _, err := io.Copy(io.Discard, nc); errors.Is(err, os.ErrDeadlineExceeded) {
						t.Fatalf("connection %d: the proxy did not close it", i)
					}
				}
			} else {
				testwait.For(t, "the proxy has read every claim it holds", func() bool { held, unread := pendingUnread(e); return held == conns && unread == 0 })
			}
			w.check()
			grew := h.growth()
			t.Logf("%s: %d connections, peak heap+stack growth %.1f MiB", claim.name, conns, float64(grew)/mib)
			if grew > 64*mib {
				t.Errorf("heap grew %.1f MiB for %d unauthenticated connections, bound 64 MiB", float64(grew)/mib, conns)
			}
			for _, nc := range open {
				nc.Close()
			}
		})
	}
}

// Four logged-in clients sending 256 MB queries at once, with
// limits.command_memory = 64 MiB: every client gets ERR 1041 (a single
// 256 MB command can never fit in 64 MiB) or success, the proxy's peak
// resident set grows by less than 4 x the budget (before the budget:
// 2.3 GB), and the budget is fully released afterwards: a 60 MiB statement
// (it needs all but 4 MiB of it, else it would wait 10 s and get 1041)
// then succeeds. The proxy is the leafproxy binary in a child process
// (internal/testkit/leafproc), so what is measured is the proxy's memory alone,
// not this process's clients, other tests or its garbage collector.
func TestHugeCommandsBoundedByCommandMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 1 GB through loopback")
	}
	const budget = 64 * mib
	p := leafproc.Start(t, fmt.Sprintf(`backend:
  addr: %s
  user: root
  connect_timeout: 20s
users:
  - name: app
    password: secret
limits:
  command_memory: %dMiB
log:
  level: warn
`, sharedDB(t).Addr, budget/mib))
	chunk := bytes.Repeat([]byte{'x'}, wire.MaxPayload) // shared: the clients hold nothing per query
	m := p.Measure(t)
	results := sendHugeConcurrently(t, p.Addr, 4, 256*mib, chunk)
	grew := m.Growth(t)
	t.Logf("4 x 256 MiB commands: %v; the proxy's peak RSS growth %.1f MiB over %.1f MiB (budget %d MiB)",
		results, float64(grew)/mib, float64(m.Base)/mib, budget/mib)
	for i, r := range results {
		if r != "ok" && r != "ERR 1041" {
			t.Errorf("client %d: %s, want ok or ERR 1041", i, r)
		}
	}
	// The budget counts payload bytes; the buffers a command grows through
	// (copied on growth) and the garbage collector's pacing (GOGC=100: the
	// heap may reach twice what is live) make the proxy's memory a small
	// multiple of it. Without the budget each session would hold its full
	// 256 MiB.
	if grew > 4*budget {
		t.Errorf("the proxy's RSS grew %.1f MiB, bound 4 x command_memory = %d MiB\n%s", float64(grew)/mib, 4*budget/mib, p.Output())
	}
	// A statement that needs nearly all of the budget (and fits the
	// backend's 64M max_allowed_packet) goes through: nothing is held.
	if r := sendHuge(t, p.Addr, 60*mib, chunk); r != "ok" {
		t.Fatalf("60 MiB statement after the flood (command_memory 64 MiB): %s\n%s", r, p.Output())
	}
}

// sendHugeConcurrently runs n clients, each sending one size-byte command
// (sendHuge), and returns what each got.
func sendHugeConcurrently(t *testing.T, addr string, n, size int, chunk []byte) []string {
	var wg sync.WaitGroup
	results := make([]string, n)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = sendHuge(t, addr, size, chunk)
		}()
	}
	wg.Wait()
	return results
}

// sendHuge logs in and sends SELECT LENGTH('xxx...') of about size bytes,
// streaming it from chunk; it returns "ok", "ERR <code>" or the I/O error.
func sendHuge(t testing.TB, addr string, size int, chunk []byte) string {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return err.Error()
	}
	defer nc.Close()
	c := &rawClient{t: t, l: wire.NewLeg("test", nc, 64<<10, 64<<10)}
	_ = nc.SetDeadline(time.Now().Add(2 * time.Minute))
	p, err := c.l.ReadPacket(nil, 1<<16)
	if err != nil {
		return "greeting: " + err.Error()
	}
	if c.hello, err = wire.ParseGreeting(p); err != nil {
		return err.Error()
	}
	if p := c.login("app", "secret", "", 0, 0); p[0] != 0 {
		return "login failed"
	}
	// The statement: COM_QUERY "SELECT LENGTH('" x... "')", framed by hand
	// in 16 MB physical packets.
	head := []byte("\x03SELECT LENGTH('")
	tailQ := []byte("')")
	body := size - len(head) - len(tailQ)
	respCh := make(chan string, 1)
	go func() {
		r := io.Reader(nc)
		hdr := make([]byte, 4)
		if _, err := io.ReadFull(r, hdr); err != nil {
			respCh <- "read: " + err.Error()
			return
		}
		n := int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16
		pl := make([]byte, n)
		if _, err := io.ReadFull(r, pl); err != nil {
			respCh <- "read: " + err.Error()
			return
		}
		if pl[0] == 0xFF {
			respCh <- "ERR " + strconv.Itoa(int(binary.LittleEndian.Uint16(pl[1:3])))
			return
		}
		respCh <- "ok"
	}()
	total := len(head) + body + len(tailQ)
	seq := byte(0)
	written, fromBody := 0, 0
	for {
		n := min(total-written, wire.MaxPayload)
		frame := []byte{byte(n), byte(n >> 8), byte(n >> 16), seq}
		seq++
		var parts [][]byte
		parts = append(parts, frame)
		left := n
		if written == 0 {
			parts = append(parts, head)
			left -= len(head)
		}
		take := min(left, body-fromBody)
		parts = append(parts, chunk[:take])
		fromBody += take
		left -= take
		if left > 0 {
			parts = append(parts, tailQ[:left])
		}
		bufs := net.Buffers(parts)
		if _, err := bufs.WriteTo(nc); err != nil {
			break // the proxy refused and closed: its answer says why
		}
		written += n
		if n < wire.MaxPayload {
			break
		}
	}
	select {
	case r := <-respCh:
		return r
	case <-time.After(time.Minute):
		return "no answer"
	}
}

// raiseNoFile lifts RLIMIT_NOFILE to its hard limit and returns it.
func raiseNoFile(t testing.TB) uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	if rl.Cur < rl.Max {
		rl.Cur = rl.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl)
		_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl)
	}
	return rl.Cur
}

// Slow-loris: 4,096 silent connections (fewer if the file limit forbids:
// each costs two descriptors in this process) plus a trickle of new ones
// while real go-sql-driver clients log in and query, from the flooding
// host itself. Pending handshakes have their own budgets apart from
// max_connections (max_handshakes, and max_silent_handshakes for those
// that have sent nothing yet, here a quarter of the crowd; the oldest of
// the host holding the most dropped), so nobody gets 1040 and the real
// clients get in; silent connections are cut at handshake_timeout (plus
// up to half of it).
func TestSlowLoris(t *testing.T) {
	t.Parallel() // waits more than it works; own servers or own tables
	silent := 4096
	if lim := raiseNoFile(t); uint64(2*silent+500) > lim {
		silent = int(lim-500) / 2
	}
	if testing.Short() {
		silent = 1024
	}
	e := startProxy(t, sharedDB(t).Addr, func(c *testConfig) {
		c.Limits.HandshakeTimeout = testDuration(4 * time.Second)
		c.Limits.MaxConnections = 64 // far fewer than the silent crowd
		c.Limits.MaxSilentHandshakes = silent / 4
	})
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range silent {
		nc, err := net.DialTimeout("tcp", e.addr, 5*time.Second)
		if err != nil {
			t.Fatalf("silent connection %d: %v", len(conns), err)
		}
		conns = append(conns, nc)
	}
	t.Logf("%d silent connections open", len(conns))
	// More silent connections keep arriving while the real clients work.
	stop := make(chan struct{})
	var flood sync.WaitGroup
	var late []net.Conn
	defer func() {
		for _, c := range late {
			c.Close()
		}
	}()
	flood.Add(1)
	go func() {
		defer flood.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			if nc, err := net.Dial("tcp", e.addr); err == nil {
				late = append(late, nc)
			}
		}
	}()
	start := time.Now()
	for i := range 10 {
		db := e.open(t, "", "")
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		var v int
		err := db.QueryRowContext(ctx, "SELECT 1 + ?", i).Scan(&v)
		cancel()
		db.Close()
		if err != nil || v != i+1 {
			t.Fatalf("real client %d during the flood: %v", i, err)
		}
	}
	t.Logf("10 logins and queries during the flood in %v", time.Since(start).Round(time.Millisecond))
	e.srv.mu.Lock()
	pending, held := e.srv.pending.N(), e.srv.silent.N()
	e.srv.mu.Unlock()
	if pending > e.cfg.Limits.MaxHandshakes {
		t.Errorf("%d pending handshakes, budget %d", pending, e.cfg.Limits.MaxHandshakes)
	}
	if held > e.cfg.Limits.MaxSilentHandshakes {
		t.Errorf("%d silent connections held, budget %d", held, e.cfg.Limits.MaxSilentHandshakes)
	}
	if st := e.srv.LoginStats(); st.Dropped == 0 {
		t.Errorf("no handshake dropped: %d silent connections against a budget of %d", len(conns), e.cfg.Limits.MaxSilentHandshakes)
	}
	close(stop)
	flood.Wait()
	testwait.For(t, "the handshake deadline to clear every silent connection", func() bool {
		e.srv.mu.Lock()
		defer e.srv.mu.Unlock()
		pending, held = e.srv.pending.N(), e.srv.silent.N()
		return pending == 0 && held == 0
	}, testwait.Detail(func() string { return fmt.Sprintf("%d pending, %d silent", pending, held) }))
}

// A client that gives up on TLS in the middle of the handshake costs one
// short log line, with no stack trace.
func TestClientTLSAbortLogsOneLine(t *testing.T) {
	e, log := startLoggedProxy(t, nil)
	w := newWitness(t, e)
	sslRequest := func(nc net.Conn, g *wire.Greeting) {
		b := validResponse(g)[:32]
		binary.LittleEndian.PutUint32(b, binary.LittleEndian.Uint32(b)|gomysql.CLIENT_SSL)
		if _, err := nc.Write(framed(b, 1)); err != nil {
			t.Fatal(err)
		}
	}
	aborts := map[string]func(nc net.Conn){
		// The client rejects the proxy's certificate (a bad_certificate alert).
		"certificate rejected": func(nc net.Conn) {
			tc := tls.Client(nc, &tls.Config{ServerName: "example.invalid", MinVersion: tls.VersionTLS12})
			if err := tc.Handshake(); err == nil {
				t.Fatal("handshake with an unverifiable certificate succeeded")
			}
		},
		// Half a ClientHello, then the connection closes.
		"cut ClientHello": func(nc net.Conn) {
			hello := clientHelloBytes(t)
			_, _ = nc.Write(hello[:len(hello)/2])
		},
		// Not TLS at all after the SSL request.
		"plaintext after SSL request": func(nc net.Conn) {
			_, _ = nc.Write(framed(validResponse(&wire.Greeting{Scramble: make([]byte, 20)}), 2))
		},
	}
	for name, abort := range aborts {
		t.Run(name, func(t *testing.T) {
			before := log.String()
			handling := e.srv.handling.Load()
			nc, g := preAuth(t, e.addr)
			sslRequest(nc, g)
			abort(nc)
			nc.Close()
			// Everything is logged once the connection's handler returns.
			testwait.For(t, "the aborted connection's handler returns", func() bool { return e.srv.handling.Load() == handling })
			added := strings.TrimPrefix(log.String(), before)
			lines := strings.Split(strings.TrimRight(added, "\n"), "\n")
			if len(lines) != 1 || lines[0] == "" {
				t.Fatalf("want one log line, got %d:\n%s", len(lines), added)
			}
			l := lines[0]
			t.Logf("%s", l)
			for _, bad := range []string{"goroutine", ".go:", `\n`, "panic", "runtime."} {
				if strings.Contains(l, bad) {
					t.Errorf("log line carries stack text (%q): %s", bad, l)
				}
			}
			if len(l) > 400 {
				t.Errorf("log line is %d bytes", len(l))
			}
			w.check()
		})
	}
}

// clientHelloBytes captures the first flight of a Go TLS client.
func clientHelloBytes(t testing.TB) []byte {
	a, b := net.Pipe()
	go func() {
		tc := tls.Client(a, &tls.Config{InsecureSkipVerify: true})
		_ = tc.Handshake()
	}()
	_ = b.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 4096)
	n, err := b.Read(buf)
	a.Close()
	b.Close()
	if err != nil || n < 10 {
		t.Fatalf("capture ClientHello: %v", err)
	}
	return buf[:n]
}

// Several commands of 16 MiB and more that each fit command_memory alone
// are read one at a time instead of starving one another (each holding
// part of the budget while waiting for more): all of them succeed.
func TestLargeCommandsTakeTurns(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 160 MB through loopback")
	}
	e := startProxy(t, sharedDB(t).Addr, func(c *testConfig) { c.Limits.CommandMemory = 64 * mib })
	// What is tested is taking turns, not how fast: on a loaded machine
	// one 40 MiB command can take longer than the default 10 s turn.
	e.srv.mem.Wait = 3 * time.Minute
	chunk := bytes.Repeat([]byte{'x'}, wire.MaxPayload)
	results := sendHugeConcurrently(t, e.addr, 4, 40*mib, chunk)
	for i, r := range results {
		if r != "ok" {
			t.Errorf("client %d: %s, want ok (4 x 40 MiB with a 64 MiB budget)", i, r)
		}
	}
	// Every command gave its bytes back.
	testwait.For(t, "command memory is released after every command", func() bool { return e.srv.mem.Held() == 0 })
}

// TestCommandLargerThanCommandMemory (issue 40): a statement larger than
// limits.command_memory, with nothing else running, gets 1041 naming the
// key at once, read in sequence by go-sql-driver (it waited 10 s for a
// "try again" that could never succeed, and PyMySQL read "Packet
// sequence number wrong"); the budget is given back, and a statement
// that fits goes through after it.
func TestCommandLargerThanCommandMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 35 MB through loopback")
	}
	e := startProxy(t, sharedDB(t).Addr, func(c *testConfig) { c.Limits.CommandMemory = 32 * mib })
	// The waiting refusal (after 10 s) says "in use by other large
	// statements": the wording checked below is the immediate one's.
	mc := mysql.NewConfig()
	mc.User, mc.Passwd, mc.Net, mc.Addr = "app", "secret", "tcp", e.addr
	mc.MaxAllowedPacket = 64 << 20
	db, err := sql.Open("mysql", mc.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxIdleConns(0)                            // the refusal ends its connection: each statement on a new one
	for _, size := range []int{33 * mib, 40 * mib} { // three pieces, the third past the budget
		var n int64
		err := db.QueryRow("SELECT LENGTH('" + strings.Repeat("x", size) + "')").Scan(&n)
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1041 || !strings.Contains(me.Message, "is larger than limits.command_memory, 33554432 bytes") {
			t.Fatalf("%d-byte statement, command_memory 32 MiB: %v", size, err)
		}
	}
	testwait.For(t, "command memory released", func() bool { return e.srv.mem.Held() == 0 })
	var n int64
	if err := db.QueryRow("SELECT LENGTH('" + strings.Repeat("x", 20*mib) + "')").Scan(&n); err != nil || n != 20*mib {
		t.Fatalf("20 MiB statement after: %d %v", n, err)
	}
}
