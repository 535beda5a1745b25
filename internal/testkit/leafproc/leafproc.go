// Package leafproc runs the leafproxy binary in a child process for tests
// that bound what the proxy itself holds: its resident set is read from
// /proc/PID/status, apart from the test's clients, other tests and the
// test process's garbage collector.
//
//	p := leafproc.Start(t, "backend:\n  addr: "+backend.Addr+"\n...")
//	m := p.Measure(t)          // peak reset, resident set now
//	... clients work through p.Addr ...
//	grew := m.Growth(t)        // VmHWM since, less the resident set then
//
// The binary is built once per test binary (./cmd/leafproxy); call
// Cleanup after the tests (testdb.Main(m, leafproc.Cleanup)).
package leafproc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
)

// binary builds cmd/leafproxy of this module once and returns its path
// (LEAFPROXY_TEST_BINARY: that binary instead, e.g. an older build to
// measure against).
func binary() (string, error) {
	if bin := os.Getenv("LEAFPROXY_TEST_BINARY"); bin != "" {
		return bin, nil
	}
	buildOnce.Do(func() {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			buildErr = fmt.Errorf("go env GOMOD: %w", err)
			return
		}
		mod := strings.TrimSpace(string(out))
		if mod == "" || mod == os.DevNull {
			buildErr = errors.New("not inside the leafproxy module")
			return
		}
		if binDir, buildErr = os.MkdirTemp("", "leafproc-"); buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "leafproxy")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/leafproxy")
		cmd.Dir = filepath.Dir(mod)
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/leafproxy: %v\n%s", err, out)
		}
	})
	return binPath, buildErr
}

// Cleanup removes the built binary.
func Cleanup() {
	if binDir != "" {
		os.RemoveAll(binDir)
	}
}

// Proc is a leafproxy serving in a child process.
type Proc struct {
	Addr string // host:port on loopback clients connect to
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	once sync.Once // Stop
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Start runs `leafproxy serve` with config (YAML, without listen: the
// proxy listens on a free loopback port, Addr), waits until it accepts
// connections and stops it when the test ends.
func Start(tb testing.TB, config string) *Proc {
	tb.Helper()
	bin, err := binary()
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(tb.TempDir(), "leafproxy.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		tb.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	p := &Proc{Addr: addr, out: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, "serve", "--config", path, "--listen", addr)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	tb.Cleanup(p.Stop)
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return p
		}
		select {
		case <-p.done:
			tb.Fatalf("leafproxy exited before listening (%v):\n%s", p.cmd.ProcessState, p.out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			tb.Fatalf("leafproxy does not listen on %s after 60 s:\n%s", addr, p.out.String())
		}
	}
}

// PID is the child's process id.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Output is what the child wrote to stdout and stderr so far.
func (p *Proc) Output() string { return p.out.String() }

// Stop sends SIGTERM and waits for the child; SIGKILL after 10 s. The
// test's end does it too; a second call does nothing.
func (p *Proc) Stop() {
	p.once.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
}

// Status is a /proc/PID/status field of the child in bytes (VmRSS, VmHWM).
func (p *Proc) Status(tb testing.TB, field string) int64 {
	tb.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.PID()))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && k == field {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				tb.Fatalf("%s: %q: %v", field, v, err)
			}
			return kb << 10
		}
	}
	tb.Fatalf("no %s in /proc/%d/status", field, p.PID())
	return 0
}

// Measurement is the child's resident set when it began.
type Measurement struct {
	p    *Proc
	Base int64 // VmRSS at the start, bytes
}

// Measure resets the child's peak resident set (VmHWM, through
// /proc/PID/clear_refs) and notes its resident set now.
func (p *Proc) Measure(tb testing.TB) *Measurement {
	tb.Helper()
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", p.PID()), []byte("5"), 0); err != nil {
		tb.Fatalf("cannot reset the proxy's peak RSS: %v", err)
	}
	return &Measurement{p: p, Base: p.Status(tb, "VmRSS")}
}

// Growth is the child's peak resident set since Measure less its resident
// set then (0 if it never grew).
func (m *Measurement) Growth(tb testing.TB) int64 {
	tb.Helper()
	return max(m.p.Status(tb, "VmHWM")-m.Base, 0)
}
