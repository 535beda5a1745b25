package bench

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
)

// TestIdleMemory (issue 11) measures what idle logged-in connections cost
// the proxy: leafproxy runs as a process of its own (cmd/leafproxy, or
// LEAFPROXY_BENCH_PROXY_BIN to compare another build), and its resident
// set (VmRSS) is read with one connection open, then with
// LEAFPROXY_BENCH_IDLE_CONNS (1,000) more logged in and idle, then again
// after every one of them has read a 64 KB result and gone idle again
// (RSS counts only touched pages: the first reading flatters buffers
// allocated up front and never filled), and once more
// LEAFPROXY_BENCH_IDLE_LATER (10 s) later. Goal:
// under 64 KB per idle connection.
func TestIdleMemory(t *testing.T) {
	benchEnabled(t)
	n := envInt(t, "LEAFPROXY_BENCH_IDLE_CONNS", 1000)
	settle := envDuration(t, "LEAFPROXY_BENCH_IDLE_SETTLE", 2*time.Second)
	srv := testdb.Start(t)
	srv.Exec(t, "CREATE DATABASE bench")
	dir := t.TempDir()
	bin := os.Getenv("LEAFPROXY_BENCH_PROXY_BIN")
	if bin == "" {
		bin = buildLeafproxy(t, dir)
	}
	addr := freeAddr(t)
	pid := startLeafProcess(t, bin, dir, "tcp", addr, srv.Addr)

	c, err := mysql.ParseDSN(srv.DSN("bench"))
	if err != nil {
		t.Fatal(err)
	}
	c.Addr, c.User, c.Passwd = addr, "app", "secret"
	db, err := sql.Open("mysql", c.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxIdleConns(n + 1)
	db.SetConnMaxLifetime(0)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(settle) // let RSS settle before each reading: a measurement's interval, not a wait
	rss0 := procRSS(t, pid)

	conns := make([]*sql.Conn, n)
	for i := range conns {
		if conns[i], err = db.Conn(ctx); err != nil {
			t.Fatalf("connection %d: %v", i+1, err)
		}
		if err := conns[i].PingContext(ctx); err != nil {
			t.Fatalf("connection %d: %v", i+1, err)
		}
	}
	time.Sleep(settle)
	rss1 := procRSS(t, pid)
	for i, cn := range conns {
		if _, err := cn.ExecContext(ctx, "INSERT INTO bench.orders_idle_probe_missing VALUES (1)"); err == nil {
			t.Fatalf("connection %d: the probe statement succeeded", i+1)
		}
		// A 64 KB result passes through every buffer of the session (RSS
		// counts only pages that were touched).
		var s string
		if err := cn.QueryRowContext(ctx, "SELECT REPEAT('x', 65536)").Scan(&s); err != nil || len(s) != 65536 {
			t.Fatalf("connection %d: %v", i+1, err)
		}
	}
	time.Sleep(settle)
	rss2 := procRSS(t, pid)
	// The proxy returns parked buffers to the OS at most every 10 s
	// (proxy/idle/memory.go); the login burst above may have used that turn.
	later := envDuration(t, "LEAFPROXY_BENCH_IDLE_LATER", 10*time.Second)
	cpu0 := procCPU(pid)
	time.Sleep(later) // idle on purpose: the memory return and the idle CPU are measured over it
	rss3 := procRSS(t, pid)
	idleCPU := procCPU(pid) - cpu0 // the idle watch of n sessions, the memory return
	for _, cn := range conns {
		cn.Close()
	}
	per := func(a, b uint64) string { return fmt.Sprintf("%.1f KB", (float64(b)-float64(a))/float64(n)/1024) }
	out := new(strings.Builder)
	fmt.Fprintf(out, "\nIdle connections: leafproxy process %s, %d connections, %s settle\n\n", filepath.Base(bin), n, settle)
	fmt.Fprintln(out, "| state | proxy RSS | per idle connection (goal < 64 KB) |")
	fmt.Fprintln(out, "|---|---:|---:|")
	fmt.Fprintf(out, "| 1 connection | %s MB | |\n", mb(rss0))
	fmt.Fprintf(out, "| +%d logged in, idle | %s MB | %s |\n", n, mb(rss1), per(rss0, rss1))
	fmt.Fprintf(out, "| each ran an error and a 64 KB result, idle again | %s MB | %s |\n", mb(rss2), per(rss0, rss2))
	fmt.Fprintf(out, "| the same, %s later | %s MB | %s |\n", later, mb(rss3), per(rss0, rss3))
	fmt.Fprintf(out, "\nCPU of the proxy over those %s with %d idle sessions: %v (%.2f%% of one core)\n",
		later, n, idleCPU.Round(time.Millisecond), 100*idleCPU.Seconds()/later.Seconds())
	report(t, out.String())
}

// procRSS reads a process's VmRSS.
func procRSS(t *testing.T, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}
