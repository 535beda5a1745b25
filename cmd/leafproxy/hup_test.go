package main

import (
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

// TestSIGHUPDuringStartup (issue 40): a SIGHUP that arrives while serve is
// still starting (its metrics socket already bound and accepting, the
// backend not answering yet) does not end the process: the reload is
// applied once the proxy runs. A child process, since the signal's
// default action ends the process it reaches.
func TestSIGHUPDuringStartup(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	backend := testdb.Start(t)
	fwd := testdb.NewForwarder(t, "") // stalled: start-up waits for the backend
	dir := t.TempDir()
	bin := filepath.Join(dir, "leafproxy")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	addr, maddr := freeAddr(t), freeAddr(t)
	path := filepath.Join(dir, "leafproxy.yaml")
	cfg := fmt.Sprintf(`listen: %s
backend: {addr: %s, user: root, connect_timeout: 3s}
users: [{name: app, password: secret}]
sequences: {tags: {order: {generator: segment}}}
metrics: {listen: %s}
log: {level: info}
`, addr, fwd.Addr, maddr)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var out testdb.LockedBuffer
	cmd := exec.Command(bin, "serve", "--config", path)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
		}
	}()
	// The metrics socket is bound before start-up's work: once it
	// accepts, the process is starting, the backend stalled.
	testwait.For(t, "the metrics socket bound", func() bool {
		c, err := net.DialTimeout("tcp", maddr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, testwait.Detail(out.String))
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	fwd.SetTarget(backend.Addr)
	db, _ := sql.Open("mysql", "app:secret@tcp("+addr+")/?timeout=2s")
	defer db.Close()
	var v int64
	var err error
	testwait.For(t, "the proxy serving after a SIGHUP during start-up", func() bool {
		select {
		case werr := <-exited:
			t.Fatalf("serve exited on a SIGHUP during start-up: %v\n%s", werr, out.String())
		default:
		}
		err = db.QueryRow("SELECT NEXTVAL('order')").Scan(&v)
		return err == nil
	}, testwait.Detail(func() string { return fmt.Sprint(err, "\n", out.String()) }))
	testwait.For(t, "the reload applied after start-up", func() bool {
		return strings.Contains(out.String(), "received SIGHUP during start-up, reloading the configuration now that the proxy runs") &&
			strings.Contains(out.String(), "configuration reloaded")
	}, testwait.Detail(out.String))
}
