package allocator

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/internal/conflict"
)

// StorePool is the allocation store as a database/sql connector over the
// store's nodes (sequences.store's list, in order of preference): every
// new connection goes to the node in use; when that node cannot be
// reached, refuses to log in, or answers that it is not ready (Galera's
// 1047), the pool moves to the next node that can (failover), and while
// a later node is in use it probes the preferred ones every
// FailbackEvery and moves back to the first that answers as ready
// FailbackAfter times in a row (failback). Each move makes the
// connections to the node left behind invalid: the pool closes them when
// they come back to it, and one in use ends with its statement, so that
// after a move every proxy with the same list writes to one node, as
// Galera wants (one writer at a time; a list is not safe for a store
// whose nodes can hold different data: asynchronous replicas, separate
// servers; README, "Running the store on Galera").
//
// With one DSN it is a plain connector: no probe, no move.
type StorePool struct {
	nodes []storeNode
	log   *slog.Logger

	// FailbackEvery is how often a preferred node is probed while a
	// later one is in use (default 5 s); FailbackAfter how many answers
	// as ready in a row move back to it (default 3).
	FailbackEvery time.Duration
	FailbackAfter int

	mu        sync.Mutex
	cur       int           // index of the node in use
	gen       atomic.Uint64 // raised at each move: connections of an older one are closed
	failovers atomic.Uint64 // moves to a later node
	failbacks atomic.Uint64 // moves to an earlier node
	stop      chan struct{}
	done      chan struct{}
	started   bool
}

// storeNode is one DSN of the pool.
type storeNode struct {
	addr string
	conn driver.Connector
}

// Defaults of StorePool's pacing and of a listed DSN's dial timeout.
const (
	DefaultFailbackEvery = 5 * time.Second
	DefaultFailbackAfter = 3
	// listedDialTimeout bounds the dial and login of a node of a list
	// whose DSN sets no timeout, so that a node that is gone does not
	// hold a new connection for the operating system's minutes before
	// the next node is tried.
	listedDialTimeout = 3 * time.Second
)

// NewStorePool returns the pool over dsns (at least one), using the
// first. log hears every move (a failover at warning level, a failback
// at info).
func NewStorePool(dsns []string, log *slog.Logger) (*StorePool, error) {
	if len(dsns) == 0 {
		return nil, errors.New("allocation store: no DSN")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &StorePool{log: log, FailbackEvery: DefaultFailbackEvery, FailbackAfter: DefaultFailbackAfter,
		stop: make(chan struct{}), done: make(chan struct{})}
	for i, dsn := range dsns {
		mc, err := mysql.ParseDSN(dsn)
		if err != nil {
			return nil, fmt.Errorf("allocation store DSN %d: %w", i+1, err)
		}
		if len(dsns) > 1 && mc.Timeout == 0 {
			mc.Timeout = listedDialTimeout
		}
		c, err := mysql.NewConnector(mc)
		if err != nil {
			return nil, fmt.Errorf("allocation store DSN %d: %w", i+1, err)
		}
		p.nodes = append(p.nodes, storeNode{addr: mc.Addr, conn: c})
	}
	return p, nil
}

// OpenDB returns a *sql.DB over the pool, and starts its failback probe
// when it has more than one node (Close stops it).
func (p *StorePool) OpenDB() *sql.DB {
	db := sql.OpenDB(p)
	p.mu.Lock()
	if len(p.nodes) > 1 && !p.started {
		p.started = true
		go p.failbackLoop()
	}
	p.mu.Unlock()
	return db
}

// Close stops the failback probe (the *sql.DB is closed by its owner).
func (p *StorePool) Close() {
	p.mu.Lock()
	started := p.started
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	p.mu.Unlock()
	if started {
		<-p.done
	}
}

// Driver is go-sql-driver's.
func (p *StorePool) Driver() driver.Driver { return mysql.MySQLDriver{} }

// Addrs are the nodes' addresses, in order.
func (p *StorePool) Addrs() []string {
	out := make([]string, len(p.nodes))
	for i, n := range p.nodes {
		out[i] = n.addr
	}
	return out
}

// InUse is the index and address of the node new connections go to.
func (p *StorePool) InUse() (int, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cur, p.nodes[p.cur].addr
}

// Moves counts the failovers (to a later node) and failbacks (to an
// earlier one) so far.
func (p *StorePool) Moves() (failovers, failbacks uint64) {
	return p.failovers.Load(), p.failbacks.Load()
}

// Connect opens a connection to the node in use or, when it fails, to the
// next one that answers, in list order after it and then from the top
// (a failover: the pool moves there). It fails with every node's error
// when none answers.
func (p *StorePool) Connect(ctx context.Context) (driver.Conn, error) {
	p.mu.Lock()
	cur := p.cur
	p.mu.Unlock()
	var errs []error
	n := len(p.nodes)
	for k := range n {
		i := (cur + k) % n
		c, err := p.nodes[i].conn.Connect(ctx)
		if err == nil && k > 0 {
			err = p.ready(ctx, c)
			if err != nil {
				c.Close()
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.nodes[i].addr, err))
			if ctx.Err() != nil {
				break
			}
			continue
		}
		if k > 0 {
			p.move(cur, i, errors.Join(errs...))
		}
		return &poolConn{Conn: c, pool: p, node: i, gen: p.gen.Load()}, nil
	}
	if n == 1 {
		return nil, errors.Unwrap(errs[0]) // the driver's own error, as without a pool
	}
	return nil, fmt.Errorf("no node of the allocation store answers: %w", errors.Join(errs...))
}

// move makes node to the one in use if from still is (another caller may
// have moved meanwhile), invalidating the connections to from.
func (p *StorePool) move(from, to int, why error) {
	p.mu.Lock()
	if p.cur != from || from == to {
		p.mu.Unlock()
		return
	}
	p.cur = to
	p.gen.Add(1)
	p.mu.Unlock()
	if to > from {
		p.failovers.Add(1)
		p.log.Warn("allocation store: failed over to another node", "in_use", p.nodes[to].addr, "left", p.nodes[from].addr, "err", why)
	} else {
		p.failbacks.Add(1)
		p.log.Info("allocation store: back on a preferred node; connections to the other closed", "in_use", p.nodes[to].addr, "left", p.nodes[from].addr)
	}
}

// notReady is a node in use answering that it is not ready (Galera's
// 1047): the pool moves to the next node that answers as ready.
func (p *StorePool) notReady(node int, err error) {
	p.mu.Lock()
	cur := p.cur
	p.mu.Unlock()
	if cur != node || len(p.nodes) == 1 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*listedDialTimeout)
	defer cancel()
	n := len(p.nodes)
	for k := 1; k < n; k++ {
		i := (node + k) % n
		if p.probe(ctx, i) == nil {
			p.move(node, i, err)
			return
		}
	}
}

// probe logs in to node i and asks whether it is ready (ready).
func (p *StorePool) probe(ctx context.Context, i int) error {
	c, err := p.nodes[i].conn.Connect(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	return p.ready(ctx, c)
}

// ready asks a node whether it may take the store's writes: a Galera node
// must be Synced (wsrep_local_state 4; a donor, joiner or a node cut off
// from the primary component refuses statements with 1047); a server
// without Galera is ready when it answers.
func (p *StorePool) ready(ctx context.Context, c driver.Conn) error {
	q, ok := c.(driver.QueryerContext)
	if !ok {
		return nil
	}
	rows, err := q.QueryContext(ctx, "SHOW GLOBAL STATUS LIKE 'wsrep_local_state'", nil)
	if err != nil {
		return err
	}
	defer rows.Close()
	vals := make([]driver.Value, len(rows.Columns()))
	if err := rows.Next(vals); err != nil {
		return nil // no such status: not a Galera node
	}
	state := fmt.Sprint(vals[1])
	if b, ok := vals[1].([]byte); ok {
		state = string(b)
	}
	if state != "4" {
		return fmt.Errorf("galera node not synced (wsrep_local_state %s, 4 is Synced)", state)
	}
	return nil
}

// failbackLoop probes the nodes preferred to the one in use, moving back
// to the first that answers as ready FailbackAfter times in a row.
func (p *StorePool) failbackLoop() {
	defer close(p.done)
	every, after := p.FailbackEvery, max(p.FailbackAfter, 1)
	if every <= 0 {
		every = DefaultFailbackEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	streak := make([]int, len(p.nodes))
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		cur, _ := p.InUse()
		for i := range cur {
			ctx, cancel := context.WithTimeout(context.Background(), 2*listedDialTimeout)
			err := p.probe(ctx, i)
			cancel()
			if err != nil {
				streak[i] = 0
				continue
			}
			if streak[i]++; streak[i] >= after {
				streak[i] = 0
				p.move(cur, i, nil)
				break
			}
		}
	}
}

// poolConn is a connection of the pool: go-sql-driver's, which it wraps
// to be closed once the pool moved to another node (IsValid,
// ResetSession) and to hear a node answering that it is not ready.
type poolConn struct {
	driver.Conn
	pool *StorePool
	node int
	gen  uint64
}

func (c *poolConn) stale() bool { return c.gen != c.pool.gen.Load() }

// heard passes err on, moving the pool off a node that said it is not
// ready.
func (c *poolConn) heard(err error) error {
	if err != nil && conflict.Code(err) == conflict.NotReady {
		c.pool.notReady(c.node, err)
	}
	return err
}

func (c *poolConn) IsValid() bool {
	if c.stale() {
		return false
	}
	v, ok := c.Conn.(driver.Validator)
	return !ok || v.IsValid()
}

func (c *poolConn) ResetSession(ctx context.Context) error {
	if c.stale() {
		return driver.ErrBadConn
	}
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *poolConn) Ping(ctx context.Context) error {
	if p, ok := c.Conn.(driver.Pinger); ok {
		return c.heard(p.Ping(ctx))
	}
	return nil
}

func (c *poolConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
	return tx, c.heard(err)
}

func (c *poolConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		return nil, c.heard(err)
	}
	return &poolStmt{Stmt: st, conn: c}, nil
}

func (c *poolConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	r, err := c.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
	return r, c.heard(err)
}

func (c *poolConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	r, err := c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
	return r, c.heard(err)
}

func (c *poolConn) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := c.Conn.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

// poolStmt is a prepared statement of a poolConn: its errors are heard
// too.
type poolStmt struct {
	driver.Stmt
	conn *poolConn
}

func (s *poolStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	r, err := s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
	return r, s.conn.heard(err)
}

func (s *poolStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	r, err := s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
	return r, s.conn.heard(err)
}

func (s *poolStmt) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := s.Stmt.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}
