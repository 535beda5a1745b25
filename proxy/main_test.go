package proxy

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/internal/testkit/leafproc"
	"github.com/leafproxy/leafproxy/internal/testkit/memdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
)

// shared is one backend for the tests that do not stop theirs; tests reach
// it through sharedDB. It is a MariaDB, except under -short on a machine
// without MariaDB (testdb.Skippable), the edit loop, where it is
// go-mysql-server in this process (memdb, see inMemory): shared then holds
// only its address, which is all Addr, DSN, Open and Exec use. It is nil,
// and sharedErr says why, only when neither could start.
var (
	shared    *testdb.Server
	sharedErr error
	// inMemory is the in-process backend behind shared, nil when shared
	// is a MariaDB.
	inMemory *memdb.Server
)

// sharedDB is the shared backend; when there is none (possible only under
// -short, see TestMain) it skips the test, saying so.
func sharedDB(tb testing.TB) *testdb.Server {
	tb.Helper()
	if shared == nil {
		testdb.Unavailable(tb, sharedErr)
	}
	return shared
}

// needsMariaDB skips the test, saying why, when the shared backend is the
// in-process go-mysql-server: what it tests is MariaDB's own behaviour
// (KILL and its ids, backend accounts, the greeting, session tracking,
// LOCAL INFILE, COM_STATISTICS, compression to the backend, MariaDB's
// SQL), which go-mysql-server does differently or not at all. With MariaDB (every run
// without -short, and -short on a machine that has it) it does nothing:
// the test runs there as it always did.
func needsMariaDB(tb testing.TB, why string) {
	tb.Helper()
	if inMemory != nil {
		tb.Skipf("skipped on the in-process backend (go test -short without MariaDB): needs MariaDB: %s", why)
	}
}

// startShared starts the shared backend: a MariaDB, or under -short on a
// machine without one go-mysql-server in this process. A nil error with a
// nil shared cannot happen; an error that is not skippable fails the run.
func startShared() (*testdb.Server, error) {
	s, err := testdb.New()
	if err == nil || !testdb.Skippable(err) {
		return s, err
	}
	mem, merr := memdb.New()
	if merr != nil {
		return nil, fmt.Errorf("%w; and the in-process backend: %v", err, merr)
	}
	inMemory = mem
	return &testdb.Server{Addr: mem.Addr, Port: mem.Port}, nil
}

func TestMain(m *testing.M) {
	if addr := os.Getenv(floodChildEnv); addr != "" {
		// The test binary re-executed as a flood of silent clients
		// (flood_latency_test.go): no MariaDB.
		runFloodChild(addr)
		os.Exit(0)
	}
	flag.Parse() // testdb.Skippable reads -short
	if shared, sharedErr = startShared(); sharedErr != nil {
		if !testdb.Skippable(sharedErr) {
			fmt.Fprintln(os.Stderr, "start MariaDB:", sharedErr)
			testdb.CleanupTemplate()
			os.Exit(1)
		}
		// go test -short without MariaDB, and the in-process backend
		// failed too: the tests that need none (packets, tracker,
		// compression, ...) run, the others skip through sharedDB.
		// Main exits.
		testdb.Main(m, leafproc.Cleanup)
	}
	if inMemory != nil {
		// go test -short without MariaDB: the protocol tests run against
		// go-mysql-server; those that need MariaDB skip (needsMariaDB),
		// as do those that start a MariaDB of their own (testdb.Start).
		testdb.Main(m, inMemory.Close, leafproc.Cleanup)
	}
	testdb.Main(m, shared.Close, leafproc.Cleanup)
}

type env struct {
	srv  *Server
	cfg  Config
	addr string
	stop func() error // cancels Serve and waits for it
}

func testLogger() *slog.Logger {
	if os.Getenv("LEAFPROXY_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// startProxy runs a proxy in front of backendAddr with user app/secret.
func startProxy(t testing.TB, backendAddr string, mutate func(*testConfig), opts ...Option) *env {
	t.Helper()
	// The backend's connect timeout is generous: on a loaded 2-core
	// machine MariaDB's greeting took over 2 s (a login failed "i/o
	// timeout"); no test here waits for it to expire.
	cfg := &Config{
		Backend:  Backend{Addr: backendAddr, User: "root", ConnectTimeout: 20 * time.Second},
		Users:    []Account{{Name: "app", Password: "secret"}},
		Limits:   Limits{MaxConnections: 4096},
		Shutdown: Shutdown{Grace: 5 * time.Second},
	}
	if mutate != nil {
		mutate(cfg)
	}
	*cfg = cfg.withDefaults()
	srv, err := NewServer(*cfg, append([]Option{WithLogger(testLogger())}, opts...)...)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l) }()
	e := &env{srv: srv, cfg: *cfg, addr: l.Addr().String()}
	var stopped bool
	var serr error
	e.stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			serr = <-done
		}
		return serr
	}
	t.Cleanup(func() { _ = e.stop() })
	return e
}

func (e *env) dsn(user, pass, db, params string) string {
	c := mysql.NewConfig()
	c.User, c.Passwd, c.Net, c.Addr, c.DBName = user, pass, "tcp", e.addr, db
	c.Timeout = 5 * time.Second
	s := c.FormatDSN()
	if params != "" {
		if c.DBName == "" && !containsQ(s) {
			s += "?" + params
		} else if containsQ(s) {
			s += "&" + params
		} else {
			s += "?" + params
		}
	}
	return s
}

func containsQ(s string) bool {
	for i := range s {
		if s[i] == '?' {
			return true
		}
	}
	return false
}

func (e *env) open(t testing.TB, db, params string) *sql.DB {
	t.Helper()
	d, err := sql.Open("mysql", e.dsn("app", "secret", db, params))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// ensureDB creates database name on the backend directly.
func ensureDB(t testing.TB, s *testdb.Server, name string) {
	t.Helper()
	s.Exec(t, "CREATE DATABASE IF NOT EXISTS `"+name+"`")
}

type testConfig = Config

func testDuration(d time.Duration) time.Duration { return d }
