package allocator

import (
	"context"
	"database/sql"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// portOf is the port of the server a query on db reaches.
func portOf(t *testing.T, db *sql.DB) int {
	t.Helper()
	var port int
	if err := db.QueryRow("SELECT @@port").Scan(&port); err != nil {
		t.Fatalf("SELECT @@port: %v", err)
	}
	return port
}

// On two MariaDB servers: the pool uses the first; with it stopped, a
// query goes to the second (failover, logged, counted); once the first is
// back and answers FailbackAfter probes in a row, the pool moves back and
// no connection to the second serves a query any more.
func TestStorePoolFailoverAndBack(t *testing.T) {
	a, b := testdb.Start(t), testdb.Start(t)
	var logs testdb.LockedBuffer
	pool, err := NewStorePool([]string{a.DSN(""), b.DSN("")}, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	pool.FailbackEvery, pool.FailbackAfter = 100*time.Millisecond, 2
	db := pool.OpenDB()
	defer pool.Close()
	defer db.Close()
	db.SetMaxIdleConns(8)
	portA, portB := portOf(t, a.Open(t, "")), portOf(t, b.Open(t, ""))

	if got := portOf(t, db); got != portA {
		t.Fatalf("first query on port %d, want the first node's %d", got, portA)
	}
	a.Stop(t)
	got := testwait.Value(t, "a query answered with the first node stopped", func() (int, bool) {
		var port int
		err := db.QueryRow("SELECT @@port").Scan(&port)
		return port, err == nil
	})
	if got != portB {
		t.Fatalf("query after the first node stopped on port %d, want the second node's %d", got, portB)
	}
	if i, addr := pool.InUse(); i != 1 || addr != b.Addr {
		t.Fatalf("in use: %d %s, want 1 %s", i, addr, b.Addr)
	}
	if fo, _ := pool.Moves(); fo != 1 {
		t.Fatalf("failovers %d, want 1", fo)
	}
	if !strings.Contains(logs.String(), "allocation store: failed over to another node") || !strings.Contains(logs.String(), "in_use="+b.Addr) {
		t.Fatalf("failover not logged:\n%s", logs.String())
	}

	// Connections to the second node stay in the pool until the move back.
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() { db.Exec("DO SLEEP(0.05)") })
	}
	wg.Wait()
	a.Restart(t)
	testwait.For(t, "the pool back on the first node", func() bool { i, _ := pool.InUse(); return i == 0 }, testwait.Detail(logs.String))
	if _, fb := pool.Moves(); fb != 1 {
		t.Fatalf("failbacks %d, want 1", fb)
	}
	ports := make(chan int, 16)
	for range 16 {
		wg.Go(func() {
			var port int
			if err := db.QueryRowContext(context.Background(), "SELECT @@port").Scan(&port); err != nil {
				t.Error(err)
			}
			ports <- port
		})
	}
	wg.Wait()
	close(ports)
	for p := range ports {
		if p != portA {
			t.Fatalf("a query after the failback went to port %d, want only the first node's %d", p, portA)
		}
	}
	if !strings.Contains(logs.String(), "allocation store: back on a preferred node") {
		t.Fatalf("failback not logged:\n%s", logs.String())
	}
}
