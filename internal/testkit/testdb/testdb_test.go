package testdb

import (
	"testing"
)

func TestMain(m *testing.M) { Main(m) }

// TestStopRestartKeepsData checks what outage tests rely on: a stopped
// server refuses connections, and comes back on the same port with its data.
func TestStopRestartKeepsData(t *testing.T) {
	s := Start(t)
	db := s.Open(t, "h")
	if _, err := db.Exec("CREATE TABLE t (v INT)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO t VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	s.Stop(t)
	if err := s.ping(); err == nil {
		t.Fatal("server still answers after Stop")
	}
	s.Restart(t)
	var v int
	if err := db.QueryRow("SELECT v FROM t").Scan(&v); err != nil || v != 42 {
		t.Fatalf("after restart: v=%d err=%v", v, err)
	}
}

// TestTwoServersAreIndependent: tests that need shards get separate servers.
func TestTwoServersAreIndependent(t *testing.T) {
	a, b := Start(t), Start(t)
	if a.Addr == b.Addr {
		t.Fatalf("same address %s", a.Addr)
	}
	a.Open(t, "only_a")
	var n int
	if err := b.Open(t, "").QueryRow("SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name='only_a'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("database leaked between servers: n=%d err=%v", n, err)
	}
}
