package integration

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/service"
)

// leaf is a whole leafproxy (allocator + engine + proxy, wired by package
// service as the binary does) serving on a loopback port.
type leaf struct {
	addr string
	cfg  *config.Config
	svc  *service.Service
	done chan error // Serve's result
}

// leafConfig is a configuration for a proxy in front of backend, with the
// allocation store on store (nil: the backend's default `leafproxy`
// database), client account app/secret, a 1s wait timeout.
func leafConfig(t testing.TB, backend, store *testdb.Server) *config.Config {
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.Backend.Addr = backend.Addr
	cfg.Users = []config.User{{Name: "app", Password: "secret"}}
	cfg.Sequences.WaitTimeout = config.Duration(time.Second)
	cfg.Sequences.Tags = map[string]config.Tag{}
	cfg.Shutdown.Grace = config.Duration(2 * time.Second)
	cfg.Log.Level = "warn"
	if store != nil {
		store.Exec(t, "CREATE DATABASE IF NOT EXISTS leafstore")
		cfg.Sequences.Store = config.StoreList{store.DSN("leafstore")}
	}
	return cfg
}

// startLeaf starts a proxy with cfg (defaults re-applied and validated) and
// stops it when the test ends.
func startLeaf(t testing.TB, cfg *config.Config) *leaf {
	t.Helper()
	return startLeafLog(t, cfg, nil)
}

// startLeafLog is startLeaf with the service logging to log.
func startLeafLog(t testing.TB, cfg *config.Config, log *slog.Logger) *leaf {
	t.Helper()
	cfg.ApplyDefaults()
	cfg.DeclareRuleTags() // the rules' tags are to be created, as a file would declare them
	if err := service.ValidateConfig(cfg); err != nil {
		t.Fatalf("config: %v", err)
	}
	svc, err := service.New(context.Background(), cfg, log)
	if err != nil {
		t.Fatalf("start leafproxy: %v", err)
	}
	return serveLeaf(t, cfg, svc)
}

// serveLeaf serves svc on a free loopback port until the test ends.
func serveLeaf(t testing.TB, cfg *config.Config, svc *service.Service) *leaf {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		svc.Close()
		t.Fatal(err)
	}
	lf := &leaf{addr: l.Addr().String(), cfg: cfg, svc: svc, done: make(chan error, 1)}
	go func() { lf.done <- svc.Serve(context.Background(), l) }()
	t.Cleanup(lf.stop)
	return lf
}

// stop shuts the proxy down (service.Close, which waits for Serve and
// everything the service started); idempotent.
func (l *leaf) stop() { l.svc.Close() }

// dsn is a go-sql-driver DSN through the proxy as app/secret.
func (l *leaf) dsn(db string, params map[string]string) string {
	c := mysql.NewConfig()
	c.User, c.Passwd, c.Net, c.Addr, c.DBName = "app", "secret", "tcp", l.addr, db
	c.Timeout = 5 * time.Second
	c.Params = params
	return c.FormatDSN()
}

// open is a *sql.DB through the proxy, closed at test end.
func (l *leaf) open(t testing.TB, db string, params map[string]string) *sql.DB {
	t.Helper()
	h, err := sql.Open("mysql", l.dsn(db, params))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// myErr returns err's MySQL error number and SQLSTATE (0, "" if none).
func myErr(err error) (uint16, string) {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number, string(me.SQLState[:])
	}
	return 0, ""
}
