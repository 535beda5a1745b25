// Package memdb is, only for tests, an in-process MySQL-protocol backend:
// go-mysql-server with its in-memory storage, listening on a free loopback
// port, started in well under a second and gone with the test binary.
//
// It is what proxy's tests run against in the edit loop (go test -short on
// a machine without MariaDB, README "Tests"): the relay, result sets,
// prepared statements, multi-statements and errors of the protocol core
// need a server that speaks the protocol, not one that is MariaDB. What
// only MariaDB does (KILL and its ids, backend accounts, session tracking,
// TLS and compression to the backend, LOCAL INFILE, COM_STATISTICS,
// MariaDB's greeting and SQL) is tested against
// internal/testkit/testdb's MariaDB, in the full suite; a test of that kind skips
// here, saying why (proxy's needsMariaDB).
//
// Without a mysql.user table go-mysql-server accepts any user name and
// password (mysql_native_password), so root with an empty password, what
// internal/testkit/testdb's servers use, logs in. Databases, tables and rows live
// in the Server's memory; each Server has its own. Errors leave with
// MySQL's SQLSTATE where go-mysql-server says HY000 (sqlState).
package memdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/memory"
	"github.com/dolthub/go-mysql-server/server"
	gsql "github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
	driver "github.com/go-sql-driver/mysql"
	"github.com/sirupsen/logrus"
)

// Server is one go-mysql-server on loopback, owned by a test binary or a
// test.
type Server struct {
	// Addr is host:port on loopback; Port its port.
	Addr string
	Port int

	srv *server.Server
}

// New starts a server with an empty in-memory catalog on a free loopback
// port. The caller must Close it.
func New() (*Server, error) {
	// go-mysql-server logs every connection through logrus' global logger.
	logrus.SetOutput(io.Discard)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("memdb: listen: %w", err)
	}
	// Without native primary-key indexes, as the demo (demo/backend.go):
	// with them SELECT MAX(pk) of an empty table returns no row at all
	// (go-mysql-server v0.20.0), where MySQL returns one NULL.
	pro := memory.NewDBProviderWithOpts(memory.NativeIndexProvider(false)).(*memory.DbProvider)
	engine := sqle.NewDefault(pro)
	cfg := server.Config{Protocol: "tcp", Address: l.Addr().String(), Listener: l}
	srv, err := server.NewServerWithHandler(cfg, engine, gsql.NewContext, memory.NewSessionBuilder(pro), nil,
		func(h mysql.Handler) (mysql.Handler, error) { return sqlStates{h}, nil })
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("memdb: start go-mysql-server: %w", err)
	}
	go srv.Start()
	addr := l.Addr().(*net.TCPAddr)
	s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(addr.Port)), Port: addr.Port, srv: srv}
	if err := s.ping(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Start is New for one test: the server is closed when tb ends, and tb
// fails if it cannot start.
func Start(tb testing.TB) *Server {
	tb.Helper()
	s, err := New()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return s
}

// Close stops the listener and closes the sessions. Safe to call twice.
func (s *Server) Close() { _ = s.srv.Close() }

// DSN is a go-sql-driver DSN for root on database db ("" for none), as
// internal/testkit/testdb's Server.DSN.
func (s *Server) DSN(db string) string {
	cfg := driver.NewConfig()
	cfg.User = "root"
	cfg.Net = "tcp"
	cfg.Addr = s.Addr
	cfg.DBName = db
	cfg.Timeout = 5 * time.Second
	cfg.ParseTime = true
	return cfg.FormatDSN()
}

// ping waits until the server answers a login, so New returns a server
// that is up.
func (s *Server) ping() error {
	db, err := sql.Open("mysql", s.DSN(""))
	if err != nil {
		return fmt.Errorf("memdb: %w", err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		return fmt.Errorf("memdb: go-mysql-server on %s does not answer: %w", s.Addr, err)
	}
	return nil
}

// sqlState is MySQL's SQLSTATE for the error codes go-mysql-server
// answers with the catch-all HY000 where MySQL and MariaDB name the class
// (a duplicate key is an integrity constraint violation, 23000): clients
// and tests read it.
var sqlState = map[int]string{
	mysql.ERDupEntry:         "23000",
	mysql.ERBadNullError:     "23000",
	mysql.ErNoReferencedRow2: "23000",
	mysql.ERRowIsReferenced2: "23000",
	mysql.ERNoSuchTable:      "42S02",
	mysql.ERBadFieldError:    "42S22",
	mysql.ERBadDb:            "42000",
}

// sqlStates wraps go-mysql-server's handler: its errors leave with
// MySQL's SQLSTATE (sqlState).
type sqlStates struct{ mysql.Handler }

// fix puts MySQL's SQLSTATE on err when go-mysql-server left HY000.
func fix(err error) error {
	var se *mysql.SQLError
	if errors.As(err, &se) && se.State == mysql.SSUnknownSQLState {
		if st, ok := sqlState[se.Num]; ok {
			se.State = st
		}
	}
	return err
}

func (h sqlStates) ComQuery(ctx context.Context, c *mysql.Conn, query string, callback mysql.ResultSpoolFn) error {
	return fix(h.Handler.ComQuery(ctx, c, query, callback))
}

func (h sqlStates) ComMultiQuery(ctx context.Context, c *mysql.Conn, query string, callback mysql.ResultSpoolFn) (string, error) {
	rest, err := h.Handler.ComMultiQuery(ctx, c, query, callback)
	return rest, fix(err)
}

func (h sqlStates) ComPrepare(ctx context.Context, c *mysql.Conn, query string, prepare *mysql.PrepareData) ([]*querypb.Field, error) {
	fields, err := h.Handler.ComPrepare(ctx, c, query, prepare)
	return fields, fix(err)
}

func (h sqlStates) ComStmtExecute(ctx context.Context, c *mysql.Conn, prepare *mysql.PrepareData, callback func(*sqltypes.Result) error) error {
	return fix(h.Handler.ComStmtExecute(ctx, c, prepare, callback))
}
