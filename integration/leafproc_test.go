package integration

import (
	"bufio"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/internal/testdb"
)

// A leafproxy process (cmd/leafproxy built by the test), so that a test
// can read the proxy's own memory in /proc/<pid>/status: the test's
// clients are not counted.
type leafProc struct {
	addr string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	once sync.Once
}

// buildLeafproxyBinary builds cmd/leafproxy into the test's temporary
// directory (LEAFPROXY_TEST_BINARY: use that one instead, e.g. an older
// build to measure against).
func buildLeafproxyBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("LEAFPROXY_TEST_BINARY"); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "leafproxy")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/leafproxy/leafproxy/cmd/leafproxy").CombinedOutput(); err != nil {
		t.Fatalf("build leafproxy: %v\n%s", err, out)
	}
	return bin
}

// startLeafproxyProcess runs `leafproxy serve` in front of backend (user
// app/secret), table filled from tag order, until the test ends.
func startLeafproxyProcess(t *testing.T, bin string, backend *testdb.Server, table string) *leafProc {
	t.Helper()
	dir := t.TempDir()
	addr := freeLoopbackAddr(t)
	cfg := fmt.Sprintf(`listen: %q
backend:
  addr: %q
  user: root
  password: ""
users:
  - name: app
    password: secret
sequences:
  wait_timeout: 5s
  tags:
    order: {generator: segment}
tables:
  - table: %s
    column: id
    tag: order
shutdown:
  grace: 1s
log:
  level: warn
`, addr, backend.Addr, table)
	path := filepath.Join(dir, "leafproxy.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &leafProc{addr: addr, log: filepath.Join(dir, "leafproxy.log"), done: make(chan struct{})}
	logf, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(bin, "serve", "--config", path)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); logf.Close(); close(p.done) }()
	t.Cleanup(func() { p.stop(t) })
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return p
		}
		select {
		case <-p.done:
			b, _ := os.ReadFile(p.log)
			t.Fatalf("leafproxy exited: %s", b)
		default:
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(p.log)
			t.Fatalf("leafproxy does not accept on %s: %v\n%s", addr, err, b)
		}
		time.Sleep(20 * time.Millisecond) // polling, under the deadline above
	}
}

// stop ends the process (interrupt, then kill after 5 s).
func (p *leafProc) stop(t *testing.T) {
	p.once.Do(func() {
		_ = p.cmd.Process.Signal(os.Interrupt)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
}

func (p *leafProc) open(t *testing.T, db string) *sql.DB {
	t.Helper()
	h, err := sql.Open("mysql", "app:secret@tcp("+p.addr+")/"+db)
	if err != nil {
		t.Fatal(err)
	}
	h.SetMaxOpenConns(8)
	h.SetMaxIdleConns(8)
	t.Cleanup(func() { h.Close() })
	return h
}

// procRSS is the process's RSS growth from now: its peak (VmHWM, reset
// here) over its RSS now.
type procRSS struct {
	p    *leafProc
	t    *testing.T
	base int64
}

func (p *leafProc) startRSS(t *testing.T) *procRSS {
	t.Helper()
	pid := strconv.Itoa(p.cmd.Process.Pid)
	if err := os.WriteFile("/proc/"+pid+"/clear_refs", []byte("5"), 0); err != nil {
		t.Fatalf("cannot reset the proxy's peak RSS: %v", err)
	}
	return &procRSS{p: p, t: t, base: p.status(t, "VmRSS")}
}

func (r *procRSS) growth() int64 { return max(r.p.status(r.t, "VmHWM")-r.base, 0) }

// status is a /proc/<pid>/status field in bytes.
func (p *leafProc) status(t *testing.T, field string) int64 {
	t.Helper()
	f, err := os.Open("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && k == field {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in the proxy's status", field)
	return 0
}

// freeLoopbackAddr is a loopback host:port that was free a moment ago.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
