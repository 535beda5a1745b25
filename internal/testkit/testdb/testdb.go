// Package testdb starts throwaway MariaDB servers for tests: each on a free
// loopback port, with its data in a temporary directory, stopped when the
// test ends (and killed by the kernel if the test binary dies first).
//
// Every test that touches SQL or the MySQL protocol uses it; nothing in the
// suite depends on a database someone else started. Ask for as many servers as
// a test needs (shards, an allocation store apart from the data):
//
//	db := testdb.Start(t)          // one server, root with an empty password
//	conn := db.Open(t, "test")     // *sql.DB to database "test" (created)
//	db.Stop(t); db.Start(t)        // outage tests: same port, same data
//
// The data directory is initialised once per test binary with
// mariadb-install-db and copied for each server, which keeps a start under a
// second. The test command (scripts/test.sh) installs Debian's mariadb-server
// when mariadbd is missing and it runs as root.
//
// Without MariaDB on the machine a test that needs one fails, except under
// go test -short, the edit loop, where it skips saying so (Skippable,
// Unavailable; Start and StartWith do it). A TestMain that starts a server
// for its package's tests decides the same with Skippable, so that the
// package's tests that need no database still run.
package testdb

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Server is one MariaDB process owned by a test.
type Server struct {
	// Addr is host:port on loopback, stable across Stop/Start.
	Addr string
	Port int
	// Dir holds the data directory, socket, pid file and error log.
	Dir string

	mu    sync.Mutex
	cmd   *exec.Cmd
	done  chan struct{}
	extra []string // server options beyond serverFlags (TLS, Galera nodes); guarded by mu
}

var (
	templateOnce sync.Once
	templateDir  string
	templateErr  error
)

// binaries looks for the server programs on PATH and in the places Debian
// installs them (/usr/sbin is not on every PATH).
func binary(names ...string) (string, error) {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
		for _, dir := range []string{"/usr/sbin", "/usr/bin", "/usr/local/bin", "/usr/local/mysql/bin"} {
			p := filepath.Join(dir, n)
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("%s not found (%w): install Debian's mariadb-server (apt-get install -y mariadb-server) or run scripts/test.sh as root, which installs it", names[0], ErrNoServer)
}

// ErrNoServer is in the error of New (errors.Is) when the machine has no
// MariaDB server program: neither on PATH nor where Debian installs it.
var ErrNoServer = errors.New("no MariaDB server program on this machine")

// Skippable reports whether err, from New, may skip a test instead of
// failing it: the machine has no MariaDB (ErrNoServer) and the tests run
// with -short, the edit loop (README, "Tests"). Without -short a missing
// server fails, so that a CI machine without one cannot pass by skipping.
// A TestMain calls flag.Parse before it (testing.Short reads the flags).
func Skippable(err error) bool { return errors.Is(err, ErrNoServer) && testing.Short() }

// Unavailable ends the test for err, from New: it skips, saying why, when
// Skippable(err), and fails otherwise.
func Unavailable(tb testing.TB, err error) {
	tb.Helper()
	if Skippable(err) {
		tb.Skipf("skipped under -short: needs MariaDB: %v", err)
	}
	tb.Fatalf("start MariaDB: %v", err)
}

// serverFlags are shared by install-db and the server so that the copied
// data directory starts without resizing logs. Small buffers: tests start
// several servers on a 2-core machine.
//
// Each server gets its own tmpdir: a starting mariadbd deletes stale #sql*
// files in its tmpdir, which with a shared /tmp removes the temporary tables
// of servers (and mariadb-install-db runs) of test binaries running in
// parallel.
func serverFlags(dir string) []string {
	return []string{
		"--no-defaults",
		"--datadir=" + filepath.Join(dir, "data"),
		"--tmpdir=" + filepath.Join(dir, "tmp"),
		"--innodb-buffer-pool-size=64M",
		"--innodb-log-file-size=32M",
		"--innodb-flush-log-at-trx-commit=2",
		"--skip-log-bin",
		"--max-connections=2000",
		"--max-allowed-packet=64M",
	}
}

func prepareTemplate() (string, error) {
	templateOnce.Do(func() {
		// The server first: mariadb-install-db comes with the client
		// package too, and without a server it fails with its own words,
		// not ErrNoServer.
		if _, err := binary("mariadbd", "mysqld"); err != nil {
			templateErr = err
			return
		}
		installer, err := binary("mariadb-install-db", "mysql_install_db")
		if err != nil {
			templateErr = err
			return
		}
		dir, err := os.MkdirTemp("", "leafproxy-mariadb-template-")
		if err != nil {
			templateErr = err
			return
		}
		if err := os.Mkdir(filepath.Join(dir, "tmp"), 0o700); err != nil {
			templateErr = err
			return
		}
		args := append(serverFlags(dir), "--auth-root-authentication-method=normal", "--skip-test-db")
		if os.Geteuid() == 0 {
			args = append(args, "--user=root")
		}
		// A loaded machine occasionally fails a bootstrap; a clean retry is
		// cheap next to failing every test of the binary.
		for attempt := 1; ; attempt++ {
			out, err := exec.Command(installer, args...).CombinedOutput()
			if err == nil {
				break
			}
			if attempt == 3 {
				templateErr = fmt.Errorf("mariadb-install-db (3 attempts): %v\n%s", err, out)
				return
			}
			os.RemoveAll(filepath.Join(dir, "data"))
			time.Sleep(time.Second)
		}
		templateDir = dir
	})
	return templateDir, templateErr
}

// CleanupTemplate removes the shared template data directory. Call it from
// TestMain after m.Run; forgetting it leaves ~100 MB in the temp dir.
func CleanupTemplate() {
	if templateDir != "" {
		os.RemoveAll(templateDir)
	}
}

// Main is the TestMain of a package whose tests start servers: it runs the
// tests, then each of after (in order, e.g. stopping a server shared by the
// package's tests), removes the template data directory and exits with the
// tests' code.
//
//	func TestMain(m *testing.M) { testdb.Main(m) }
func Main(m *testing.M, after ...func()) {
	code := m.Run()
	for _, f := range after {
		f()
	}
	CleanupTemplate()
	os.Exit(code)
}

// Start launches a new server and registers its shutdown with tb.Cleanup.
// It fails tb when the server cannot start; under -short, on a machine
// without MariaDB, it skips tb instead (Unavailable).
func Start(tb testing.TB) *Server {
	tb.Helper()
	s, err := New()
	if err != nil {
		Unavailable(tb, err)
	}
	tb.Cleanup(s.Close)
	return s
}

// StartWith is Start with extra mariadbd options (e.g. --ssl-cert=...).
func StartWith(tb testing.TB, extra ...string) *Server {
	tb.Helper()
	s, err := New(extra...)
	if err != nil {
		Unavailable(tb, err)
	}
	tb.Cleanup(s.Close)
	return s
}

// New launches a server without a testing.TB (benchmark tools, TestMain),
// with extra mariadbd options if given. The caller must Close it.
func New(extra ...string) (*Server, error) {
	tmpl, err := prepareTemplate()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "leafproxy-mariadb-")
	if err != nil {
		return nil, err
	}
	if out, err := exec.Command("cp", "-a", filepath.Join(tmpl, "data"), filepath.Join(dir, "data")).CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("copy template data dir: %v: %s", err, out)
	}
	if err := os.Mkdir(filepath.Join(dir, "tmp"), 0o700); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &Server{Dir: dir, extra: extra}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s.Port = port
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if lastErr = s.start(); lastErr == nil {
			return s, nil
		}
	}
	os.RemoveAll(dir)
	return nil, lastErr
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) start() error {
	bin, err := binary("mariadbd", "mysqld")
	if err != nil {
		return err
	}
	args := append(serverFlags(s.Dir),
		"--port="+strconv.Itoa(s.Port),
		"--bind-address=127.0.0.1",
		"--socket="+filepath.Join(s.Dir, "mysqld.sock"),
		"--pid-file="+filepath.Join(s.Dir, "mysqld.pid"),
		"--log-error="+filepath.Join(s.Dir, "error.log"),
	)
	s.mu.Lock()
	args = append(args, s.extra...)
	s.mu.Unlock()
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	cmd := exec.Command(bin, args...)
	// If the test binary dies without cleaning up, the kernel kills the
	// server too: no orphan mariadbd survives a crashed or killed test run.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", bin, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()

	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return fmt.Errorf("mariadbd on port %d exited during start-up; error log:\n%s", s.Port, s.errorLogTail())
		default:
		}
		if s.ping() == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.kill()
	return fmt.Errorf("mariadbd on port %d did not answer within 60s; error log:\n%s", s.Port, s.errorLogTail())
}

func (s *Server) ping() error {
	db, err := sql.Open("mysql", s.DSN(""))
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return db.PingContext(ctx)
}

func (s *Server) errorLogTail() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "error.log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(bytes.TrimSpace(b))
}

// DSN is a go-sql-driver DSN for root on database db ("" for none).
func (s *Server) DSN(db string) string {
	cfg := mysql.NewConfig()
	cfg.User = "root"
	cfg.Net = "tcp"
	cfg.Addr = s.Addr
	cfg.DBName = db
	cfg.Timeout = 5 * time.Second
	cfg.ParseTime = true
	cfg.InterpolateParams = false
	return cfg.FormatDSN()
}

// Open creates database name if needed and returns a handle to it, closed
// at the end of the test.
func (s *Server) Open(tb testing.TB, name string) *sql.DB {
	tb.Helper()
	if name != "" {
		s.Exec(tb, "CREATE DATABASE IF NOT EXISTS `"+name+"`")
	}
	db, err := sql.Open("mysql", s.DSN(name))
	if err != nil {
		tb.Fatalf("open %s: %v", s.Addr, err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// Exec runs statements as root with no default database.
func (s *Server) Exec(tb testing.TB, stmts ...string) {
	tb.Helper()
	db, err := sql.Open("mysql", s.DSN(""))
	if err != nil {
		tb.Fatalf("open %s: %v", s.Addr, err)
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			tb.Fatalf("%s on %s: %v", q, s.Addr, err)
		}
	}
}

// Stop shuts the server down (SIGTERM, then SIGKILL after 20 s) and keeps
// its data, so Start brings it back on the same port: an outage.
func (s *Server) Stop(tb testing.TB) {
	tb.Helper()
	if err := s.stop(syscall.SIGTERM); err != nil {
		tb.Fatalf("stop MariaDB %s: %v", s.Addr, err)
	}
}

// Kill stops the server with SIGKILL: a crash, not a shutdown.
func (s *Server) Kill(tb testing.TB) {
	tb.Helper()
	if err := s.stop(syscall.SIGKILL); err != nil {
		tb.Fatalf("kill MariaDB %s: %v", s.Addr, err)
	}
}

// Pause stops the server process with SIGSTOP: it keeps its port and its
// connections and answers nothing (a hung node), until Resume.
func (s *Server) Pause(tb testing.TB) {
	tb.Helper()
	if err := s.signal(syscall.SIGSTOP); err != nil {
		tb.Fatalf("pause MariaDB %s: %v", s.Addr, err)
	}
}

// Resume lets a paused server run again (SIGCONT).
func (s *Server) Resume(tb testing.TB) {
	tb.Helper()
	if err := s.signal(syscall.SIGCONT); err != nil {
		tb.Fatalf("resume MariaDB %s: %v", s.Addr, err)
	}
}

func (s *Server) signal(sig syscall.Signal) error {
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return errors.New("not running")
	}
	return cmd.Process.Signal(sig)
}

// Restart starts a stopped server again on the same port with the same data.
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	if err := s.start(); err != nil {
		tb.Fatalf("restart MariaDB %s: %v", s.Addr, err)
	}
}

func (s *Server) stop(sig syscall.Signal) error {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return errors.New("not running")
	}
	cmd.Process.Signal(sig)
	select {
	case <-done:
		return nil
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-done
		return nil
	}
}

func (s *Server) kill() {
	s.stop(syscall.SIGKILL)
}

// Running reports whether the server process is up.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

// PID is the server process's id (0 when it is not running): benchmarks
// read its CPU time from /proc.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Close kills the server and removes its directory. Safe to call twice.
func (s *Server) Close() {
	s.kill()
	os.RemoveAll(s.Dir)
}
