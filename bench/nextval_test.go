package bench

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/allocator"
	"github.com/leafproxy/leafproxy/allocator/segment"
	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testdb"
	"github.com/leafproxy/leafproxy/loadgen"
	"github.com/leafproxy/leafproxy/service"
)

// fetchEvent is one segment fetch seen by the store wrapper.
type fetchEvent struct {
	tag  string
	at   time.Time // when the fetch returned
	size int64     // IDs in the segment
	took time.Duration
	err  error
}

// fetchLog records every segment fetch of a leafproxy under test and
// injects latency into the fetches of chosen tags (a slow store).
type fetchLog struct {
	delay func(tag string) time.Duration

	mu     sync.Mutex
	events []fetchEvent
}

// between returns the fetches of tag that returned in [from, to].
func (l *fetchLog) between(tag string, from, to time.Time) []fetchEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []fetchEvent
	for _, e := range l.events {
		if e.tag == tag && !e.at.Before(from) && !e.at.After(to) {
			out = append(out, e)
		}
	}
	return out
}

type loggingStore struct {
	inner segment.Store
	log   *fetchLog
}

func (s loggingStore) Fetch(ctx context.Context, tag string, step int64) (segment.Range, error) {
	begin := time.Now()
	if s.log.delay != nil {
		if d := s.log.delay(tag); d > 0 {
			time.Sleep(d)
		}
	}
	r, err := s.inner.Fetch(ctx, tag, step)
	now := time.Now()
	s.log.mu.Lock()
	s.log.events = append(s.log.events, fetchEvent{tag: tag, at: now, size: r.End - r.Start, took: now.Sub(begin), err: err})
	s.log.mu.Unlock()
	return r, err
}

func (s loggingStore) Create(ctx context.Context, tag string, step int64) error {
	return s.inner.Create(ctx, tag, step)
}

// startLeafService runs a whole leafproxy (service.New: allocator, engine,
// proxy, as the binary wires them) in this process in front of srv, with
// the allocation store in srv's `leafproxy` database wrapped by log, and
// returns a DSN on database db for the client account app/secret. setup
// adds tags and table rules to the configuration.
func startLeafService(t *testing.T, srv *testdb.Server, db string, log *fetchLog, setup func(*config.Config)) string {
	t.Helper()
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.Backend.Addr = srv.Addr
	cfg.Backend.User = "root"
	cfg.Backend.Password = ""
	cfg.Users = []config.User{{Name: "app", Password: "secret"}}
	cfg.Sequences.WaitTimeout = config.Duration(5 * time.Second)
	cfg.Sequences.Tags = map[string]config.Tag{}
	cfg.Shutdown.Grace = config.Duration(2 * time.Second)
	cfg.Log.Level = "warn"
	setup(cfg)
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("config: %v", err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, cancel := context.WithCancel(context.Background())
	svc, err := service.New(ctx, cfg, logger, service.WithAllocatorOptions(allocator.WithStoreWrapper(func(s segment.Store) segment.Store {
		return loggingStore{inner: s, log: log}
	})))
	if err != nil {
		cancel()
		t.Fatalf("leafproxy: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- svc.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("leafproxy Serve: %v", err)
		}
	})
	return dsnAt(t, srv.DSN(db), ln.Addr().String(), "app", "secret")
}

// benchCase is one target measured in a group: the members of a group are
// compared with each other and run back to back, in an order that
// alternates every round.
type benchCase struct {
	name   string
	cfg    loadgen.Config
	before func(t *testing.T) // e.g. truncate the target's table
	after  func(t *testing.T, res loadgen.Result, returned time.Time)
}

type benchGroup struct {
	name  string
	conns int
	cases []benchCase
}

// runGroups runs every group's cases for rounds rounds and returns the
// merged cells, keyed by group name and case name. LEAFPROXY_BENCH_TARGETS
// (comma-separated substrings) narrows the cases, e.g. for profiling one.
func runGroups(t *testing.T, rounds int, dur, warm time.Duration, groups []benchGroup) map[string]*rcell {
	t.Helper()
	var only []string
	if v := os.Getenv("LEAFPROXY_BENCH_TARGETS"); v != "" {
		only = strings.Split(v, ",")
	}
	keep := func(name string) bool {
		if only == nil {
			return true
		}
		return slices.ContainsFunc(only, func(s string) bool { return strings.Contains(name, s) })
	}
	cells := map[string]*rcell{}
	ctx := context.Background()
	for round := 0; round < rounds; round++ {
		for _, g := range groups {
			for i := range g.cases {
				c := g.cases[i]
				if round%2 == 1 {
					c = g.cases[len(g.cases)-1-i]
				}
				if !keep(c.name) {
					continue
				}
				if c.before != nil {
					c.before(t)
				}
				cfg := c.cfg
				cfg.Conns, cfg.Duration, cfg.Warmup = g.conns, dur, warm
				res, err := loadgen.Run(ctx, cfg)
				returned := time.Now()
				if err != nil {
					t.Fatalf("%s, %s: %v", g.name, c.name, err)
				}
				k := cellKey(g, c.name)
				if cells[k] == nil {
					cells[k] = new(rcell)
				}
				cells[k].add(res)
				cells[k].rows += res.Rows
				t.Logf("round %d, %s, %s: %.0f QPS, %.0f rows/s, p99 %s, p999 %s, %d errors", round+1, g.name, c.name, res.QPS, res.RowsPerSec, res.Latency.P99, res.Latency.P999, res.Errors)
				if c.after != nil {
					c.after(t, res, returned)
				}
			}
		}
	}
	return cells
}

func cellKey(g benchGroup, name string) string { return fmt.Sprintf("%s/%d/%s", g.name, g.conns, name) }

// printGroups writes one row per case: QPS (and rows/s when rowsCol),
// percentiles, in-process CPU per request, errors.
func printGroups(t *testing.T, out *strings.Builder, groups []benchGroup, cells map[string]*rcell, rowsCol bool) {
	t.Helper()
	if rowsCol {
		fmt.Fprintln(out, "| workload | conns | target | QPS | rows/s | p50 | p99 | p999 | max | in-process CPU/req | errors |")
		fmt.Fprintln(out, "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	} else {
		fmt.Fprintln(out, "| workload | conns | target | QPS | p50 | p99 | p999 | max | in-process CPU/req | errors |")
		fmt.Fprintln(out, "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
	}
	for _, g := range groups {
		for _, c := range g.cases {
			x := cells[cellKey(g, c.name)]
			if x == nil {
				continue
			}
			s := x.hist.Summary()
			rows := ""
			if rowsCol {
				rows = fmt.Sprintf(" %.0f |", x.rowsPerSec())
			}
			fmt.Fprintf(out, "| %s | %d | %s | %.0f |%s %s | %s | %s | %s | %.1fus | %d |\n", g.name, g.conns, c.name, x.qps(), rows,
				us(s.P50), us(s.P99), us(s.P999), us(s.Max), float64(x.cpuPerReq())/1e3, x.errors)
			if x.firstErr != "" {
				t.Errorf("%s, %s: %d errors, first: %s", g.name, c.name, x.errors, x.firstErr)
			}
		}
	}
}

// ratio formats a/b, or n/a when either side was not measured.
func ratio(a, b float64) string {
	if a == 0 || b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

// rcell is a cell that also counts rows (affected rows for INSERTs).
type rcell struct {
	cell
	rows uint64
}

func (c *rcell) rowsPerSec() float64 {
	if c.elapsed <= 0 {
		return 0
	}
	return float64(c.rows) / c.elapsed.Seconds()
}

func p999(c *rcell) float64 {
	if c == nil {
		return 0
	}
	return float64(c.hist.Percentile(99.9))
}

func qpsOf(c *rcell) float64 {
	if c == nil {
		return 0
	}
	return c.qps()
}

// TestNextvalBench measures SELECT NEXTVAL('t') answered by leafproxy
// against SELECT 1 and MariaDB's native sequence, both direct, at 1 and 32
// connections; then the slow-store cell: 20 ms injected into every segment
// fetch, step 1000 against a step of 1,000,000.
func TestNextvalBench(t *testing.T) {
	benchEnabled(t)
	dur := envDuration(t, "LEAFPROXY_BENCH_DURATION", 5*time.Second)
	warm := envDuration(t, "LEAFPROXY_BENCH_WARMUP", time.Second)
	rounds := envInt(t, "LEAFPROXY_BENCH_ROUNDS", 1)
	slowDelay := envDuration(t, "LEAFPROXY_BENCH_STORE_LATENCY", 20*time.Millisecond)

	srv := testdb.Start(t)
	srv.Exec(t, "CREATE DATABASE bench", "CREATE SEQUENCE bench.s CACHE 1000")
	direct := srv.DSN("bench")

	// One proxy: tag t for the comparison (no injected latency), and per
	// round a fresh pair of slow-store tags, so every round starts the
	// step-1000 tag at 1000 (the allocator grows a tag's step in memory).
	const slowPrefix = "slow_"
	flog := &fetchLog{delay: func(tag string) time.Duration {
		if strings.HasPrefix(tag, slowPrefix) {
			return slowDelay
		}
		return 0
	}}
	smallTag := func(r int) string { return fmt.Sprintf("%sstep1000_r%d", slowPrefix, r) }
	hugeTag := func(r int) string { return fmt.Sprintf("%sstep1m_r%d", slowPrefix, r) }
	proxyDSN := startLeafService(t, srv, "bench", flog, func(cfg *config.Config) {
		cfg.Sequences.Tags["t"] = config.Tag{Generator: "segment", Step: 1000}
		for r := 0; r < rounds; r++ {
			cfg.Sequences.Tags[smallTag(r)] = config.Tag{Generator: "segment", Step: 1000}
			cfg.Sequences.Tags[hugeTag(r)] = config.Tag{Generator: "segment", Step: 1_000_000}
		}
	})

	var groups []benchGroup
	for _, c := range []int{1, 32} {
		groups = append(groups, benchGroup{name: "nextval", conns: c, cases: []benchCase{
			{name: "leafproxy NEXTVAL('t')", cfg: loadgen.Config{DSN: proxyDSN, Query: "SELECT NEXTVAL('t')"}},
			{name: "direct SELECT 1", cfg: loadgen.Config{DSN: direct, Query: "SELECT 1"}},
			{name: "direct native NEXTVAL(s)", cfg: loadgen.Config{DSN: direct, Query: "SELECT NEXTVAL(s)"}},
		}})
	}
	cells := runGroups(t, rounds, dur, warm, groups)

	out := new(strings.Builder)
	fmt.Fprintf(out, "\nNEXTVAL: %s per cell (+%s warm-up), %d round(s), GOMAXPROCS %d, %d CPUs\n\n", dur, warm, rounds, runtime.GOMAXPROCS(0), runtime.NumCPU())
	printGroups(t, out, groups, cells, false)
	fmt.Fprintln(out, "\n| conns | leafproxy/SELECT 1 QPS (>= 1.0 at 32) | leafproxy/native QPS (>= 1.5 at 32) | leafproxy/SELECT 1 p999 (<= 1.0 at 32) | leafproxy/native p999 |")
	fmt.Fprintln(out, "|---:|---:|---:|---:|---:|")
	for _, g := range groups {
		lp, s1, nat := cells[cellKey(g, "leafproxy NEXTVAL('t')")], cells[cellKey(g, "direct SELECT 1")], cells[cellKey(g, "direct native NEXTVAL(s)")]
		fmt.Fprintf(out, "| %d | %s | %s | %s | %s |\n", g.conns, ratio(qpsOf(lp), qpsOf(s1)), ratio(qpsOf(lp), qpsOf(nat)), ratio(p999(lp), p999(s1)), ratio(p999(lp), p999(nat)))
	}
	if ev := flog.between("t", time.Time{}, time.Now()); len(ev) > 0 {
		fmt.Fprintf(out, "\nTag t: %d segment fetches in the whole comparison, last segment %d IDs\n", len(ev), ev[len(ev)-1].size)
	}

	// The slow-store cell. Each round measures both tags under the same
	// load (32 connections), in alternating order, and logs the fetches
	// that returned inside the measured window.
	const slowConns = 32
	type slowStat struct {
		fetches, fetchesInWindow int
		sizes                    []int64
	}
	slowCells := map[string]*rcell{}
	slowStats := map[string]*slowStat{}
	ctx := context.Background()
	for r := 0; r < rounds; r++ {
		order := []string{"step 1000", "step 1,000,000"}
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, name := range order {
			tag := smallTag(r)
			if name != "step 1000" {
				tag = hugeTag(r)
			}
			if os.Getenv("LEAFPROXY_BENCH_TARGETS") != "" && !strings.Contains(os.Getenv("LEAFPROXY_BENCH_TARGETS"), "slow") {
				continue
			}
			called := time.Now()
			res, err := loadgen.Run(ctx, loadgen.Config{DSN: proxyDSN, Conns: slowConns, Duration: dur, Warmup: warm, Query: "SELECT NEXTVAL('" + tag + "')"})
			returned := time.Now()
			if err != nil {
				t.Fatalf("slow store, %s: %v", name, err)
			}
			if slowCells[name] == nil {
				slowCells[name], slowStats[name] = new(rcell), new(slowStat)
			}
			slowCells[name].add(res)
			st := slowStats[name]
			all := flog.between(tag, called, returned)
			// The measured window ended at most a request before Run
			// returned; it began Elapsed earlier.
			in := flog.between(tag, returned.Add(-res.Elapsed-10*time.Millisecond), returned)
			st.fetches += len(all)
			st.fetchesInWindow += len(in)
			for _, e := range all {
				st.sizes = append(st.sizes, e.size)
				if e.err != nil {
					t.Errorf("slow store, %s: fetch error: %v", name, e.err)
				}
			}
			t.Logf("round %d, slow store %s (%s): %.0f QPS, p99 %s, p999 %s, max %s, %d fetches (%d in the measured window), sizes %v",
				r+1, name, tag, res.QPS, res.Latency.P99, res.Latency.P999, res.Latency.Max, len(all), len(in), sizesOf(all))
		}
	}
	if len(slowCells) == 0 {
		report(t, out.String())
		return
	}
	fmt.Fprintf(out, "\nSlow store: %s injected into every segment fetch, %d connections, SELECT NEXTVAL, %s per cell (+%s warm-up), %d round(s)\n\n", slowDelay, slowConns, dur, warm, rounds)
	fmt.Fprintln(out, "| tag's table step | QPS | p50 | p99 | p999 | max | fetches (whole run) | fetches in measured windows | segment sizes fetched | errors |")
	fmt.Fprintln(out, "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|")
	for _, name := range []string{"step 1000", "step 1,000,000"} {
		x, st := slowCells[name], slowStats[name]
		if x == nil {
			continue
		}
		s := x.hist.Summary()
		fmt.Fprintf(out, "| %s | %.0f | %s | %s | %s | %s | %d | %d | %s | %d |\n", name, x.qps(), us(s.P50), us(s.P99), us(s.P999), us(s.Max), st.fetches, st.fetchesInWindow, sizesString(st.sizes), x.errors)
		if x.firstErr != "" {
			t.Errorf("slow store, %s: %d errors, first: %s", name, x.errors, x.firstErr)
		}
	}
	small, huge := slowCells["step 1000"], slowCells["step 1,000,000"]
	if small != nil && huge != nil {
		fmt.Fprintf(out, "\nstep 1000 / step 1,000,000: p999 %s (target <= 1.2x), p99 %s, max %s\n",
			ratio(p999(small), p999(huge)),
			ratio(float64(small.hist.Percentile(99)), float64(huge.hist.Percentile(99))),
			ratio(float64(small.hist.Max()), float64(huge.hist.Max())))
	}
	report(t, out.String())
}

func sizesOf(ev []fetchEvent) []int64 {
	s := make([]int64, len(ev))
	for i, e := range ev {
		s[i] = e.size
	}
	return s
}

// sizesString abbreviates a list of segment sizes: the first few and the
// last.
func sizesString(s []int64) string {
	if len(s) == 0 {
		return "-"
	}
	var parts []string
	for i, v := range s {
		if i < 6 || i == len(s)-1 {
			parts = append(parts, fmt.Sprint(v))
		} else if i == 6 {
			parts = append(parts, "...")
		}
	}
	return strings.Join(parts, ", ")
}
