//go:build linux

package proxy

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
)

// Tests of the event loops (loop_linux.go, lane_linux.go): that sessions
// really run on them, and what only a loop can get wrong: commands a client
// sends without waiting for answers, commands handed to the session's
// goroutine and back, a client slower than its result, a client that
// leaves, connections coming and going, the idle timeout.

// readResult reads one response to a COM_QUERY from a raw client: OK or
// ERR (returned as the only packet), or a result set's rows (column count,
// definitions and EOFs dropped; one result set, no MORE_RESULTS).
func readResult(t testing.TB, c *rawClient) [][]byte {
	t.Helper()
	first := readAnswer(c)
	if first[0] == 0x00 || first[0] == 0xFF {
		return [][]byte{first}
	}
	var rows [][]byte
	eofs := 0
	for eofs < 2 {
		p := c.read()
		switch {
		case isEOF(p, len(p)):
			eofs++
		case p[0] == 0xFF:
			t.Fatalf("ERR in result: %s", p[9:])
		case eofs == 1:
			rows = append(rows, p)
		}
	}
	return rows
}

// readAnswer reads the first packet of the next answer (each starts at
// sequence id 1, whatever came before: commands may be pipelined).
func readAnswer(c *rawClient) []byte {
	c.l.seq = 1
	return c.read()
}

// textValue is the first column of a text row.
func textValue(row []byte) string {
	n, k := lenenc(row)
	return string(row[k : k+int(n)])
}

func sendCommands(t testing.TB, c *rawClient, cmds ...[]byte) {
	t.Helper()
	for _, p := range cmds {
		if err := c.l.writeCommand(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.l.flush(); err != nil { // one write: the proxy reads them together
		t.Fatal(err)
	}
}

func queryPkt(q string) []byte { return append([]byte{gomysql.COM_QUERY}, q...) }

// loggedIn is a raw client logged in as app into db ("" none).
func loggedIn(t testing.TB, addr, db string) *rawClient {
	t.Helper()
	c := dialRaw(t, addr)
	if p := c.login("app", "secret", db, 0, 0); p[0] != 0 {
		t.Fatalf("login: %q", p)
	}
	return c
}

// needLoops skips tests that count what the loops did when they are off
// (scripts/test.sh runs the package once with LEAFPROXY_LOOP=0).
func needLoops(t *testing.T) {
	t.Helper()
	if !loopsOn {
		t.Skip("LEAFPROXY_LOOP=0: event loops off")
	}
}

func TestLoopServesSessions(t *testing.T) {
	needLoops(t)
	e := startProxy(t, shared.Addr, nil)
	db := e.open(t, "", "")
	db.SetMaxOpenConns(1)
	for i := range 50 {
		var v int
		if err := db.QueryRow("SELECT ?", i).Scan(&v); err != nil || v != i { // prepare, execute, close
			t.Fatalf("SELECT %d: %d, %v", i, v, err)
		}
	}
	st := e.srv.LoopStats()
	if st.Loops != runtime.GOMAXPROCS(0) || st.Sessions != 1 || st.Moves != 1 || st.Handoffs != 0 {
		t.Fatalf("loop stats %+v: want %d loops serving the one session, moved once, nothing handed back", st, runtime.GOMAXPROCS(0))
	}
	// Configured off: every session on its goroutine.
	off := startProxy(t, shared.Addr, func(c *Config) { c.EventLoops = -1 })
	odb := off.open(t, "", "")
	if err := odb.Ping(); err != nil {
		t.Fatal(err)
	}
	if st := off.srv.LoopStats(); st.Loops != 0 || st.Moves != 0 {
		t.Fatalf("event_loops -1: stats %+v", st)
	}
}

func TestLoopPipelining(t *testing.T) {
	e := startProxy(t, shared.Addr, nil)
	c := loggedIn(t, e.addr, "")
	// Five commands in one write; COM_STATISTICS and the KILL go to the
	// session's goroutine, the others run on the loop. Answers in order.
	sendCommands(t, c, queryPkt("SELECT 1"), []byte{gomysql.COM_STATISTICS}, queryPkt("SELECT 3"),
		queryPkt("KILL 999999"), []byte{gomysql.COM_PING}, queryPkt("SELECT 6"))
	if rows := readResult(t, c); len(rows) != 1 || textValue(rows[0]) != "1" {
		t.Fatalf("first answer: %q", rows)
	}
	if p := readAnswer(c); !bytes.HasPrefix(p, []byte("Uptime")) {
		t.Fatalf("statistics: %q", p)
	}
	if rows := readResult(t, c); len(rows) != 1 || textValue(rows[0]) != "3" {
		t.Fatalf("third answer: %q", rows)
	}
	if p := readAnswer(c); p[0] != 0xFF || parseErr(p).Code != gomysql.ER_NO_SUCH_THREAD {
		t.Fatalf("KILL of an unknown id: %q", p)
	}
	if p := readAnswer(c); p[0] != 0x00 {
		t.Fatalf("ping: %q", p)
	}
	if rows := readResult(t, c); len(rows) != 1 || textValue(rows[0]) != "6" {
		t.Fatalf("last answer: %q", rows)
	}
	if st := e.srv.LoopStats(); loopsOn && st.Handoffs < 1 {
		t.Fatalf("no command was handed to the goroutine: %+v", st)
	}
}

func TestLoopHandoffRoundTrips(t *testing.T) {
	needLoops(t)
	e := startProxy(t, shared.Addr, nil)
	c := loggedIn(t, e.addr, "")
	before := e.srv.LoopStats()
	const rounds = 30
	for i := range rounds {
		if p := c.command([]byte{gomysql.COM_STATISTICS}); !bytes.HasPrefix(p, []byte("Uptime")) {
			t.Fatalf("round %d: statistics: %q", i, p)
		}
		// Enough commands for the goroutine to give the session back.
		for j := range loopBackoff + 2 {
			want := strconv.Itoa(i*100 + j)
			sendCommands(t, c, queryPkt("SELECT "+want))
			if rows := readResult(t, c); len(rows) != 1 || textValue(rows[0]) != want {
				t.Fatalf("round %d: SELECT %s: %q", i, want, rows)
			}
		}
	}
	st := e.srv.LoopStats()
	if st.Handoffs-before.Handoffs < rounds || st.Moves-before.Moves < rounds || st.Sessions != 1 {
		t.Fatalf("after %d rounds: %+v (before %+v): want a handoff and a move back per round", rounds, st, before)
	}
}

// A client that does not read its result: the loop stops reading the
// backend instead of holding the result in memory, and the result arrives
// whole once the client reads.
func TestLoopSlowClient(t *testing.T) {
	ensureDB(t, shared, "loopt")
	e := startProxy(t, shared.Addr, nil)
	c := loggedIn(t, e.addr, "loopt")
	const rows, width = 48, 1 << 20
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	sendCommands(t, c, queryPkt(fmt.Sprintf("SELECT REPEAT(CHAR(97 + seq %% 26), %d) FROM seq_1_to_%d", width, rows)))
	time.Sleep(700 * time.Millisecond) // MariaDB has sent what the sockets take
	var during runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&during)
	if grew := int64(during.HeapAlloc) - int64(before.HeapAlloc); grew > 16<<20 {
		t.Fatalf("heap grew %d MB while the client did not read a %d MB result: the proxy buffers it", grew>>20, rows*width>>20)
	}
	got := readResult(t, c)
	if len(got) != rows {
		t.Fatalf("%d rows, want %d", len(got), rows)
	}
	for i, r := range got {
		v := textValue(r)
		if len(v) != width || v[0] != byte('a'+(i+1)%26) || v[width-1] != v[0] {
			t.Fatalf("row %d: %d bytes starting %q", i, len(v), v[:min(len(v), 8)])
		}
	}
	sendCommands(t, c, queryPkt("SELECT 1")) // the session goes on
	if rows := readResult(t, c); len(rows) != 1 || textValue(rows[0]) != "1" {
		t.Fatalf("after: %q", rows)
	}
}

// A client that sends an INSERT and COM_QUIT and closes without reading:
// the INSERT still reaches the backend, as it would directly.
func TestLoopClientLeavesAfterPipelinedInsert(t *testing.T) {
	ensureDB(t, shared, "loopt")
	shared.Exec(t, "CREATE TABLE IF NOT EXISTS loopt.quit (id INT PRIMARY KEY)", "DELETE FROM loopt.quit")
	e := startProxy(t, shared.Addr, nil)
	for i := range 20 {
		c := loggedIn(t, e.addr, "")
		sendCommands(t, c, queryPkt(fmt.Sprintf("INSERT INTO loopt.quit VALUES (%d)", i)), []byte{gomysql.COM_QUIT})
		c.l.conn.Close()
	}
	db := shared.Open(t, "loopt")
	var n int
	waitFor(t, func() bool {
		if err := db.QueryRow("SELECT COUNT(*) FROM quit").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 20
	}, "the 20 INSERTs sent before each client left reach the backend")
}

// Connections opened and closed by many goroutines at once: descriptors are
// reused all the time; no answer may reach another connection.
func TestLoopChurn(t *testing.T) {
	e := startProxy(t, shared.Addr, nil)
	db := e.open(t, "", "")
	db.SetMaxIdleConns(0) // a new connection per query
	var wg sync.WaitGroup
	var bad atomic.Int32
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 30 {
				want := g*1000 + i
				var v int
				if err := db.QueryRow("SELECT ?", want).Scan(&v); err != nil {
					errs <- err
					return
				}
				if v != want {
					bad.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if bad.Load() > 0 {
		t.Fatalf("%d answers reached the wrong connection", bad.Load())
	}
	st := e.srv.LoopStats()
	if loopsOn && st.Moves < 16*30 {
		t.Fatalf("stats %+v: want every connection on a loop", st)
	}
	waitFor(t, func() bool { return e.srv.LoopStats().Sessions == 0 }, "every closed connection leaves its loop")
}

func waitFor(t testing.TB, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// wouldBlock answers `SELECT 'wait'` only where it may wait.
type wouldBlock struct {
	BaseInterceptor
	onLoop, onGoroutine atomic.Int32
}

func (w *wouldBlock) Query(ctx context.Context, s *Session, sql []byte) (bool, error) {
	if string(sql) != "SELECT 'wait'" {
		return false, nil
	}
	if MustNotBlock(ctx) {
		w.onLoop.Add(1)
		return false, fmt.Errorf("fetch: %w", ErrWouldBlock)
	}
	w.onGoroutine.Add(1)
	time.Sleep(20 * time.Millisecond) // waiting is fine here
	return true, s.WriteOK(0, 42, 0)
}

func TestLoopInterceptorWouldBlock(t *testing.T) {
	needLoops(t)
	w := &wouldBlock{}
	e := startProxy(t, shared.Addr, nil, WithInterceptor(w))
	db := e.open(t, "", "")
	db.SetMaxOpenConns(1)
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		res, err := db.Exec("SELECT 'wait'")
		if err != nil {
			t.Fatal(err)
		}
		if id, _ := res.LastInsertId(); id != 42 {
			t.Fatalf("insert id %d", id)
		}
		for j := range loopBackoff + 1 { // back to the loop
			var v int
			if err := db.QueryRow("SELECT " + strconv.Itoa(j)).Scan(&v); err != nil || v != j {
				t.Fatalf("round %d: %d, %v", i, v, err)
			}
		}
	}
	if w.onLoop.Load() != 3 || w.onGoroutine.Load() != 3 {
		t.Fatalf("calls on the loop %d, on the goroutine %d: want 3 and 3", w.onLoop.Load(), w.onGoroutine.Load())
	}
}

func TestIdleTimeout(t *testing.T) {
	for _, loops := range []int{0, -1} {
		t.Run(fmt.Sprintf("event_loops=%d", loops), func(t *testing.T) {
			e := startProxy(t, shared.Addr, func(c *Config) {
				c.Limits.IdleTimeout = 300 * time.Millisecond
				c.EventLoops = loops
			})
			db := e.open(t, "", "")
			db.SetMaxOpenConns(1)
			conn, err := db.Conn(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if err := conn.PingContext(context.Background()); err != nil {
				t.Fatal(err)
			}
			time.Sleep(150 * time.Millisecond)
			if err := conn.PingContext(context.Background()); err != nil { // not idle long enough
				t.Fatalf("closed after 150 ms of a 300 ms idle timeout: %v", err)
			}
			waitFor(t, func() bool { cur, _ := e.srv.Sessions(); return cur == 0 }, "the idle session is closed")
			err = conn.PingContext(context.Background())
			if err == nil || !(errors.Is(err, io.EOF) || errors.Is(err, sql.ErrConnDone) || errors.Is(err, driver.ErrBadConn) ||
				bytes.Contains([]byte(err.Error()), []byte("invalid connection")) || bytes.Contains([]byte(err.Error()), []byte("bad connection"))) {
				t.Fatalf("ping after the idle timeout: %v, want a closed connection", err)
			}
		})
	}
}

// A pipelined burst larger than the goroutine's read buffer, whose first
// command goes to the goroutine: what the loop had read ahead reaches the
// goroutine first, and when the session moves back, what the goroutine had
// not read yet goes back with it (it was dropped once: review of issue 11).
func TestLoopReadAheadSurvivesMoves(t *testing.T) {
	e := startProxy(t, shared.Addr, nil)
	c := loggedIn(t, e.addr, "")
	pad := strings.Repeat("x", 200)
	cmds := [][]byte{{gomysql.COM_STATISTICS}}
	const n = 3 * loopBackoff
	for i := range n {
		cmds = append(cmds, queryPkt(fmt.Sprintf("SELECT %d /* %s */", i, pad)))
	}
	sendCommands(t, c, cmds...)
	if p := readAnswer(c); !bytes.HasPrefix(p, []byte("Uptime")) {
		t.Fatalf("statistics: %q", p)
	}
	for i := range n {
		if rows := readResult(t, c); len(rows) != 1 || textValue(rows[0]) != strconv.Itoa(i) {
			t.Fatalf("answer %d: %q", i, rows)
		}
	}
}

type panicky struct{ BaseInterceptor }

func (panicky) Query(ctx context.Context, s *Session, sql []byte) (bool, error) {
	if string(sql) == "SELECT 'panic'" {
		panic("interceptor bug")
	}
	return false, nil
}

// An interceptor's panic costs its session only, also when the command was
// read ahead by the goroutine and runs as the session moves onto its loop.
func TestLoopPanicCostsOneSession(t *testing.T) {
	e := startProxy(t, shared.Addr, nil, WithInterceptor(panicky{}))
	other := e.open(t, "", "")
	if err := other.Ping(); err != nil {
		t.Fatal(err)
	}
	for _, lead := range []int{0, loopBackoff} { // on the loop; right at the move back
		c := loggedIn(t, e.addr, "")
		cmds := [][]byte{{gomysql.COM_STATISTICS}}
		for range lead {
			cmds = append(cmds, queryPkt("SELECT 1"))
		}
		sendCommands(t, c, append(cmds, queryPkt("SELECT 'panic'"))...)
		readAnswer(c)
		for range lead {
			readResult(t, c)
		}
		c.l.seq = 1
		if _, err := c.l.readPacket(nil, 1<<20); err == nil {
			t.Fatal("the session that panicked answered")
		}
	}
	var v int
	if err := other.QueryRow("SELECT 7").Scan(&v); err != nil || v != 7 {
		t.Fatalf("another session after the panics: %d, %v", v, err)
	}
}

// waitsAfterWriting is a buggy interceptor: it answers, then says it would
// block. Running the command again would answer twice: the session ends.
type waitsAfterWriting struct{ BaseInterceptor }

func (waitsAfterWriting) Query(ctx context.Context, s *Session, sql []byte) (bool, error) {
	if string(sql) != "SELECT 'twice'" {
		return false, nil
	}
	if err := s.WriteOK(0, 1, 0); err != nil {
		return true, err
	}
	if MustNotBlock(ctx) {
		return false, ErrWouldBlock
	}
	return true, nil
}

func TestLoopWouldBlockAfterWriting(t *testing.T) {
	needLoops(t)
	e := startProxy(t, shared.Addr, nil, WithInterceptor(waitsAfterWriting{}))
	c := loggedIn(t, e.addr, "")
	sendCommands(t, c, queryPkt("SELECT 'twice'"))
	if p := readAnswer(c); p[0] != 0x00 {
		t.Fatalf("first answer: %q", p)
	}
	if _, err := c.l.readPacket(nil, 1<<20); err == nil {
		t.Fatal("a second answer came: the command ran twice")
	}
}

// limits.idle_timeout holds while another session keeps the loop's one
// runner busy: the silent session is closed. (The runner may still park
// between pings and sweep on its timer; what this asserts is the outcome,
// not which of the two sweeps did it.)
func TestIdleTimeoutOnBusyLoop(t *testing.T) {
	needLoops(t)
	e := startProxy(t, shared.Addr, func(c *Config) {
		c.Limits.IdleTimeout = 300 * time.Millisecond
		c.EventLoops = 1
	})
	db := e.open(t, "", "")
	db.SetMaxOpenConns(2)
	idle, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if err := idle.PingContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	busy, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := busy.PingContext(context.Background()); err != nil {
			t.Fatal(err)
		}
		if cur, _ := e.srv.Sessions(); cur == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the silent session was not closed while the loop stayed busy")
		}
	}
}

// Shutdown twice (an explicit call and the context's) is harmless.
func TestShutdownTwice(t *testing.T) {
	e := startProxy(t, shared.Addr, nil)
	db := e.open(t, "", "")
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	_ = e.stop()
}

// Sessions logging in and moving onto the loop while Shutdown drains it:
// every session ends and Shutdown returns in time. A stress test around a
// window a review found (a drain pass meeting a lane listed but not yet
// registered); the window is narrow, so this does not prove its fix.
func TestLoopShutdownWhileSessionsArrive(t *testing.T) {
	e := startProxy(t, shared.Addr, nil)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				db, err := sql.Open("mysql", e.dsn("app", "secret", "", "timeout=2s"))
				if err != nil {
					return
				}
				_ = db.Ping()
				db.Close()
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- e.srv.Shutdown(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Shutdown: %v (sessions were cut off after the grace period)", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Shutdown did not return")
	}
	close(stop)
	wg.Wait()
	if cur, _ := e.srv.Sessions(); cur != 0 {
		t.Fatalf("%d sessions left after Shutdown", cur)
	}
	if st := e.srv.LoopStats(); st.Sessions != 0 {
		t.Fatalf("loop stats after Shutdown: %+v", st)
	}
}
