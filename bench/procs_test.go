package bench

// Helpers of the side-by-side suites: the processes they start (haproxy,
// leafproxy builds), perf counters and CPU readings.
import (
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

// quiesce has InnoDB write back every dirty page before a case starts, so
// each case begins with the checkpoint at the head of the redo log and no
// case pays for the writes of the one before it.
func quiesce(t *testing.T, db *sql.DB) {
	t.Helper()
	var pct string
	if err := db.QueryRow("SELECT @@GLOBAL.innodb_max_dirty_pages_pct").Scan(&pct); err != nil {
		t.Fatalf("quiesce: %v", err)
	}
	if _, err := db.Exec("SET GLOBAL innodb_max_dirty_pages_pct = 0"); err != nil {
		t.Fatalf("quiesce: %v", err)
	}
	defer db.Exec("SET GLOBAL innodb_max_dirty_pages_pct = " + pct)
	// Best effort: a case may start with dirty pages left.
	if _, err := testwait.Until("no dirty pages", func() (struct{}, bool) {
		var name string
		var dirty int
		if err := db.QueryRow("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'").Scan(&name, &dirty); err != nil {
			t.Fatalf("quiesce: %v", err)
		}
		return struct{}{}, dirty == 0
	}, testwait.Within(30*time.Second)); err != nil {
		t.Logf("quiesce: %v", err)
	}
}

// haproxyBinary finds haproxy, installing Debian's package when running as
// root, or skips the test.
func haproxyBinary(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("haproxy"); err == nil {
		return p
	}
	if os.Geteuid() != 0 {
		t.Skip("haproxy not installed and not root: apt-get install haproxy to compare with it")
	}
	cmd := exec.Command("apt-get", "install", "-y", "--no-install-recommends", "haproxy")
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("haproxy not installed, apt-get install haproxy failed: %v\n%s", err, out)
	}
	p, err := exec.LookPath("haproxy")
	if err != nil {
		t.Skip("haproxy not found after apt-get install")
	}
	return p
}

func haproxyVersion(bin string) string {
	out, _ := exec.Command(bin, "-v").Output()
	f := strings.Fields(string(out))
	if len(f) >= 3 {
		return f[2]
	}
	return "?"
}

// freeAddr returns a loopback host:port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startHaproxy runs haproxy in the foreground in TCP mode: addr -> backend
// and sock (a Unix socket) -> backendSock. It returns the process id.
func startHaproxy(t *testing.T, bin, dir, addr, backend, sock, backendSock string) int {
	t.Helper()
	cfg := fmt.Sprintf(`global
    maxconn 4096
defaults
    mode tcp
    timeout connect 5s
    timeout client 1h
    timeout server 1h
listen mysql_tcp
    bind %s
    server db %s
listen mysql_unix
    bind %s mode 666
    server db %s
`, addr, backend, sock, backendSock)
	path := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return startProc(t, "haproxy", nil, []string{"tcp", addr, "unix", sock}, bin, "-db", "-f", path)
}

// buildLeafproxy builds cmd/leafproxy into dir.
func buildLeafproxy(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "leafproxy")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/leafproxy/leafproxy/cmd/leafproxy").CombinedOutput()
	if err != nil {
		t.Fatalf("build leafproxy: %v\n%s", err, out)
	}
	return bin
}

// startLeafProcess runs `leafproxy serve` listening on listen (network
// netw) in front of backend, with tag t for NEXTVAL and bench.orders
// filled from tag order; it returns the process id.
func startLeafProcess(t *testing.T, bin, dir, netw, listen, backend string) int {
	t.Helper()
	// LEAFPROXY_BENCH_PROXY_ENV="GOGC=200 GOMAXPROCS=1": extra environment
	// for the proxy processes (runtime levers).
	return startLeafProcessEnv(t, bin, dir, netw, netw, listen, backend, strings.Fields(os.Getenv("LEAFPROXY_BENCH_PROXY_ENV")))
}

// startLeafProcessEnv is startLeafProcess with a name for its files and
// its own extra environment.
func startLeafProcessEnv(t *testing.T, bin, dir, name, netw, listen, backend string, env []string) int {
	t.Helper()
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
    t: {generator: segment}
    order: {generator: segment}
tables:
  - table: bench.orders
    column: id
    tag: order
snowflake:
  worker_id: 1
shutdown:
  grace: 1s
log:
  level: warn
`, listen, backend)
	path := filepath.Join(dir, "leafproxy-"+name+".yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return startProc(t, "leafproxy-"+name, env, []string{netw, listen}, bin, "serve", "--config", path)
}

// leafVariant is one more leafproxy process on TCP (LEAFPROXY_BENCH_VARIANTS).
type leafVariant struct {
	name, addr string
	pid        int
}

// leafVariants starts the processes LEAFPROXY_BENCH_VARIANTS asks for:
// space-separated entries name=binary[,ENV=value...]; an empty binary is
// the build under test. E.g. "base=/tmp/leafproxy-main gogc400=,GOGC=400".
func leafVariants(t *testing.T, built, dir, backend string) []leafVariant {
	t.Helper()
	var vs []leafVariant
	for _, e := range strings.Fields(os.Getenv("LEAFPROXY_BENCH_VARIANTS")) {
		name, rest, ok := strings.Cut(e, "=")
		if !ok || name == "" {
			t.Fatalf("LEAFPROXY_BENCH_VARIANTS: %q is not name=binary[,ENV=value...]", e)
		}
		parts := strings.Split(rest, ",")
		bin := parts[0]
		if bin == "" {
			bin = built
		}
		addr := freeAddr(t)
		pid := startLeafProcessEnv(t, bin, dir, "v-"+name, "tcp", addr, backend, parts[1:])
		vs = append(vs, leafVariant{name: name, addr: addr, pid: pid})
	}
	return vs
}

// perfCols are the per-request columns LEAFPROXY_BENCH_PERF=1 prints: CPU
// (task-clock, us), context switches, and syscalls (all, then by name;
// tracepoints counted in the kernel, so the process is not slowed down as
// under strace).
var perfCols = []string{"task-clock", "context-switches", "syscalls", "read", "write", "recvfrom", "sendto",
	"epoll_pwait", "epoll_wait", "epoll_ctl", "futex", "nanosleep", "splice", "getpid", "tgkill", "sched_yield",
	"read EAGAIN", "recvfrom EAGAIN"}

type perfStat struct {
	cmd   *exec.Cmd
	out   string
	start time.Time
}

// startPerf runs `perf stat` on process pid until stop; nil (with a log
// line) when perf is missing or fails.
func startPerf(t *testing.T, pid int, dir string) *perfStat {
	ev := []string{"task-clock", "context-switches", "raw_syscalls:sys_enter"}
	for _, c := range perfCols[3 : len(perfCols)-2] {
		ev = append(ev, "syscalls:sys_enter_"+c)
	}
	out := filepath.Join(dir, fmt.Sprintf("perf-%d-%d.csv", pid, time.Now().UnixNano()))
	args := []string{"stat", "-x", ",", "-o", out, "-e", strings.Join(ev, ",")}
	// Reads that found nothing to read (EAGAIN) before the goroutine parks.
	for _, c := range []string{"read", "recvfrom"} {
		args = append(args, "-e", "syscalls:sys_exit_"+c, "--filter", "ret == -11")
	}
	cmd := exec.Command("perf", append(args, "-p", strconv.Itoa(pid))...)
	if err := cmd.Start(); err != nil {
		t.Logf("perf stat: %v", err)
		return nil
	}
	return &perfStat{cmd: cmd, out: out, start: time.Now()}
}

// stop ends perf stat and returns its counts per request at qps.
func (p *perfStat) stop(t *testing.T, qps float64) map[string]float64 {
	el := time.Since(p.start).Seconds()
	_ = p.cmd.Process.Signal(os.Interrupt)
	_ = p.cmd.Wait()
	b, err := os.ReadFile(p.out)
	if err != nil || qps == 0 {
		t.Logf("perf stat: %v", err)
		return nil
	}
	reqs := qps * el
	m := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, ",")
		if len(f) < 3 || strings.HasPrefix(line, "#") {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		name := f[2]
		switch {
		case name == "task-clock": // msec
			m[name] = v * 1e3 / reqs
		case name == "raw_syscalls:sys_enter":
			m["syscalls"] = v / reqs
		case strings.HasPrefix(name, "syscalls:sys_exit_"):
			m[strings.TrimPrefix(name, "syscalls:sys_exit_")+" EAGAIN"] = v / reqs
		default:
			m[strings.TrimPrefix(name, "syscalls:sys_enter_")] = v / reqs
		}
	}
	return m
}

func perfLine(m map[string]float64) string {
	if m == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range perfCols {
		if v := m[c]; v != 0 {
			fmt.Fprintf(&b, " %s=%.2f", c, v)
		}
	}
	return ";" + b.String()
}

// startProc starts bin with args (and extraEnv added to the environment), waits until every (network, address)
// pair in listens accepts connections, and stops it when the test ends.
func startProc(t *testing.T, name string, extraEnv, listens []string, bin string, args ...string) int {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), extraEnv...)
	logf, err := os.Create(filepath.Join(t.TempDir(), name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logf.Close()
	})
	for i := 0; i+1 < len(listens); i += 2 {
		var err error
		testwait.For(t, fmt.Sprintf("%s to accept on %s %s", name, listens[i], listens[i+1]), func() bool {
			var c net.Conn
			if c, err = net.DialTimeout(listens[i], listens[i+1], time.Second); err != nil {
				return false
			}
			c.Close()
			return true
		}, testwait.Detail(func() string { b, _ := os.ReadFile(logf.Name()); return fmt.Sprintf("%v\n%s", err, b) }))
	}
	return cmd.Process.Pid
}

// procCPU is a process's utime+stime (all threads) from /proc/<pid>/stat;
// 0 for pid 0.
func procCPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	// After the name: state(3) ... utime is field 14, stime 15 (1-based).
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	const clkTck = 100 // USER_HZ on Linux
	return time.Duration(ut+st) * time.Second / clkTck
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
