package main

import (
	"bytes"
	"database/sql"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

// TestBackendOutageLog: while the backend (here also the allocation
// store) is unreachable, `leafproxy serve` logs that once when it goes
// down and once when it answers again, however many clients, probes and
// fetches fail meanwhile; and nothing of go-sql-driver's own output (its
// "[mysql] ... packets.go:58 unexpected EOF", "closing bad idle
// connection") reaches the log: the store's pooled connections and the
// health probes all break during the outage, which is when the driver
// talks.
func TestBackendOutageLog(t *testing.T) {
	backend := testdb.Start(t)
	fwd := testdb.NewForwarder(t, backend.Addr)
	addr, maddr := freeAddr(t), freeAddr(t)
	path := filepath.Join(t.TempDir(), "leafproxy.yaml")
	cfg := fmt.Sprintf(`listen: %s
backend: {addr: %s, user: root, connect_timeout: 1s}
users: [{name: app, password: secret}]
sequences:
  wait_timeout: 300ms
  tags: {order: {generator: segment, step: 10}}
metrics: {listen: %s}
log: {level: info}
`, addr, fwd.Addr, maddr)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs testdb.LockedBuffer
	done := make(chan int, 1)
	go func() { done <- run([]string{"serve", "--config", path}, &bytes.Buffer{}, &logs) }()
	defer func() {
		syscall.Kill(os.Getpid(), syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
	}()
	dsn := "app:secret@tcp(" + addr + ")/?timeout=2s"
	nextval := func() error {
		db, err := sql.Open("mysql", dsn)
		if err != nil {
			return err
		}
		defer db.Close()
		var v int64
		return db.QueryRow("SELECT NEXTVAL('order')").Scan(&v)
	}
	var err error
	testwait.For(t, "the proxy to come up", func() bool { err = nextval(); return err == nil },
		testwait.Detail(func() string { return fmt.Sprintf("%v\n%s", err, logs.String()) }))
	// A session held open through the outage, with its store connections
	// pooled and the background read-back of leaf_alloc running.
	held, _ := sql.Open("mysql", dsn)
	defer held.Close()
	for range 20 {
		var v int64
		if err := held.QueryRow("SELECT NEXTVAL('order')").Scan(&v); err != nil {
			t.Fatal(err)
		}
	}
	healthz := func() {
		if resp, err := http.Get("http://" + maddr + "/healthz"); err == nil {
			resp.Body.Close()
		}
	}
	const down, up = "backend down: cannot connect", "backend up: answering again"

	// The outage lasts until the down line is logged and, after it, new
	// clients, the held session (whose buffered IDs run out, then its
	// fetches fail) and the health probe have failed afterDown times more:
	// failures that must not log it again.
	const afterDown = 5
	fwd.SetTarget(freeAddr(t)) // nothing listens there: every connect fails
	failedClients, failedHeld := 0, 0
	testwait.For(t, fmt.Sprintf("%d refused clients and %d failed NEXTVALs of the held session after the %q line", afterDown, afterDown, down), func() bool {
		if failedClients >= afterDown && failedHeld >= afterDown {
			return true
		}
		logged := strings.Contains(logs.String(), down)
		if err := nextval(); err != nil && logged { // a new client: refused
			failedClients++
		}
		var v int64
		if err := held.QueryRow("SELECT NEXTVAL('order')").Scan(&v); err != nil && logged { // the held one: buffers, then fetches fail
			failedHeld++
		}
		healthz()
		return false
	}, testwait.Detail(func() string {
		return fmt.Sprintf("%d and %d:\n%s", failedClients, failedHeld, logs.String())
	}))
	if n := strings.Count(logs.String(), down); n != 1 {
		t.Fatalf("%d %q lines during the outage, want 1:\n%s", n, down, logs.String())
	}

	fwd.SetTarget(backend.Addr)
	testwait.For(t, "a session after the backend came back", func() bool { return nextval() == nil }, testwait.Detail(logs.String))
	healthz()
	out := logs.String()
	if n := strings.Count(out, up); n != 1 {
		t.Errorf("%d %q lines after the outage, want 1:\n%s", n, up, out)
	}
	if n := strings.Count(out, down); n != 1 {
		t.Errorf("%d %q lines, want 1:\n%s", n, down, out)
	}
	for _, leak := range []string{"mysql-driver", "[mysql]", "packets.go", "connection.go", "closing bad idle connection", "busy buffer"} {
		if strings.Contains(out, leak) {
			t.Errorf("go-sql-driver's own output (%q) in the log:\n%s", leak, out)
		}
	}
}

// freeAddr returns a loopback host:port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
