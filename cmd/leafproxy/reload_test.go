package main

import (
	"bytes"
	"database/sql"
	"fmt"

	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

// SIGHUP re-reads the configuration: a new user can log in, a new table
// rule fills keys, sessions already open keep working, an invalid file is
// refused with the running configuration kept.
func TestServeReloadOnSIGHUP(t *testing.T) {
	backend := testdb.Start(t)
	backend.Exec(t, "CREATE DATABASE app", "CREATE TABLE app.orders (id BIGINT PRIMARY KEY, v INT)",
		"CREATE TABLE app.items (id BIGINT PRIMARY KEY, v INT)", "INSERT INTO app.items VALUES (700, 0)")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	path := writeConfig(t, backend, addr)
	done := make(chan int, 1)
	var logs testdb.LockedBuffer
	go func() { done <- run([]string{"serve", "--config", path}, &bytes.Buffer{}, &logs) }()
	defer func() {
		syscall.Kill(os.Getpid(), syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
	}()

	db, _ := sql.Open("mysql", "app:secret@tcp("+addr+")/app")
	defer db.Close()
	db.SetMaxOpenConns(1)
	var v int
	testwait.For(t, "the proxy to come up", func() bool { err = db.QueryRow("SELECT 1").Scan(&v); return err == nil },
		testwait.Detail(func() string { return fmt.Sprintf("%v\n%s", err, logs.String()) }))
	var before string
	db.QueryRow("SELECT CONNECTION_ID()").Scan(&before)

	cfg, _ := os.ReadFile(path)
	next := strings.Replace(string(cfg), "users: [{name: app, password: secret}]",
		"users: [{name: app, password: secret}, {name: app2, password: pw2}]", 1)
	next = strings.Replace(next, "tables: [", "tables: [{table: items, column: id, tag: item}, ", 1)
	next = strings.Replace(next, "audit: {}}", "audit: {}, item: {}}", 1)
	if err := os.WriteFile(path, []byte(next), 0o600); err != nil {
		t.Fatal(err)
	}
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	// Logging in before the reload is applied would be a wrong password
	// (and spend the host's login budget): wait for the reload's report.
	testwait.For(t, "the reload's report", func() bool { return strings.Contains(logs.String(), "configuration reloaded: ") },
		testwait.Detail(logs.String))
	app2, _ := sql.Open("mysql", "app2:pw2@tcp("+addr+")/app")
	defer app2.Close()
	if err = app2.Ping(); err != nil {
		t.Fatalf("new user after SIGHUP: %v\n%s", err, logs.String())
	}
	var after string
	if err := db.QueryRow("SELECT CONNECTION_ID()").Scan(&after); err != nil || after != before {
		t.Fatalf("the open session did not survive the reload: %v (thread %s -> %s)", err, before, after)
	}
	res, err := app2.Exec("INSERT INTO items (v) VALUES (1)")
	if err != nil {
		t.Fatalf("insert into the newly ruled table: %v", err)
	}
	if id, _ := res.LastInsertId(); id <= 700 {
		t.Fatalf("filled key %d, want a generated one above the existing 700", id)
	}
	for _, want := range []string{`user \"app2\" added`, `table rule \"items.id <- item\" added`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("reload log lacks %q:\n%s", want, logs.String())
		}
	}

	// An invalid file is refused; the running configuration stays.
	if err := os.WriteFile(path, []byte(next+"tabels: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	testwait.For(t, "the invalid configuration to be refused", func() bool { return strings.Contains(logs.String(), "reload refused") },
		testwait.Detail(logs.String))
	if !strings.Contains(logs.String(), `tabels`) {
		t.Errorf("the refusal does not name the bad key:\n%s", logs.String())
	}
	if err := app2.Ping(); err != nil {
		t.Fatalf("after a refused reload: %v", err)
	}
}
