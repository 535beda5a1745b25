package integration

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

// Helpers for tests that drive the clients users run (PyMySQL, node
// mysql2, the mariadb CLI, MariaDB Connector/J) as subprocesses against a
// whole leafproxy (service.New, as the binary wires it). Each client test
// skips, saying what to install, when its client is missing;
// scripts/test.sh installs them on Debian when run as root.

// clientProxy is a backend and a whole leafproxy in front of it with three
// accounts: app/secret and app2/pw2 (ordinary, both on the backend's root)
// and boss/pw3 (admin).
type clientProxy struct {
	b    *testdb.Server
	lf   *leaf
	host string
	port string
}

// startClientProxy starts a MariaDB and a leafproxy; db is created on the
// backend. tune, if not nil, adjusts the configuration before start.
func startClientProxy(t *testing.T, db string, tune func(*config.Config)) *clientProxy {
	t.Helper()
	b := newBackend(t)
	if db != "" {
		b.Exec(t, "CREATE DATABASE IF NOT EXISTS `"+db+"`")
	}
	cfg := leafConfig(t, b, nil)
	cfg.Users = []config.User{
		{Name: "app", Password: "secret"},
		{Name: "app2", Password: "pw2"},
		{Name: "boss", Password: "pw3", Admin: true},
	}
	if tune != nil {
		tune(cfg)
	}
	lf := startLeaf(t, cfg)
	cp := &clientProxy{b: b, lf: lf}
	cp.host, cp.port, _ = net.SplitHostPort(lf.addr)
	return cp
}

// waitRunning waits until the backend's process list shows a statement
// with exactly this text, seen by root directly (so through no proxy).
func waitRunning(t *testing.T, b *testdb.Server, q string) {
	t.Helper()
	db, err := sql.Open("mysql", b.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	testwait.For(t, fmt.Sprintf("%q to start on the backend", q), func() bool {
		var n int
		err := db.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO = ?", q).Scan(&n)
		return err == nil && n > 0
	})
}

// writeScript writes a script into a fresh temporary directory and returns
// its path.
func writeScript(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// runJSON runs a client program that prints one JSON object as its last
// line of standard output and decodes it into out. The program fails the
// test if it exits non-zero or runs past timeout.
func runJSON(t *testing.T, timeout time.Duration, out any, dir string, env []string, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	t.Logf("%s ran %v", filepath.Base(name), time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	decodeLastLine(t, stdout.String(), stderr.String(), out)
}

func decodeLastLine(t *testing.T, stdout, stderr string, out any) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	last := lines[len(lines)-1]
	if err := json.Unmarshal([]byte(last), out); err != nil {
		t.Fatalf("client output is not the expected JSON (%v)\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
}

// interactive is a client program that talks to the test line by line:
// it prints JSON lines and waits for a line on its standard input.
type interactive struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	lines  chan string
	stderr *bytes.Buffer
	cancel context.CancelFunc
}

func startInteractive(t *testing.T, timeout time.Duration, dir string, env []string, name string, args ...string) *interactive {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outp, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &interactive{t: t, cmd: cmd, in: in, lines: make(chan string, 64), stderr: &bytes.Buffer{}, cancel: cancel}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(outp)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	return p
}

// next decodes the program's next JSON line into out.
func (p *interactive) next(out any) {
	p.t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			err := p.cmd.Wait()
			p.t.Fatalf("client ended early (%v)\nstderr:\n%s", err, p.stderr.String())
		}
		if err := json.Unmarshal([]byte(l), out); err != nil {
			p.t.Fatalf("client line %q: %v\nstderr:\n%s", l, err, p.stderr.String())
		}
	case <-time.After(60 * time.Second):
		p.t.Fatalf("client said nothing for 60s\nstderr:\n%s", p.stderr.String())
	}
}

// send writes one line to the program.
func (p *interactive) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		p.t.Fatalf("write to client: %v\nstderr:\n%s", err, p.stderr.String())
	}
}

// wait waits for the program to exit 0.
func (p *interactive) wait() {
	p.t.Helper()
	p.in.Close()
	for range p.lines {
	}
	if err := p.cmd.Wait(); err != nil {
		p.t.Fatalf("client: %v\nstderr:\n%s", err, p.stderr.String())
	}
}
