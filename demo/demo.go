// Package demo runs leafproxy in front of an embedded, in-memory
// MySQL-compatible backend (github.com/dolthub/go-mysql-server), so the
// proxy can be tried on a machine with no MySQL or MariaDB: `go run
// ./cmd/leafproxy-demo`. The backend also holds the allocation store
// (leaf_alloc). Only cmd/leafproxy-demo imports this package: neither the
// proxy's own packages nor the deployed binary (cmd/leafproxy) depend on
// go-mysql-server.
package demo

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/service"
)

// The demo's client account (an admin, so SHOW LEAFPROXY SEQUENCES works).
const (
	User     = "demo"
	Password = "demo"
)

// Options says where to listen.
type Options struct {
	Listen      string // the proxy's client address; "" = 127.0.0.1 on a free port
	BackendAddr string // the embedded backend's address; "" = 127.0.0.1 on a free port
	Log         *slog.Logger
}

// Demo is a running embedded backend with a configured proxy in front.
type Demo struct {
	Backend *Backend
	Service *service.Service
	Config  *config.Config
	l       net.Listener
}

// schema is created on the backend before the proxy starts.
var schema = []string{
	"CREATE DATABASE IF NOT EXISTS shop",
	"CREATE TABLE IF NOT EXISTS shop.orders (id BIGINT PRIMARY KEY, item VARCHAR(40) NOT NULL, qty INT NOT NULL DEFAULT 1)",
	"CREATE TABLE IF NOT EXISTS shop.customers (id BIGINT PRIMARY KEY, name VARCHAR(40) NOT NULL)",
	"INSERT INTO shop.customers (id, name) VALUES (1, 'existing customer')",
}

// Start starts the backend, creates the example schema and builds the
// proxy (not yet serving: see Serve).
func Start(ctx context.Context, o Options) (*Demo, error) {
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	if o.BackendAddr == "" {
		o.BackendAddr = "127.0.0.1:0"
	}
	b, err := StartBackend(o.BackendAddr)
	if err != nil {
		return nil, fmt.Errorf("start the embedded backend on %s: %w", o.BackendAddr, err)
	}
	if err := createSchema(ctx, "root@tcp("+b.Addr()+")/"); err != nil {
		b.Close()
		return nil, err
	}
	l, err := net.Listen("tcp", o.Listen)
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("listen on %s: %w", o.Listen, err)
	}
	cfg := Config(l.Addr().String(), b.Addr())
	svc, err := service.New(ctx, cfg, o.Log)
	if err != nil {
		l.Close()
		b.Close()
		return nil, err
	}
	return &Demo{Backend: b, Service: svc, Config: cfg, l: l}, nil
}

// Config is the demo's proxy configuration: clients on listen, the
// embedded backend at backend (which also holds the allocation store).
func Config(listen, backend string) *config.Config {
	cfg := config.Default()
	cfg.Listen = listen
	cfg.Backend.Addr = backend
	cfg.Backend.User = "root"
	cfg.Users = []config.User{{Name: User, Password: Password, Admin: true}}
	cfg.Sequences.Tags = map[string]config.Tag{
		"order":    {Generator: "segment", Step: 100},
		"customer": {Generator: "segment", Step: 100},
	}
	cfg.Tables = []config.Table{
		{Table: "shop.orders", Column: "id", Tag: "order"},
		{Table: "shop.customers", Column: "id", Tag: "customer"},
	}
	cfg.Shutdown.Grace = config.Duration(2 * time.Second)
	return cfg
}

func createSchema(ctx context.Context, dsn string) error {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	for _, q := range schema {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("create the example schema (%s): %w", q, err)
		}
	}
	return nil
}

// Addr is the address clients connect to.
func (d *Demo) Addr() string { return d.l.Addr().String() }

// Serve runs the proxy until ctx ends or Close, then stops it and the
// backend.
func (d *Demo) Serve(ctx context.Context) error {
	defer d.Backend.Close()
	return d.Service.Serve(ctx, d.l)
}

// Close stops the demo: the service (service.Service.Close: a Serve in
// progress returns) and the embedded backend. Idempotent.
func (d *Demo) Close() error {
	err := d.Service.Close()
	d.Backend.Close()
	return err
}

// ConnectCommand is the mariadb command line that reaches the proxy as the
// demo account, with shop as the default database.
func (d *Demo) ConnectCommand() string {
	host, port, _ := net.SplitHostPort(d.Addr())
	if host == "" || host == "::" || host == "0.0.0.0" {
		host = "127.0.0.1"
	}
	return fmt.Sprintf("mariadb -h%s -P%s -u%s -p%s shop", host, port, User, Password)
}

// DSN is a go-sql-driver DSN for the demo account.
func (d *Demo) DSN() string {
	return User + ":" + Password + "@tcp(" + d.Addr() + ")/shop"
}

// Examples are the statements the intro suggests, in order; each works
// through the proxy on the embedded backend (the tests run them).
var Examples = []struct{ SQL, Note string }{
	{"SELECT NEXTVAL('order');", "an ID of tag 'order', answered by the proxy from its segment buffer"},
	{"INSERT INTO orders (item) VALUES ('book'), ('pen');", "no id: the proxy fills it from tag 'order'"},
	{"SELECT LAST_INSERT_ID();", "the first generated key, as with AUTO_INCREMENT"},
	{"SELECT * FROM orders;", ""},
	{"INSERT INTO customers (name) VALUES ('ann');", "customers already holds id 1: its tag starts above it"},
	{"SELECT * FROM customers;", ""},
	{"SHOW LEAFPROXY SEQUENCES;", "the proxy's tags (demo is an admin account)"},
	{"SELECT * FROM leafproxy.leaf_alloc;", "the allocation store, on the embedded backend too"},
}

// Intro tells a person how to connect and what to try.
func (d *Demo) Intro(w io.Writer, version string) {
	_, bport, _ := net.SplitHostPort(d.Backend.Addr())
	fmt.Fprintf(w, "leafproxy %s demo: the proxy listens on %s, in front of an embedded in-memory\n", version, d.Addr())
	fmt.Fprintf(w, "MySQL-compatible server (go-mysql-server, 127.0.0.1:%s) that also holds leaf_alloc.\n", bport)
	fmt.Fprintf(w, "Nothing is written to disk: the data is gone when the demo stops (Ctrl-C).\n\n")
	fmt.Fprintf(w, "Tables with a key rule: shop.orders (id from tag 'order'), shop.customers (id from tag 'customer').\n\n")
	fmt.Fprintf(w, "Connect:\n\n  %s\n\n", d.ConnectCommand())
	fmt.Fprintf(w, "and try:\n\n")
	width := 0
	for _, e := range Examples {
		width = max(width, len(e.SQL))
	}
	for _, e := range Examples {
		if e.Note == "" {
			fmt.Fprintf(w, "  %s\n", e.SQL)
			continue
		}
		fmt.Fprintf(w, "  %-*s  -- %s\n", width, e.SQL, e.Note)
	}
	fmt.Fprintf(w, "\nor in one go:\n\n  %s -e \"SELECT NEXTVAL('order'); INSERT INTO orders (item) VALUES ('book'); SELECT LAST_INSERT_ID(); SELECT * FROM orders\"\n", d.ConnectCommand())
	fmt.Fprintf(w, "\nFrom Go (go-sql-driver): %s\n", d.DSN())
}
