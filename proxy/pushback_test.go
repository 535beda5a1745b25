//go:build linux

package proxy

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"syscall"
	"testing"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// Back pressure towards the backend: a backend that does not
// read (stopped, or a full network path) must stop the proxy from reading
// the client, on an event loop as on a session's goroutine. The test
// client pipelines COM_STMT_SEND_LONG_DATA, a command without an answer,
// so nothing but back pressure can stop it; without it a loop would take
// whatever the client sent into lane.backendPending.
func TestBackendPushBack(t *testing.T) {
	// A server of its own: the test stops it (SIGSTOP) while a session
	// sends to it.
	db := testdb.Start(t)
	for _, loops := range append(runnerCounts, -1) {
		name := fmt.Sprintf("event loop, %d runners", loops)
		if loops < 0 {
			name = "goroutine per session"
		}
		t.Run(name, func(t *testing.T) {
			e := startProxy(t, db.Addr, func(c *Config) { c.EventLoops = loops })
			pushBack(t, e, db)
		})
	}
}

// pushBack prepares SELECT LENGTH(?), stops the backend, pipelines 48 MiB
// of long data for the parameter until the proxy stops taking it, checks
// the proxy's heap, lets the backend go on and checks that the statement
// got every byte.
func pushBack(t *testing.T, e *env, db *testdb.Server) {
	const (
		chunk = 32 << 10 // long data per packet: the loop's commands (under 64 KiB)
		total = 48 << 20 // under the backend's max_allowed_packet (64 MiB)
		bound = 16 * mib // heap growth allowed while the backend is stopped
	)
	c := loggedIn(t, e.addr, "")
	id, err := rawPrepare(c, "SELECT LENGTH(?)")
	if err != nil {
		t.Fatal(err)
	}
	// One packet, sent over and over: the client holds nothing per send.
	payload := make([]byte, 7, 7+chunk)
	payload[0] = gomysql.COM_STMT_SEND_LONG_DATA
	binary.LittleEndian.PutUint32(payload[1:], id)
	payload = append(payload, bytes.Repeat([]byte{'x'}, chunk)...)
	pkt := framed(payload, 0)

	h := startHeapSampler()
	stopped := stopServer(t, db)
	nc := c.l.Conn
	_ = nc.SetDeadline(time.Time{})
	sent := make(chan int, 1)
	progress := make(chan int, 64)
	go func() {
		n := 0
		for n < total {
			if _, err := nc.Write(pkt); err != nil {
				break
			}
			n += chunk
			select {
			case progress <- n:
			default:
			}
		}
		sent <- n
	}()
	// The client is stopped when it makes no progress for a while: a
	// write the proxy does not take blocks. (There is no event to wait
	// for: not reading is the behaviour under test.)
	taken, finished := 0, false
	quiet := time.NewTimer(2 * time.Second)
wait:
	for {
		select {
		case n := <-progress:
			taken = n
			if !quiet.Stop() {
				<-quiet.C
			}
			quiet.Reset(2 * time.Second)
		case n := <-sent:
			taken, finished = n, true
			break wait
		case <-quiet.C:
			break wait
		}
	}
	grew := h.growth()
	st := e.srv.LoopStats()
	t.Logf("backend stopped: the client got %.1f MiB in before the proxy stopped reading it; peak heap+stack growth %.1f MiB (loop sessions %d)",
		float64(taken)/mib, float64(grew)/mib, st.Sessions)
	if taken >= total {
		t.Errorf("the proxy took all %d MiB of long data for a backend that reads nothing", total/mib)
	}
	if grew > bound {
		t.Errorf("heap grew %.1f MiB while the backend read nothing, bound %d MiB", float64(grew)/mib, bound/mib)
	}

	// The backend goes on: every byte reaches it, in order.
	stopped()
	if !finished {
		taken = <-sent
	}
	if taken != total {
		t.Fatalf("the client sent %d of %d bytes after the backend went on", taken, total)
	}
	_ = nc.SetDeadline(time.Now().Add(time.Minute))
	exec := []byte{gomysql.COM_STMT_EXECUTE, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, gomysql.MYSQL_TYPE_BLOB, 0}
	binary.LittleEndian.PutUint32(exec[1:], id)
	sendCommands(t, c, exec)
	rows := readBinaryRows(t, c)
	// One row: header, NULL bitmap, the value (LONG or LONGLONG).
	if len(rows) != 1 || len(rows[0]) != 6 && len(rows[0]) != 10 {
		t.Fatalf("execute: rows %q", rows)
	}
	var v [8]byte
	copy(v[:], rows[0][2:])
	if got := binary.LittleEndian.Uint64(v[:]); got != total {
		t.Fatalf("LENGTH(?) = %d after the long data, want %d", got, total)
	}
}

// stopServer stops the server's process (SIGSTOP) and returns what
// resumes it; the test's end resumes it too.
func stopServer(t *testing.T, db *testdb.Server) (resume func()) {
	pid := db.PID()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	done := false
	resume = func() {
		if !done {
			done = true
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	t.Cleanup(resume)
	return resume
}

// rawPrepare prepares sql on a raw client and reads the whole answer.
func rawPrepare(c *rawClient, sql string) (uint32, error) {
	c.l.Seq = 0
	ok := c.command(append([]byte{gomysql.COM_STMT_PREPARE}, sql...))
	if ok[0] != 0 {
		return 0, fmt.Errorf("prepare: %q", ok)
	}
	id := binary.LittleEndian.Uint32(ok[1:])
	cols, params := binary.LittleEndian.Uint16(ok[5:]), binary.LittleEndian.Uint16(ok[7:])
	for _, n := range []uint16{params, cols} {
		if n == 0 {
			continue
		}
		for range n {
			c.read()
		}
		if p := c.read(); !wire.IsEOF(p, len(p)) {
			return 0, fmt.Errorf("prepare: want EOF, got %q", p)
		}
	}
	return id, nil
}

// readBinaryRows reads a binary result set (one, without MORE_RESULTS)
// and returns its rows.
func readBinaryRows(t testing.TB, c *rawClient) [][]byte {
	t.Helper()
	first := readAnswer(c)
	if first[0] == 0xFF {
		t.Fatalf("ERR: %s", first[9:])
	}
	var rows [][]byte
	for eofs := 0; eofs < 2; {
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
