// Package loadgen drives a MySQL endpoint (MariaDB, a relay, leafproxy)
// with a fixed number of connections for a fixed time and reports
// throughput and latency percentiles. cmd/leafbench is its command line;
// benchmark suites call Run directly so that every figure in the project
// comes from the same tool.
//
// Each worker owns one pinned connection (sql.Conn), so the connection count
// is exact, and one latency histogram, merged at the end: memory stays
// bounded however long the run, and the hot loop takes no locks.
package loadgen

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Mode says how a statement is sent and what is counted as rows.
type Mode string

const (
	// ModeQuery reads every row of every result set and discards it.
	ModeQuery Mode = "query"
	// ModeExec runs statements that return no rows (INSERT, UPDATE) and
	// counts affected rows.
	ModeExec Mode = "exec"
)

// defaultReadTimeout bounds a request to an endpoint that stops answering
// (requests are not cancelled mid-flight); a DSN's readTimeout overrides it.
const defaultReadTimeout = 30 * time.Second

// Config is one load run.
type Config struct {
	// DSN is a go-sql-driver/mysql DSN. Its interpolateParams setting is
	// overridden: text mode interpolates arguments client-side (one
	// COM_QUERY per request), prepared mode prepares once per connection
	// and sends COM_STMT_EXECUTE per request.
	DSN string
	// Conns is the number of connections, each driven by one goroutine
	// sending requests back to back (closed loop).
	Conns int
	// Duration is the measured time; Warmup runs the same load before it
	// without recording.
	Duration time.Duration
	Warmup   time.Duration
	// Query is the statement; QueryFor, when set, gives each connection its
	// own (e.g. its own table) and overrides Query.
	Query    string
	QueryFor func(conn int) string
	// Args generate one value per placeholder per request.
	Args []ArgSpec
	// Prepare uses server-side prepared statements.
	Prepare bool
	Mode    Mode
	// Init statements run on each connection once, before the clock starts
	// (session variables, per-connection setup).
	Init []string
	// Seed makes "rand" arguments reproducible; 0 picks one from the clock.
	Seed uint64
}

// Result is what a run measured. Latencies cover requests that started
// after the warmup and finished before the end, including fetching every
// row.
type Result struct {
	Conns    int           `json:"conns"`
	Mode     Mode          `json:"mode"`
	Prepare  bool          `json:"prepare"`
	Query    string        `json:"query"`
	Elapsed  time.Duration `json:"elapsed_ns"`
	Requests uint64        `json:"requests"`
	Errors   uint64        `json:"errors"`
	// Rows is rows read (query mode) or rows affected (exec mode).
	Rows       uint64  `json:"rows"`
	QPS        float64 `json:"qps"`
	RowsPerSec float64 `json:"rows_per_sec"`
	// Latency is computed from Hist; Hist is kept for callers that merge
	// runs or want other percentiles.
	Latency Summary    `json:"latency"`
	Hist    *Histogram `json:"-"`
	// FirstError is the first error seen, if any, for the report.
	FirstError string `json:"first_error,omitempty"`
	// ProcessCPU is the CPU time (user + system) this whole process used
	// during the measured window: the load generator's own cost, plus
	// anything else running in-process (a proxy under test).
	ProcessCPU time.Duration `json:"process_cpu_ns"`
}

// Run opens Conns connections, runs the load and closes them. It returns an
// error only when the run could not start (bad DSN, connection refused,
// statement that does not prepare); errors during the run are counted.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if cfg.Conns <= 0 {
		cfg.Conns = 1
	}
	if cfg.Mode == "" {
		cfg.Mode = ModeQuery
	}
	if cfg.Mode != ModeQuery && cfg.Mode != ModeExec {
		return Result{}, fmt.Errorf("mode %q: want query or exec", cfg.Mode)
	}
	if cfg.Duration <= 0 {
		return Result{}, errors.New("duration must be positive")
	}
	if cfg.Query == "" && cfg.QueryFor == nil {
		return Result{}, errors.New("no query")
	}
	if cfg.Seed == 0 {
		cfg.Seed = uint64(time.Now().UnixNano())
	}
	mcfg, err := mysql.ParseDSN(cfg.DSN)
	if err != nil {
		return Result{}, fmt.Errorf("parse DSN: %w", err)
	}
	mcfg.InterpolateParams = !cfg.Prepare
	if mcfg.ReadTimeout == 0 {
		mcfg.ReadTimeout = defaultReadTimeout
	}
	connector, err := mysql.NewConnector(mcfg)
	if err != nil {
		return Result{}, fmt.Errorf("DSN: %w", err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	db.SetMaxOpenConns(cfg.Conns)
	db.SetMaxIdleConns(cfg.Conns)

	workers := make([]*worker, cfg.Conns)
	defer func() {
		for _, w := range workers {
			if w != nil {
				w.close()
			}
		}
	}()
	for i := range workers {
		q := cfg.Query
		if cfg.QueryFor != nil {
			q = cfg.QueryFor(i)
		}
		w := &worker{
			cfg:   &cfg,
			db:    db,
			query: q,
			args:  newArgGen(cfg.Args, i, cfg.Conns, cfg.Seed),
			hist:  new(Histogram),
		}
		workers[i] = w
		if err := w.connect(ctx); err != nil {
			return Result{}, fmt.Errorf("connection %d of %d to %s: %w", i+1, cfg.Conns, mcfg.Addr, err)
		}
	}

	begin := time.Now()
	start := begin.Add(cfg.Warmup)
	end := start.Add(cfg.Duration)
	cpuDone := make(chan time.Duration, 1)
	go func() { cpuDone <- cpuDuring(ctx, start, end) }()
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.loop(ctx, start, end)
		}()
	}
	wg.Wait()
	stopped := time.Now()

	res := Result{Conns: cfg.Conns, Mode: cfg.Mode, Prepare: cfg.Prepare, Query: workers[0].query, Hist: new(Histogram)}
	for _, w := range workers {
		res.Hist.Merge(w.hist)
		res.Requests += w.requests
		res.Errors += w.errors
		res.Rows += w.rows
		if res.FirstError == "" && w.firstErr != nil {
			res.FirstError = w.firstErr.Error()
		}
	}
	// A cancelled run reports the time it actually measured.
	if stopped.After(end) {
		stopped = end
	}
	res.Elapsed = stopped.Sub(start)
	if res.Elapsed <= 0 {
		res.Elapsed = 0
	} else {
		s := res.Elapsed.Seconds()
		res.QPS = float64(res.Requests) / s
		res.RowsPerSec = float64(res.Rows) / s
	}
	res.Latency = res.Hist.Summary()
	res.ProcessCPU = <-cpuDone
	return res, nil
}

// cpuDuring returns the process CPU time used between start and end (or
// until ctx ends), read with getrusage at both instants.
func cpuDuring(ctx context.Context, start, end time.Time) time.Duration {
	wait := func(t time.Time) {
		timer := time.NewTimer(time.Until(t))
		defer timer.Stop()
		select {
		case <-ctx.Done():
		case <-timer.C:
		}
	}
	wait(start)
	before := processCPU()
	wait(end)
	return processCPU() - before
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type worker struct {
	cfg   *Config
	db    *sql.DB
	query string
	args  *argGen
	hist  *Histogram

	conn *sql.Conn
	stmt *sql.Stmt

	requests, errors, rows uint64
	firstErr               error
}

// connect pins a fresh connection and prepares the statement on it.
func (w *worker) connect(ctx context.Context) error {
	w.close()
	c, err := w.db.Conn(ctx)
	if err != nil {
		return err
	}
	w.conn = c
	// Conn may hand back a pooled connection lazily; a ping makes sure this
	// one is really open before the clock starts.
	if err := c.PingContext(ctx); err != nil {
		return err
	}
	for _, q := range w.cfg.Init {
		if _, err := c.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("init %q: %w", q, err)
		}
	}
	if w.cfg.Prepare {
		st, err := c.PrepareContext(ctx, w.query)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", w.query, err)
		}
		w.stmt = st
	}
	return nil
}

func (w *worker) close() {
	if w.stmt != nil {
		w.stmt.Close()
		w.stmt = nil
	}
	if w.conn != nil {
		// Raw lets us drop a connection that may be broken instead of
		// returning it to the pool.
		w.conn.Raw(func(any) error { return driver.ErrBadConn })
		w.conn.Close()
		w.conn = nil
	}
}

func (w *worker) loop(ctx context.Context, start, end time.Time) {
	// Requests run under a context that is never cancelled: for one that
	// can be, database/sql starts a watcher goroutine per query, which cost
	// ~9% of the tool's CPU on SELECT 1. Cancellation is checked between
	// requests; a hung endpoint is bounded by the DSN's readTimeout.
	reqCtx := context.WithoutCancel(ctx)
	for ctx.Err() == nil {
		t0 := time.Now()
		if !t0.Before(end) {
			return
		}
		n, err := w.do(reqCtx)
		t1 := time.Now()
		if t1.After(end) {
			return
		}
		if t0.Before(start) {
			if err != nil && w.reconnect(ctx, err) != nil {
				return
			}
			continue
		}
		w.requests++
		if err != nil {
			w.errors++
			if w.firstErr == nil {
				w.firstErr = err
			}
			if w.reconnect(ctx, err) != nil {
				return
			}
			continue
		}
		w.rows += n
		w.hist.Record(int64(t1.Sub(t0)))
	}
}

// reconnect replaces the connection after an error that broke it, so a
// proxy that drops a session costs errors, not the rest of the run. A
// statement error (duplicate key, syntax) keeps the connection.
func (w *worker) reconnect(ctx context.Context, err error) error {
	if !errors.Is(err, driver.ErrBadConn) && !errors.Is(err, mysql.ErrInvalidConn) &&
		!errors.Is(err, sql.ErrConnDone) && w.conn.PingContext(ctx) == nil {
		return nil
	}
	for ctx.Err() == nil {
		if w.connect(ctx) == nil {
			return nil
		}
		// Back off so a dead endpoint does not turn into a spin.
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
	return ctx.Err()
}

// do sends one request and reads its whole response.
func (w *worker) do(ctx context.Context) (uint64, error) {
	var args []any
	if len(w.cfg.Args) > 0 {
		args = w.args.next()
	}
	if w.cfg.Mode == ModeExec {
		var res sql.Result
		var err error
		if w.stmt != nil {
			res, err = w.stmt.ExecContext(ctx, args...)
		} else {
			res, err = w.conn.ExecContext(ctx, w.query, args...)
		}
		if err != nil {
			return 0, err
		}
		n, _ := res.RowsAffected()
		return uint64(n), nil
	}
	var rows *sql.Rows
	var err error
	if w.stmt != nil {
		rows, err = w.stmt.QueryContext(ctx, args...)
	} else {
		rows, err = w.conn.QueryContext(ctx, w.query, args...)
	}
	if err != nil {
		return 0, err
	}
	// Next without Scan makes the driver read and decode each row into its
	// reused buffer and nothing more: the cheapest full read of a result.
	var n uint64
	for {
		for rows.Next() {
			n++
		}
		if !rows.NextResultSet() {
			break
		}
	}
	err = rows.Err()
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	return n, err
}
