package bench

import (
	"context"
	"database/sql"
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
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
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

func (s loggingStore) Peek(ctx context.Context, tags []string) (map[string]int64, error) {
	return s.inner.Peek(ctx, tags)
}

func (s loggingStore) Repair(ctx context.Context, tag string, floor int64) error {
	return s.inner.Repair(ctx, tag, floor)
}

func (s loggingStore) Fetch(ctx context.Context, tag string, step, floor int64) (segment.Range, error) {
	begin := time.Now()
	if s.log.delay != nil {
		if d := s.log.delay(tag); d > 0 {
			time.Sleep(d) // a slow store, on purpose
		}
	}
	r, err := s.inner.Fetch(ctx, tag, step, floor)
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
	if err := service.ValidateConfig(cfg); err != nil {
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
	// Two slow-store variants: "steady" measures after the usual warm-up
	// (by then the step-1000 tag has doubled its way up); "cold" primes the
	// tag with one NEXTVAL (the first, blocking fetch, the same for both
	// steps) and measures from there with no warm-up, so the first, small
	// segments' switches fall inside the window.
	type slowVariant struct {
		name  string
		warm  time.Duration
		prime bool
	}
	variants := []slowVariant{{"steady", warm, false}, {"cold", 0, true}}
	smallTag := func(v, r int) string { return fmt.Sprintf("%sv%d_step1000_r%d", slowPrefix, v, r) }
	hugeTag := func(v, r int) string { return fmt.Sprintf("%sv%d_step1m_r%d", slowPrefix, v, r) }
	proxyDSN := startLeafService(t, srv, "bench", flog, func(cfg *config.Config) {
		cfg.Sequences.Tags["t"] = config.Tag{Generator: "segment", Step: 1000}
		for v := range variants {
			for r := 0; r < rounds; r++ {
				cfg.Sequences.Tags[smallTag(v, r)] = config.Tag{Generator: "segment", Step: 1000}
				cfg.Sequences.Tags[hugeTag(v, r)] = config.Tag{Generator: "segment", Step: 1_000_000}
			}
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
	fmt.Fprintln(out, "\nRatios: merged over rounds (in parentheses: median and range of the per-round ratios).")
	fmt.Fprintln(out, "\n| conns | leafproxy/SELECT 1 QPS (>= 1.0 at 32) | leafproxy/native QPS (>= 1.5 at 32) | leafproxy/SELECT 1 p999 (<= 1.0 at 32) | leafproxy/native p999 |")
	fmt.Fprintln(out, "|---:|---:|---:|---:|---:|")
	for _, g := range groups {
		lp, s1, nat := cells[cellKey(g, "leafproxy NEXTVAL('t')")], cells[cellKey(g, "direct SELECT 1")], cells[cellKey(g, "direct native NEXTVAL(s)")]
		fmt.Fprintf(out, "| %d | %s%s | %s%s | %s%s | %s%s |\n", g.conns,
			ratio(qpsOf(lp), qpsOf(s1)), roundRange(lp, s1, mQPS), ratio(qpsOf(lp), qpsOf(nat)), roundRange(lp, nat, mQPS),
			ratio(p999(lp), p999(s1)), roundRange(lp, s1, mP999), ratio(p999(lp), p999(nat)), roundRange(lp, nat, mP999))
	}
	if ev := flog.between("t", time.Time{}, time.Now()); len(ev) > 0 {
		fmt.Fprintf(out, "\nTag t: %d segment fetches in the whole comparison, last segment %d IDs\n", len(ev), ev[len(ev)-1].size)
	}

	// The slow-store cells. Each round measures both tags under the same
	// load (32 connections), in alternating order, and logs the fetches
	// that returned inside the measured window.
	const slowConns = 32
	type slowStat struct {
		fetches, fetchesInWindow int
		sizes                    []int64
	}
	slowCells := map[string]*rcell{}
	slowStats := map[string]*slowStat{}
	steps := []string{"step 1000", "step 1,000,000"}
	ctx := context.Background()
	primeDB, err := sql.Open("mysql", proxyDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer primeDB.Close()
	if only := os.Getenv("LEAFPROXY_BENCH_TARGETS"); only != "" && !strings.Contains(only, "slow") {
		variants = nil
	}
	for r := 0; r < rounds; r++ {
		for vi, v := range variants {
			order := slices.Clone(steps)
			if r%2 == 1 {
				slices.Reverse(order)
			}
			for _, name := range order {
				tag := smallTag(vi, r)
				if name != "step 1000" {
					tag = hugeTag(vi, r)
				}
				q := "SELECT NEXTVAL('" + tag + "')"
				called := time.Now()
				if v.prime {
					var id int64
					if err := primeDB.QueryRowContext(ctx, q).Scan(&id); err != nil {
						t.Fatalf("prime %s: %v", tag, err)
					}
				}
				res, err := loadgen.Run(ctx, loadgen.Config{DSN: proxyDSN, Conns: slowConns, Duration: dur, Warmup: v.warm, Query: q})
				returned := time.Now()
				if err != nil {
					t.Fatalf("slow store, %s %s: %v", v.name, name, err)
				}
				k := v.name + "/" + name
				if slowCells[k] == nil {
					slowCells[k], slowStats[k] = new(rcell), new(slowStat)
				}
				slowCells[k].addRound(res)
				st := slowStats[k]
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
				t.Logf("round %d, slow store %s %s (%s): %.0f QPS, p99 %s, p999 %s, max %s, %d fetches (%d in the measured window), sizes %v",
					r+1, v.name, name, tag, res.QPS, res.Latency.P99, res.Latency.P999, res.Latency.Max, len(all), len(in), sizesOf(all))
			}
		}
	}
	if len(slowCells) == 0 {
		report(t, out.String())
		return
	}
	fmt.Fprintf(out, "\nSlow store: %s injected into every segment fetch, %d connections, SELECT NEXTVAL, %s per cell, %d round(s); steady = after %s warm-up, cold = first NEXTVAL then no warm-up\n\n", slowDelay, slowConns, dur, rounds, warm)
	fmt.Fprintln(out, "| variant | tag's table step | QPS | p50 | p99 | p999 | max | fetches (per round) | fetches in measured windows | segment sizes fetched (round 1) | errors |")
	fmt.Fprintln(out, "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|")
	for _, v := range variants {
		for _, name := range steps {
			x, st := slowCells[v.name+"/"+name], slowStats[v.name+"/"+name]
			if x == nil {
				continue
			}
			s := x.hist.Summary()
			fmt.Fprintf(out, "| %s | %s | %.0f | %s | %s | %s | %s | %.1f | %d | %s | %d |\n", v.name, name, x.qps(), us(s.P50), us(s.P99), us(s.P999), us(s.Max),
				float64(st.fetches)/float64(rounds), st.fetchesInWindow, sizesString(st.sizes[:len(st.sizes)/rounds]), x.errors)
			if x.firstErr != "" {
				t.Errorf("slow store, %s %s: %d errors, first: %s", v.name, name, x.errors, x.firstErr)
			}
		}
	}
	fmt.Fprintln(out, "\n| variant | step 1000 / step 1,000,000 p999 (target <= 1.2x) | p99 | max |")
	fmt.Fprintln(out, "|---|---:|---:|---:|")
	for _, v := range variants {
		small, huge := slowCells[v.name+"/step 1000"], slowCells[v.name+"/step 1,000,000"]
		if small == nil || huge == nil {
			continue
		}
		mP99 := func(r loadgen.Result) float64 { return float64(r.Hist.Percentile(99)) }
		mMax := func(r loadgen.Result) float64 { return float64(r.Hist.Max()) }
		fmt.Fprintf(out, "| %s | %s%s | %s%s | %s%s |\n", v.name,
			ratio(p999(small), p999(huge)), roundRange(small, huge, mP999),
			ratio(float64(small.hist.Percentile(99)), float64(huge.hist.Percentile(99))), roundRange(small, huge, mP99),
			ratio(float64(small.hist.Max()), float64(huge.hist.Max())), roundRange(small, huge, mMax))
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
