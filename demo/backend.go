package demo

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/memory"
	"github.com/dolthub/go-mysql-server/server"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
	"github.com/sirupsen/logrus"
)

// LockWaitTimeout is how long a statement on the embedded backend waits
// for another connection's open transaction before it fails with 1205.
var LockWaitTimeout = 10 * time.Second

// Backend is the embedded MySQL-compatible server: go-mysql-server with
// its in-memory storage, listening on loopback. Without a mysql.user
// table it accepts any user name and password (mysql_native_password).
//
// Two things are added around go-mysql-server's own handler (see
// serialHandler): statements run one at a time, an open transaction
// holding the server until it ends, because the in-memory storage keeps a
// transaction's tables as private copies and COMMIT writes them back
// whole (concurrent transactions lose each other's updates, which would
// hand out the same leaf_alloc segment twice); and LAST_INSERT_ID(expr)
// reaches the OK packet's insert id, as in MySQL.
type Backend struct {
	srv    *server.Server
	engine *sqle.Engine
	addr   string
	serial *serialHandler // nil when go-mysql-server's handler runs unwrapped
}

// StartBackend starts go-mysql-server on addr (host:port; port 0 picks a
// free one) with an empty in-memory catalog.
func StartBackend(addr string) (*Backend, error) { return startBackend(addr, true) }

// startBackend with serial false leaves go-mysql-server's handler alone
// (tests show what the wrapper is for).
func startBackend(addr string, serial bool) (*Backend, error) {
	// go-mysql-server logs every connection through logrus' global logger.
	logrus.SetOutput(io.Discard)
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	// Without native primary-key indexes: with them, SELECT MAX(pk) of an
	// empty table returns no row at all (go-mysql-server v0.20.0), where
	// MySQL returns one NULL; the proxy reads rule tables' largest keys so.
	pro := memory.NewDBProviderWithOpts(memory.NativeIndexProvider(false)).(*memory.DbProvider)
	engine := sqle.NewDefault(pro)
	// go-mysql-server keeps names as created and resolves them
	// case-insensitively, but reports lower_case_table_names=0; the
	// proxy reads it to compare rule names as the backend does, so it is
	// set to what the server does (2).
	if err := sql.SystemVariables.AssignValues(map[string]any{"lower_case_table_names": 2}); err != nil {
		return nil, fmt.Errorf("set lower_case_table_names: %w", err)
	}
	sh := &serialHandler{sem: make(chan struct{}, 1), sessions: map[uint32]sql.Session{}}
	build := memory.NewSessionBuilder(pro)
	sb := func(ctx context.Context, c *mysql.Conn, addr string) (sql.Session, error) {
		s, err := build(ctx, c, addr)
		if err == nil {
			sh.mu.Lock()
			sh.sessions[c.ConnectionID] = s
			sh.mu.Unlock()
		}
		return s, err
	}
	cfg := server.Config{Protocol: "tcp", Address: l.Addr().String(), Listener: stripListener{l}}
	srv, err := server.NewServerWithHandler(cfg, engine, sql.NewContext, sb, nil, func(h mysql.Handler) (mysql.Handler, error) {
		if !serial {
			return h, nil
		}
		sh.Handler = h
		return sh, nil
	})
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("start go-mysql-server: %w", err)
	}
	b := &Backend{srv: srv, engine: engine, addr: l.Addr().String()}
	if serial {
		b.serial = sh
	}
	go srv.Start()
	return b, nil
}

// Addr is host:port the backend listens on.
func (b *Backend) Addr() string { return b.addr }

// Close stops the listener and closes sessions.
func (b *Backend) Close() error { return b.srv.Close() }

// serialHandler wraps go-mysql-server's handler: one command at a time on
// the whole server, and a connection inside a transaction keeps the
// server until COMMIT, ROLLBACK or disconnect; others wait at most
// LockWaitTimeout (then 1205, as InnoDB says it). It also puts the value
// of a LAST_INSERT_ID(expr) evaluated by a statement into its OK packet,
// which go-mysql-server leaves 0 for INSERT and UPDATE.
type serialHandler struct {
	mysql.Handler
	sem chan struct{} // holds a token while some connection runs or is in a transaction

	mu       sync.Mutex
	owner    uint32 // connection holding sem between commands (in a transaction); 0 = none
	sessions map[uint32]sql.Session

	// waiting counts the commands waiting in acquire for another
	// connection's command or transaction to end (tests wait on it).
	waiting atomic.Int32
}

func (h *serialHandler) session(c *mysql.Conn) sql.Session {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sessions[c.ConnectionID]
}

// acquire takes the server for c's command; it already has it when c is
// inside a transaction.
func (h *serialHandler) acquire(ctx context.Context, c *mysql.Conn) error {
	h.mu.Lock()
	held := h.owner == c.ConnectionID && h.owner != 0
	h.mu.Unlock()
	if held {
		return nil
	}
	t := time.NewTimer(LockWaitTimeout)
	defer t.Stop()
	h.waiting.Add(1)
	defer h.waiting.Add(-1)
	select {
	case h.sem <- struct{}{}:
		h.mu.Lock()
		h.owner = c.ConnectionID
		h.mu.Unlock()
		return nil
	case <-t.C:
		return mysql.NewSQLError(mysql.ERLockWaitTimeout, mysql.SSUnknownSQLState,
			"Lock wait timeout exceeded; try restarting transaction (the embedded demo backend runs one transaction at a time)")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// release gives the server up after c's command unless c is inside a
// transaction (or force: c is gone).
func (h *serialHandler) release(c *mysql.Conn, force bool) {
	if !force {
		if s := h.session(c); s != nil && inTransaction(s) {
			return
		}
	}
	h.mu.Lock()
	mine := h.owner == c.ConnectionID && h.owner != 0
	if mine {
		h.owner = 0
	}
	h.mu.Unlock()
	if mine {
		<-h.sem
	}
}

// inTransaction reports whether s is inside a transaction that goes on
// after the current command: START TRANSACTION / BEGIN, or autocommit
// off. (go-mysql-server also leaves an implicit transaction on the
// session after some commands, COM_STMT_PREPARE for one, that the next
// statement commits; that one does not count.)
func inTransaction(s sql.Session) bool {
	if s.GetTransaction() == nil {
		return false
	}
	if s.GetIgnoreAutoCommit() {
		return true
	}
	ctx := sql.NewContext(context.Background(), sql.WithSession(s))
	v, err := s.GetSessionVariable(ctx, sql.AutoCommitSessionVar)
	if err != nil {
		return true
	}
	on, err := sql.ConvertToBool(ctx, v)
	return err != nil || !on
}

func (h *serialHandler) lastInsertID(c *mysql.Conn) int64 {
	if s := h.session(c); s != nil {
		return s.GetLastQueryInfoInt(sql.LastInsertId)
	}
	return 0
}

// withInsertID wraps a result callback so an OK packet without an insert
// id reports LAST_INSERT_ID() when the statement changed it.
func (h *serialHandler) withInsertID(c *mysql.Conn, before int64, res *sqltypes.Result) {
	if res == nil || len(res.Fields) != 0 || res.InsertID != 0 {
		return
	}
	if now := h.lastInsertID(c); now != before {
		res.InsertID = uint64(now)
	}
}

func (h *serialHandler) ComQuery(ctx context.Context, c *mysql.Conn, query string, callback mysql.ResultSpoolFn) error {
	if err := h.acquire(ctx, c); err != nil {
		return err
	}
	defer h.release(c, false)
	before := h.lastInsertID(c)
	return h.Handler.ComQuery(ctx, c, query, func(res *sqltypes.Result, more bool) error {
		h.withInsertID(c, before, res)
		return callback(res, more)
	})
}

func (h *serialHandler) ComMultiQuery(ctx context.Context, c *mysql.Conn, query string, callback mysql.ResultSpoolFn) (string, error) {
	if err := h.acquire(ctx, c); err != nil {
		return "", err
	}
	defer h.release(c, false)
	before := h.lastInsertID(c)
	return h.Handler.ComMultiQuery(ctx, c, query, func(res *sqltypes.Result, more bool) error {
		h.withInsertID(c, before, res)
		return callback(res, more)
	})
}

// ComPrepare runs without taking the server, as preparing reads only the
// catalog (and MySQL takes no row locks for it): a client that prepares on
// one connection while its transaction is open on another (database/sql's
// Tx.Stmt does) must not wait for itself. go-mysql-server leaves an
// implicit transaction on the session after a prepare; outside an
// explicit one it is dropped, so the next statement starts afresh from
// the committed tables.
func (h *serialHandler) ComPrepare(ctx context.Context, c *mysql.Conn, query string, prepare *mysql.PrepareData) ([]*querypb.Field, error) {
	fields, err := h.Handler.ComPrepare(ctx, c, query, prepare)
	h.mu.Lock()
	mine := h.owner == c.ConnectionID && h.owner != 0
	h.mu.Unlock()
	if s := h.session(c); s != nil && !mine && !inTransaction(s) {
		s.SetTransaction(nil)
	}
	return fields, err
}

func (h *serialHandler) ComStmtExecute(ctx context.Context, c *mysql.Conn, prepare *mysql.PrepareData, callback func(*sqltypes.Result) error) error {
	if err := h.acquire(ctx, c); err != nil {
		return err
	}
	defer h.release(c, false)
	before := h.lastInsertID(c)
	return h.Handler.ComStmtExecute(ctx, c, prepare, func(res *sqltypes.Result) error {
		h.withInsertID(c, before, res)
		return callback(res)
	})
}

func (h *serialHandler) ComResetConnection(c *mysql.Conn) error {
	if err := h.acquire(context.Background(), c); err != nil {
		return err
	}
	defer h.release(c, false)
	return h.Handler.ComResetConnection(c)
}

func (h *serialHandler) ConnectionClosed(c *mysql.Conn) {
	h.Handler.ConnectionClosed(c)
	h.release(c, true)
	h.mu.Lock()
	delete(h.sessions, c.ConnectionID)
	h.mu.Unlock()
}
