package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/loadgen"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// benchEnabled gates the suites: they take minutes and want the machine to
// themselves, so the default test command skips them.
func benchEnabled(t *testing.T) {
	t.Helper()
	if os.Getenv("LEAFPROXY_BENCH") != "1" {
		t.Skip("benchmark suite: set LEAFPROXY_BENCH=1 (see docs/bench-proxy.md)")
	}
}

// envDuration reads a duration override such as LEAFPROXY_BENCH_DURATION=5s.
func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return d
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

// target is one way of reaching the same MariaDB.
type target struct {
	name string
	dsn  string
}

// endpoints starts MariaDB with the benchmark data, the plain relay in
// front of it and, when it is available, leafproxy; all in this process
// except MariaDB.
func endpoints(t *testing.T) (srv *testdb.Server, targets []target) {
	t.Helper()
	srv = testdb.Start(t)
	srv.Exec(t,
		"CREATE DATABASE bench",
		// sysbench's table shape, 100k rows.
		"CREATE TABLE bench.sbtest (id INT PRIMARY KEY, k INT NOT NULL, c CHAR(120) NOT NULL, pad CHAR(60) NOT NULL, KEY (k))",
		"INSERT INTO bench.sbtest SELECT seq, seq * 7 % 100000, REPEAT(CONCAT(seq, '-'), 10), REPEAT('p', 60) FROM bench.seq_1_to_100000",
	)
	ctx := context.Background()
	relay, err := StartRelay(ctx, srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { relay.Close() })
	targets = []target{
		{"direct", srv.DSN("bench")},
		{"relay", dsnAt(t, srv.DSN("bench"), relay.Addr(), "", "")},
	}
	if dsn, ok := startProxy(t, srv); ok {
		targets = append(targets, target{"leafproxy", dsn})
	} else {
		t.Log("leafproxy not available in this build: measuring direct and relay only")
	}
	// LEAFPROXY_BENCH_TARGETS=leafproxy narrows a run, e.g. for profiling
	// one target with go test -cpuprofile.
	if only := os.Getenv("LEAFPROXY_BENCH_TARGETS"); only != "" {
		keep := targets[:0]
		for _, tg := range targets {
			if slices.Contains(strings.Split(only, ","), tg.name) {
				keep = append(keep, tg)
			}
		}
		targets = keep
	}
	return srv, targets
}

// dsnAt points a testdb DSN at another address and, when user is not
// empty, another account.
func dsnAt(t *testing.T, dsn, addr, user, password string) string {
	t.Helper()
	c, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatalf("parse %q: %v", dsn, err)
	}
	c.Addr = addr
	if user != "" {
		c.User, c.Passwd = user, password
	}
	return c.FormatDSN()
}

type workload struct {
	name    string
	query   string
	args    []loadgen.ArgSpec
	prepare bool
}

// cell is one (workload, conns, target) measurement, accumulated over
// rounds by merging histograms and summing requests and time.
type cell struct {
	requests, errors uint64
	elapsed, cpu     time.Duration
	hist             loadgen.Histogram
	firstErr         string
}

func (c *cell) add(r loadgen.Result) {
	c.requests += r.Requests
	c.errors += r.Errors
	c.elapsed += r.Elapsed
	c.cpu += r.ProcessCPU
	c.hist.Merge(r.Hist)
	if c.firstErr == "" {
		c.firstErr = r.FirstError
	}
}

// cpuPerReq is this process's CPU per request: the client's alone for
// direct, client plus relay or leafproxy otherwise (both run in-process), so
// the difference to direct is the hop's CPU cost, a figure less exposed to
// the neighbours' noise than QPS.
func (c *cell) cpuPerReq() time.Duration {
	if c.requests == 0 {
		return 0
	}
	return c.cpu / time.Duration(c.requests)
}

func (c *cell) qps() float64 {
	if c.elapsed <= 0 {
		return 0
	}
	return float64(c.requests) / c.elapsed.Seconds()
}

// TestProxyOverhead measures pass-through SELECT 1 and point selects at 1
// and 32 connections against every target, interleaved so drift on the
// shared machine hits all targets alike, and prints a table with the
// leafproxy/relay ratios the issue sets targets for.
func TestProxyOverhead(t *testing.T) {
	benchEnabled(t)
	dur := envDuration(t, "LEAFPROXY_BENCH_DURATION", 5*time.Second)
	warm := envDuration(t, "LEAFPROXY_BENCH_WARMUP", time.Second)
	rounds := envInt(t, "LEAFPROXY_BENCH_ROUNDS", 1)
	_, targets := endpoints(t)

	workloads := []workload{
		{name: "SELECT 1", query: "SELECT 1"},
		{name: "point select", query: "SELECT c FROM sbtest WHERE id=?", args: []loadgen.ArgSpec{{Kind: "rand", Lo: 1, Hi: 100000}}},
		{name: "point select (prepared)", query: "SELECT c FROM sbtest WHERE id=?", args: []loadgen.ArgSpec{{Kind: "rand", Lo: 1, Hi: 100000}}, prepare: true},
	}
	connCounts := []int{1, 32}
	cells := map[string]*cell{}
	key := func(w, c int, tg string) string { return fmt.Sprint(w, "/", c, "/", tg) }

	ctx := context.Background()
	for round := 0; round < rounds; round++ {
		for wi, w := range workloads {
			for _, c := range connCounts {
				for i := range targets {
					// Alternate the order each round so no target always
					// runs right after another's warm-up.
					tg := targets[i]
					if round%2 == 1 {
						tg = targets[len(targets)-1-i]
					}
					res, err := loadgen.Run(ctx, loadgen.Config{
						DSN: tg.dsn, Conns: c, Duration: dur, Warmup: warm,
						Query: w.query, Args: w.args, Prepare: w.prepare,
					})
					if err != nil {
						t.Fatalf("%s, %d conns, %s: %v", w.name, c, tg.name, err)
					}
					k := key(wi, c, tg.name)
					if cells[k] == nil {
						cells[k] = new(cell)
					}
					cells[k].add(res)
					t.Logf("%s, %d conns, %s: %.0f QPS, p99 %s, %d errors", w.name, c, tg.name, res.QPS, res.Latency.P99, res.Errors)
				}
			}
		}
	}

	out := new(strings.Builder)
	fmt.Fprintf(out, "\nProxy overhead: %s per cell (+%s warm-up), %d round(s), GOMAXPROCS %d, %d CPUs\n\n", dur, warm, rounds, runtime.GOMAXPROCS(0), runtime.NumCPU())
	fmt.Fprintln(out, "| workload | conns | target | QPS | p50 | p99 | p999 | max | in-process CPU/req | errors |")
	fmt.Fprintln(out, "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
	for wi, w := range workloads {
		for _, c := range connCounts {
			for _, tg := range targets {
				x := cells[key(wi, c, tg.name)]
				s := x.hist.Summary()
				fmt.Fprintf(out, "| %s | %d | %s | %.0f | %s | %s | %s | %s | %.1fus | %d |\n", w.name, c, tg.name, x.qps(), us(s.P50), us(s.P99), us(s.P999), us(s.Max), float64(x.cpuPerReq())/1e3, x.errors)
				if x.firstErr != "" {
					t.Errorf("%s, %d conns, %s: %d errors, first: %s", w.name, c, tg.name, x.errors, x.firstErr)
				}
			}
		}
	}
	fmt.Fprintln(out, "\n| workload | conns | relay/direct QPS | leafproxy/relay QPS (>= 0.9 at 32) | leafproxy/relay p99 (<= 1.2) |")
	fmt.Fprintln(out, "|---|---:|---:|---:|---:|")
	for wi, w := range workloads {
		for _, c := range connCounts {
			d, r, p := cells[key(wi, c, "direct")], cells[key(wi, c, "relay")], cells[key(wi, c, "leafproxy")]
			if d == nil || r == nil {
				continue // narrowed by LEAFPROXY_BENCH_TARGETS
			}
			pq, pp := "n/a", "n/a"
			if p != nil {
				pq = fmt.Sprintf("%.2fx", p.qps()/r.qps())
				pp = fmt.Sprintf("%.2fx", float64(p.hist.Percentile(99))/float64(r.hist.Percentile(99)))
			}
			fmt.Fprintf(out, "| %s | %d | %.2fx | %s | %s |\n", w.name, c, r.qps()/d.qps(), pq, pp)
		}
	}
	report(t, out.String())
}

// TestProxyStreaming reads 1,000,000 rows in one result, direct and through
// leafproxy, with the same tool (one connection, back-to-back queries; the
// per-query latency is the time to stream the whole result). Memory is this
// process's Go heap sampled every 5 ms: it holds leafproxy and the client,
// so the direct run's peak is the client's share and the difference is the
// proxy's. The relay is not measured: it holds one 32 KB buffer per leg.
func TestProxyStreaming(t *testing.T) {
	benchEnabled(t)
	dur := envDuration(t, "LEAFPROXY_BENCH_STREAM_DURATION", 8*time.Second)
	_, targets := endpoints(t)
	const query = "SELECT seq, CONCAT('row-', seq, '-', REPEAT('x', 20)), seq * 2 FROM seq_1_to_1000000"

	out := new(strings.Builder)
	fmt.Fprintf(out, "\nStreaming 1,000,000 rows (%s per target, 1 connection)\n\n", dur)
	fmt.Fprintln(out, "| target | queries | median time | min time | max time | rows/s | in-process CPU/query | peak Go heap (process) | peak heap - idle | peak RSS (process) |")
	fmt.Fprintln(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	medians, mins := map[string]time.Duration{}, map[string]time.Duration{}
	for _, tg := range targets {
		if tg.name == "relay" {
			continue
		}
		runtime.GC()
		debug.FreeOSMemory()
		idle := heapBytes()
		rssReset := resetPeakRSS() == nil
		var peak uint64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(5 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					peak = max(peak, heapBytes())
				}
			}
		}()
		res, err := loadgen.Run(context.Background(), loadgen.Config{DSN: tg.dsn, Conns: 1, Duration: dur, Query: query})
		close(stop)
		wg.Wait()
		if err != nil {
			t.Fatalf("%s: %v", tg.name, err)
		}
		if res.Errors > 0 || res.Requests == 0 || res.Rows != res.Requests*1_000_000 {
			t.Fatalf("%s: %d queries, %d rows, %d errors (%s)", tg.name, res.Requests, res.Rows, res.Errors, res.FirstError)
		}
		l := res.Latency
		medians[tg.name], mins[tg.name] = l.P50, l.Min
		rss := "n/a"
		if hwm, err := peakRSS(); err == nil && rssReset {
			rss = mb(hwm) + " MB"
		}
		fmt.Fprintf(out, "| %s | %d | %s | %s | %s | %.0f | %s | %s MB | %s MB | %s |\n", tg.name, res.Requests,
			ms(l.P50), ms(l.Min), ms(l.Max), res.RowsPerSec, ms(res.ProcessCPU/time.Duration(res.Requests)),
			mb(peak), mb(peak-min(peak, idle)), rss)
	}
	if p, ok := medians["leafproxy"]; ok && medians["direct"] > 0 {
		// The minimum is the run least disturbed by neighbours on a shared
		// machine; both are printed.
		fmt.Fprintf(out, "\nleafproxy/direct time: median %.2fx, min %.2fx (target <= 1.3x)\n",
			float64(p)/float64(medians["direct"]), float64(mins["leafproxy"])/float64(mins["direct"]))
	}
	report(t, out.String())
}

// heapBytes is the bytes in live and not-yet-swept heap objects (what
// MemStats.HeapAlloc reports), read without stopping the world.
func heapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// resetPeakRSS makes the kernel restart this process's VmHWM from the
// current RSS (Linux clear_refs "5"), so each target gets its own peak.
func resetPeakRSS() error {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSS reads VmHWM, the peak resident set since the last reset.
func peakRSS() (uint64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmHWM in /proc/self/status")
}

// report prints a result table to stdout (so it shows without -v) and,
// when LEAFPROXY_BENCH_OUT names a file, appends it there.
func report(t *testing.T, s string) {
	t.Helper()
	fmt.Print(s)
	if path := os.Getenv("LEAFPROXY_BENCH_OUT"); path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := io.WriteString(f, s); err != nil {
			t.Fatal(err)
		}
	}
}

func us(d time.Duration) string { return fmt.Sprintf("%.0fus", float64(d)/1e3) }
func ms(d time.Duration) string { return fmt.Sprintf("%.0fms", float64(d)/1e6) }
func mb(b uint64) string        { return fmt.Sprintf("%.1f", float64(b)/(1<<20)) }

// TestServeEndpoints keeps the benchmark's MariaDB, relay and leafproxy up
// for LEAFPROXY_BENCH_SERVE (e.g. 10m) and prints their DSNs, for driving
// them by hand with cmd/leafbench.
func TestServeEndpoints(t *testing.T) {
	d := envDuration(t, "LEAFPROXY_BENCH_SERVE", 0)
	if d <= 0 {
		t.Skip("set LEAFPROXY_BENCH_SERVE=10m to keep the endpoints up")
	}
	_, targets := endpoints(t)
	for _, tg := range targets {
		// Each endpoint must answer before it is offered for manual runs.
		db, err := sql.Open("mysql", tg.dsn)
		if err != nil {
			t.Fatal(err)
		}
		var one int
		if err := db.QueryRow("SELECT 1").Scan(&one); err != nil || one != 1 {
			t.Fatalf("endpoint %s (%s) does not answer SELECT 1: %v", tg.name, tg.dsn, err)
		}
		db.Close()
		fmt.Printf("%-10s %s\n", tg.name, tg.dsn)
	}
	time.Sleep(d) // keep the endpoints up for the asked time: the point of this helper, not a wait
}
