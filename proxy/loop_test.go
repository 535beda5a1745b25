//go:build linux

package proxy

import (
	"bytes"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// Tests of the event loops (packages eventloop and lane): that sessions
// really run on them, and what only a loop can get wrong: commands a client
// sends without waiting for answers, commands handed to the session's
// goroutine and back, a client slower than its result, a client that
// leaves, connections coming and going, the idle timeout.

// runnerCounts are the event loop sizes the loop's tests run with: one
// runner, two (one per CPU on the test machine), and more runners than
// CPUs.
var runnerCounts = []int{1, 2, 8}

// TestLoop runs the event loop's tests with each of runnerCounts.
func TestLoop(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, runners int)
	}{
		{"ServesSessions", testLoopServesSessions},
		{"Pipelining", testLoopPipelining},
		{"HandoffRoundTrips", testLoopHandoffRoundTrips},
		{"SlowClient", testLoopSlowClient},
		{"ClientLeavesAfterPipelinedInsert", testLoopClientLeavesAfterPipelinedInsert},
		{"Churn", testLoopChurn},
		{"InterceptorWouldBlock", testLoopInterceptorWouldBlock},
		{"ReadAheadSurvivesMoves", testLoopReadAheadSurvivesMoves},
		{"PanicCostsOneSession", testLoopPanicCostsOneSession},
		{"WouldBlockAfterWriting", testLoopWouldBlockAfterWriting},
		{"IdleTimeoutOnBusyLoop", testLoopIdleTimeoutOnBusyLoop},
		{"ShutdownWhileSessionsArrive", testLoopShutdownWhileSessionsArrive},
	}
	for _, n := range runnerCounts {
		t.Run(fmt.Sprintf("runners=%d", n), func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) { c.run(t, n) })
			}
		})
	}
}

// startLoopProxy is startProxy in front of the shared server with an event
// loop of the given number of runners (mutate may change that too).
func startLoopProxy(t testing.TB, runners int, mutate func(*testConfig), opts ...Option) *env {
	t.Helper()
	return startProxy(t, sharedDB(t).Addr, func(c *testConfig) {
		c.EventLoops = runners
		if mutate != nil {
			mutate(c)
		}
	}, opts...)
}

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
		case wire.IsEOF(p, len(p)):
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
	c.l.Seq = 1
	return c.read()
}

// textValue is the first column of a text row.
func textValue(row []byte) string {
	n, k := wire.LenencUint(row)
	return string(row[k : k+int(n)])
}

func sendCommands(t testing.TB, c *rawClient, cmds ...[]byte) {
	t.Helper()
	for _, p := range cmds {
		if err := c.l.WriteCommand(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.l.Flush(); err != nil { // one write: the proxy reads them together
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

func testLoopServesSessions(t *testing.T, runners int) {
	needLoops(t)
	e := startLoopProxy(t, runners, nil)
	db := e.open(t, "", "")
	db.SetMaxOpenConns(1)
	for i := range 50 {
		var v int
		if err := db.QueryRow("SELECT ?", i).Scan(&v); err != nil || v != i { // prepare, execute, close
			t.Fatalf("SELECT %d: %d, %v", i, v, err)
		}
	}
	st := e.srv.LoopStats()
	if st.Loops != runners || st.Sessions != 1 || st.Moves != 1 || st.Handoffs != 0 {
		t.Fatalf("loop stats %+v: want %d runners serving the one session, moved once, nothing handed back", st, runners)
	}
	// Configured off: every session on its goroutine.
	off := startLoopProxy(t, runners, func(c *Config) { c.EventLoops = -1 })
	odb := off.open(t, "", "")
	if err := odb.Ping(); err != nil {
		t.Fatal(err)
	}
	if st := off.srv.LoopStats(); st.Loops != 0 || st.Moves != 0 {
		t.Fatalf("event_loops -1: stats %+v", st)
	}
}

func testLoopPipelining(t *testing.T, runners int) {
	needsMariaDB(t, "COM_STATISTICS (go-mysql-server: command handling not implemented yet: 9)")
	e := startLoopProxy(t, runners, nil)
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
	if p := readAnswer(c); p[0] != 0xFF || wire.ParseErr(p).Code != gomysql.ER_NO_SUCH_THREAD {
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

func testLoopHandoffRoundTrips(t *testing.T, runners int) {
	needsMariaDB(t, "COM_STATISTICS (go-mysql-server: command handling not implemented yet: 9)")
	needLoops(t)
	e := startLoopProxy(t, runners, nil)
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
// backend instead of holding the result in memory (what it holds for the
// client, measured directly, stays under 16 MiB of the 48 MB result), and
// the result arrives whole once the client reads.
func testLoopSlowClient(t *testing.T, runners int) {
	needsMariaDB(t, "MariaDB's seq_1_to_N table for a large result")
	ensureDB(t, sharedDB(t), "loopt")
	e := startLoopProxy(t, runners, nil)
	c := loggedIn(t, e.addr, "loopt")
	const rows, width = 48, 1 << 20
	var before runtime.MemStats
	if !loopsOn {
		runtime.GC()
		runtime.ReadMemStats(&before)
	}
	if loopsOn {
		// A session reaches its loop after its login; a command sent before
		// that runs on the session's goroutine.
		testwait.For(t, "the session is on its loop", func() bool { return e.srv.LoopStats().Sessions == 1 })
	}
	sendCommands(t, c, queryPkt(fmt.Sprintf("SELECT REPEAT(CHAR(97 + seq %% 26), %d) FROM seq_1_to_%d", width, rows)))
	if loopsOn {
		// The client's socket is full: the loop holds what it did not take
		// and stops reading the backend, whose bytes wait in its socket.
		held, unread := 0, 0
		testwait.For(t, "the loop to hold bytes for the client and leave the backend's in its socket", func() bool {
			held, unread = heldForClient(e)
			return held != 0 && unread != 0
		}, testwait.Detail(func() string {
			return fmt.Sprintf("the loop holds %d bytes for the client, %d wait in the proxy's backend socket, %d in the client's; loop stats %+v; %s",
				held, unread, clientUnread(t, c), e.srv.LoopStats(), laneState(e))
		}))
		// What the proxy holds of the result is the loop's pending bytes
		// for the client: measured directly, not as this process's heap
		// (which other tests' leftovers and the collector move).
		time.Sleep(100 * time.Millisecond) // a deliberate pause: would it read on, it would have by now
		if held, unread = heldForClient(e); held > 16<<20 {
			t.Fatalf("the loop holds %d MB for a client that does not read a %d MB result: the proxy buffers it", held>>20, rows*width>>20)
		}
		t.Logf("the loop holds %d KiB for the client, %d KiB wait in the proxy's backend socket", held>>10, unread>>10)
	} else {
		testwait.For(t, "the result fills the client's socket", func() bool { return clientUnread(t, c) >= 32<<10 })
		// A session's goroutine holds nothing apart: its live heap is the
		// whole test process's (this test does not run beside parallel ones).
		var during runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&during)
		if grew := int64(during.HeapAlloc) - int64(before.HeapAlloc); grew > 16<<20 {
			t.Fatalf("heap grew %d MB while the client did not read a %d MB result: the proxy buffers it", grew>>20, rows*width>>20)
		}
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
func testLoopClientLeavesAfterPipelinedInsert(t *testing.T, runners int) {
	needsMariaDB(t, "DELETE FROM db.table without a default database (go-mysql-server answers database not found)")
	ensureDB(t, sharedDB(t), "loopt")
	sharedDB(t).Exec(t, "CREATE TABLE IF NOT EXISTS loopt.quit (id INT PRIMARY KEY)", "DELETE FROM loopt.quit")
	e := startLoopProxy(t, runners, nil)
	for i := range 20 {
		c := loggedIn(t, e.addr, "")
		sendCommands(t, c, queryPkt(fmt.Sprintf("INSERT INTO loopt.quit VALUES (%d)", i)), []byte{gomysql.COM_QUIT})
		c.l.Conn.Close()
	}
	db := sharedDB(t).Open(t, "loopt")
	var n int
	testwait.For(t, "the 20 INSERTs sent before each client left reach the backend", func() bool {
		if err := db.QueryRow("SELECT COUNT(*) FROM quit").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 20
	})
}

// Connections opened and closed by many goroutines at once: descriptors are
// reused all the time; no answer may reach another connection.
func testLoopChurn(t *testing.T, runners int) {
	e := startLoopProxy(t, runners, nil)
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
	testwait.For(t, "every closed connection leaves its loop", func() bool { return e.srv.LoopStats().Sessions == 0 })
}
