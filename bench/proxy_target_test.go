package bench

import (
	"context"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/service"
)

// startProxy runs leafproxy in this process in front of srv, wired as the
// binary wires it (service: allocator + engine + proxy, with a key-filling
// rule on a table the workloads do not touch), so the figures include the
// engine's per-statement filter on the pass-through path; it returns a DSN
// for the client account app/secret.
func startProxy(t *testing.T, srv *testdb.Server) (dsn string, ok bool) {
	t.Helper()
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.Backend.Addr = srv.Addr
	cfg.Backend.User = "root"
	cfg.Backend.Password = ""
	cfg.Users = []config.User{{Name: "app", Password: "secret"}}
	cfg.Shutdown.Grace = config.Duration(2 * time.Second)
	cfg.Tables = []config.Table{{Table: "orders", Column: "id", Tag: "order"}}
	cfg.DeclareRuleTags()
	// Warnings only: per-session info lines are not what is measured.
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	p, err := service.New(context.Background(), cfg, logger)
	if err != nil {
		t.Fatalf("leafproxy: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- p.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("leafproxy Serve: %v", err)
		}
	})
	return dsnAt(t, srv.DSN("bench"), ln.Addr().String(), "app", "secret"), true
}
