package main

import (
	"database/sql"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

// TestDemoCommand runs `go run ./cmd/leafproxy-demo` as the README does (no MySQL or
// MariaDB involved): it prints a command line whose port reaches the
// proxy, a filled INSERT reports its key, and SIGTERM ends it with exit 0.
func TestDemoCommand(t *testing.T) {
	var out, errOut testdb.LockedBuffer
	done := make(chan int, 1)
	go func() { done <- run(nil, &out, &errOut) }()
	line := regexp.MustCompile(`mariadb -h127\.0\.0\.1 -P(\d+) -udemo -pdemo shop`)
	port := testwait.Value(t, "the command line printed", func() (string, bool) {
		if m := line.FindStringSubmatch(out.String()); m != nil {
			return m[1], true
		}
		select {
		case code := <-done:
			t.Fatalf("demo exited %d: %s%s", code, out.String(), errOut.String())
		default:
		}
		return "", false
	}, testwait.Detail(func() string { return out.String() + errOut.String() }))
	db, err := sql.Open("mysql", "demo:demo@tcp(127.0.0.1:"+port+")/shop")
	if err != nil {
		t.Fatal(err)
	}
	var nv int64
	if err := db.QueryRow("SELECT NEXTVAL('order')").Scan(&nv); err != nil {
		t.Fatal(err)
	}
	res, err := db.Exec("INSERT INTO orders (item) VALUES ('book')")
	if err != nil {
		t.Fatal(err)
	}
	var stored int64
	db.QueryRow("SELECT id FROM orders WHERE item = 'book'").Scan(&stored)
	if id, _ := res.LastInsertId(); id != stored || id <= nv {
		t.Fatalf("LastInsertId %d, stored %d, NEXTVAL before %d", id, stored, nv)
	}
	db.Close()
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	select {
	case code := <-done:
		if code != 0 || !strings.Contains(errOut.String(), "received SIGTERM, stopping the demo") {
			t.Fatalf("demo exited %d:\n%s", code, errOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("demo did not stop on SIGTERM")
	}
}
