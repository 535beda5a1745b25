package integration

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/proxy"
	"github.com/leafproxy/leafproxy/service"
)

// Shared helpers for end-to-end tests through the proxy (issues 3, 4, 5).
//
//	b := newBackend(t)                      // a throwaway MariaDB
//	cfg := proxyConfig(b)                   // listen 127.0.0.1:0, user app/secret
//	p := startProxy(t, cfg)                 // in-process proxy, stopped at test end
//	db := p.open(t, "app", "test", "interpolateParams=true")

// newBackend starts a MariaDB for this test (stopped at its end).
func newBackend(t testing.TB) *testdb.Server {
	t.Helper()
	return testdb.Start(t)
}

// proxyConfig is a default configuration in front of backend with one
// client account, app/secret.
func proxyConfig(backend *testdb.Server) *config.Config {
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.Backend.Addr = backend.Addr
	cfg.Backend.ConnectTimeout = config.Duration(3 * time.Second)
	cfg.Users = []config.User{{Name: "app", Password: "secret"}}
	cfg.Shutdown.Grace = config.Duration(5 * time.Second)
	return cfg
}

// proxyEnv is a proxy running in the test process.
type proxyEnv struct {
	Srv  *proxy.Server
	Cfg  *config.Config
	Addr string // host:port clients connect to
	Host string
	Port string
	stop func() error
}

// testLogger discards logs unless LEAFPROXY_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("LEAFPROXY_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// startProxy serves cfg on cfg.Listen (use 127.0.0.1:0) until the test ends.
func startProxy(t testing.TB, cfg *config.Config, opts ...proxy.Option) *proxyEnv {
	t.Helper()
	srv, err := proxy.NewServer(service.ProxyConfig(cfg), append([]proxy.Option{proxy.WithLogger(testLogger())}, opts...)...)
	if err != nil {
		t.Fatalf("proxy.NewServer: %v", err)
	}
	l, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		t.Fatalf("listen %s: %v", cfg.Listen, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l) }()
	p := &proxyEnv{Srv: srv, Cfg: cfg, Addr: l.Addr().String()}
	p.Host, p.Port, _ = net.SplitHostPort(p.Addr)
	stopped := false
	var serr error
	p.stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			serr = <-done
		}
		return serr
	}
	t.Cleanup(func() {
		if err := p.stop(); err != nil {
			t.Errorf("proxy Serve: %v", err)
		}
	})
	return p
}

// Stop shuts the proxy down gracefully and returns Serve's error.
func (p *proxyEnv) Stop() error { return p.stop() }

// password is user's proxy password from the configuration.
func (p *proxyEnv) password(user string) string {
	for _, u := range p.Cfg.Users {
		if u.Name == user {
			return u.Password
		}
	}
	if len(p.Cfg.Users) == 0 && user == p.Cfg.Backend.User {
		return p.Cfg.Backend.Password
	}
	return ""
}

// dsn is a go-sql-driver DSN through the proxy; params like "a=b&c=d".
func (p *proxyEnv) dsn(user, db, params string) string {
	c := mysql.NewConfig()
	c.User, c.Passwd, c.Net, c.Addr, c.DBName = user, p.password(user), "tcp", p.Addr, db
	c.Timeout = 5 * time.Second
	s := c.FormatDSN()
	if params != "" {
		if strings.Contains(s, "?") {
			s += "&" + params
		} else {
			s += "?" + params
		}
	}
	return s
}

// open is a *sql.DB through the proxy, closed at test end.
func (p *proxyEnv) open(t testing.TB, user, db, params string) *sql.DB {
	t.Helper()
	d, err := sql.Open("mysql", p.dsn(user, db, params))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// directDSN is a go-sql-driver DSN straight to the backend (root).
func directDSN(b *testdb.Server, db, params string) string {
	s := b.DSN(db)
	if params != "" {
		if strings.Contains(s, "?") {
			s += "&" + params
		} else {
			s += "?" + params
		}
	}
	return s
}
