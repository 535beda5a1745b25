package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/internal/testdb"
	"github.com/leafproxy/leafproxy/loadgen"
)

// TestMetricsCost (issue 21, item 3) measures what the statement-path
// metrics cost: two leafproxy processes built from this tree, one with
// metrics.listen set (every session counts its commands, errors, relayed
// commands' latency, the engine its statements, NEXTVAL latency and IDs
// per tag) and one without (nothing is counted), side by side on one
// MariaDB, each case run on both in an order that alternates every round.
// Workloads at 32 connections: pass-through SELECT 1 (the budget: at most
// 2% of its throughput), SELECT NEXTVAL('t') and a filled single-row
// INSERT. While the metrics process is measured, /metrics is scraped every
// LEAFPROXY_BENCH_SCRAPE (default 1s, far more often than Prometheus'
// usual 15-60 s), so the scrapes' cost (adding up every session, a health
// probe per second) is in its figures. Reported: each round's on/off
// ratio of QPS and of the proxy process's CPU per request, and their
// medians.
func TestMetricsCost(t *testing.T) {
	benchEnabled(t)
	dur := envDuration(t, "LEAFPROXY_BENCH_DURATION", 4*time.Second)
	warm := envDuration(t, "LEAFPROXY_BENCH_WARMUP", time.Second)
	rounds := envInt(t, "LEAFPROXY_BENCH_ROUNDS", 8)
	conns := envInt(t, "LEAFPROXY_BENCH_CONNS", 32)
	scrapeEvery := envDuration(t, "LEAFPROXY_BENCH_SCRAPE", time.Second)

	srv := testdb.StartWith(t, "--innodb-log-file-size=512M", "--innodb-buffer-pool-size=256M")
	srv.Exec(t, "CREATE DATABASE bench", "CREATE TABLE bench.orders (id BIGINT PRIMARY KEY, v VARCHAR(32))")
	db := srv.Open(t, "bench")
	dir := t.TempDir()
	bin := buildLeafproxy(t, dir)
	onAddr, offAddr, metricsAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	onPID := startLeafMetrics(t, bin, dir, "metrics-on", onAddr, srv.Addr, metricsAddr)
	offPID := startLeafMetrics(t, bin, dir, "metrics-off", offAddr, srv.Addr, "")
	dsn := func(addr string) string {
		c, err := mysql.ParseDSN(srv.DSN("bench"))
		if err != nil {
			t.Fatal(err)
		}
		c.Addr, c.User, c.Passwd = addr, "app", "secret"
		return c.FormatDSN()
	}
	truncate := func() {
		if _, err := db.Exec("TRUNCATE TABLE orders"); err != nil {
			t.Fatal(err)
		}
	}
	type wl struct {
		name   string
		cfg    loadgen.Config
		before func()
	}
	workloads := []wl{
		{name: "SELECT 1", cfg: loadgen.Config{Query: "SELECT 1", Mode: loadgen.ModeQuery}},
		{name: "NEXTVAL('t')", cfg: loadgen.Config{Query: "SELECT NEXTVAL('t')", Mode: loadgen.ModeQuery}},
		{name: "filled INSERT", cfg: loadgen.Config{Query: "INSERT INTO orders (v) VALUES (?)", Args: []loadgen.ArgSpec{{Kind: "seq", Lo: 1}}, Mode: loadgen.ModeExec}, before: truncate},
	}
	if v := os.Getenv("LEAFPROXY_BENCH_TARGETS"); v != "" {
		workloads = slices.DeleteFunc(workloads, func(w wl) bool { return !strings.Contains(v, w.name) })
	}
	type target struct {
		name   string
		addr   string
		pid    int
		scrape bool
	}
	targets := []target{{"metrics on", onAddr, onPID, true}, {"metrics off", offAddr, offPID, false}}
	type meas struct{ qps, cpu, p999 float64 } // cpu: the proxy's, us per request
	res := map[string][]meas{}
	var scrapes, scrapeErrs int
	var scrapeTime time.Duration

	out := new(strings.Builder)
	fmt.Fprintf(out, "\nStatement-path metrics on vs off: %d connections, %s per cell (+%s warm-up), %d rounds, /metrics scraped every %s while on, %d CPUs, load %s\n\n",
		conns, dur, warm, rounds, scrapeEvery, runtime.NumCPU(), loadAvg())
	ctx := context.Background()
	for round := range rounds {
		for _, w := range workloads {
			for i := range targets {
				tg := targets[i]
				if round%2 == 1 {
					tg = targets[len(targets)-1-i]
				}
				if w.before != nil {
					w.before()
				}
				cfg := w.cfg
				cfg.DSN, cfg.Conns, cfg.Duration, cfg.Warmup = dsn(tg.addr), conns, dur, warm
				stop := make(chan struct{})
				var wg sync.WaitGroup
				if tg.scrape {
					wg.Go(func() {
						tick := time.NewTicker(scrapeEvery)
						defer tick.Stop()
						for {
							select {
							case <-stop:
								return
							case <-tick.C:
								t0 := time.Now()
								err := getMetrics(metricsAddr)
								scrapeTime += time.Since(t0)
								scrapes++
								if err != nil {
									scrapeErrs++
								}
							}
						}
					})
				}
				type sample struct {
					cpu time.Duration
					at  time.Time
				}
				first := make(chan sample, 1)
				go func() {
					time.Sleep(warm)
					first <- sample{procCPU(tg.pid), time.Now()}
				}()
				r, err := loadgen.Run(ctx, cfg)
				end := sample{procCPU(tg.pid), time.Now()}
				close(stop)
				wg.Wait()
				if err != nil {
					t.Fatalf("%s, %s: %v", w.name, tg.name, err)
				}
				if r.Errors > 0 {
					t.Errorf("%s, %s: %d errors, first: %s", w.name, tg.name, r.Errors, r.FirstError)
				}
				s0 := <-first
				m := meas{qps: r.QPS, p999: float64(r.Hist.Percentile(99.9)) / 1e3}
				if r.QPS > 0 {
					m.cpu = float64(end.cpu-s0.cpu) / float64(end.at.Sub(s0.at)) / r.QPS * 1e6
				}
				k := w.name + "/" + tg.name
				res[k] = append(res[k], m)
				t.Logf("round %d, %s, %s: %.0f QPS, proxy CPU %.1fus/req, p999 %.0fus", round+1, w.name, tg.name, m.qps, m.cpu, m.p999)
			}
		}
	}
	med := func(v []float64) float64 {
		v = slices.Clone(v)
		slices.Sort(v)
		if len(v) == 0 {
			return 0
		}
		if len(v)%2 == 0 {
			return (v[len(v)/2-1] + v[len(v)/2]) / 2
		}
		return v[len(v)/2]
	}
	fmt.Fprintf(out, "| workload | target | QPS (median) | proxy CPU/req (median) | p999 (median) |\n|---|---|---:|---:|---:|\n")
	for _, w := range workloads {
		for _, tg := range targets {
			var q, c, p []float64
			for _, m := range res[w.name+"/"+tg.name] {
				q, c, p = append(q, m.qps), append(c, m.cpu), append(p, m.p999)
			}
			fmt.Fprintf(out, "| %s | %s | %.0f | %.2fus | %.0fus |\n", w.name, tg.name, med(q), med(c), med(p))
		}
	}
	fmt.Fprintf(out, "\n| ratio on/off (same round) | median | per round |\n|---|---:|---|\n")
	for _, w := range workloads {
		for _, which := range []struct {
			label string
			f     func(meas) float64
		}{{"QPS", func(m meas) float64 { return m.qps }}, {"proxy CPU per request", func(m meas) float64 { return m.cpu }}} {
			on, off := res[w.name+"/metrics on"], res[w.name+"/metrics off"]
			var per []float64
			var txt []string
			for r := range min(len(on), len(off)) {
				if v := which.f(off[r]); v > 0 {
					per = append(per, which.f(on[r])/v)
					txt = append(txt, fmt.Sprintf("%.3f", which.f(on[r])/v))
				}
			}
			fmt.Fprintf(out, "| %s: %s | **%.3fx** | %s |\n", w.name, which.label, med(per), strings.Join(txt, ", "))
		}
	}
	if scrapes > 0 {
		fmt.Fprintf(out, "\n%d scrapes of /metrics during the measured cells, %d failed, %.1f ms each on average (client side)\n",
			scrapes, scrapeErrs, float64(scrapeTime.Microseconds())/1e3/float64(scrapes))
	}
	report(t, out.String())
}

// startLeafMetrics runs `leafproxy serve` on listen in front of backend
// (tag t, bench.orders filled from tag order), with metrics.listen at
// metrics ("" none: the statement path counts nothing); it returns the
// process id.
func startLeafMetrics(t *testing.T, bin, dir, name, listen, backend, metrics string) int {
	t.Helper()
	m := ""
	listens := []string{"tcp", listen}
	if metrics != "" {
		m = fmt.Sprintf("metrics: {listen: %q}\n", metrics)
		listens = append(listens, "tcp", metrics)
	}
	cfg := fmt.Sprintf(`listen: %q
backend: {addr: %q, user: root, password: ""}
users: [{name: app, password: secret}]
sequences:
  wait_timeout: 5s
  tags: {t: {generator: segment}, order: {generator: segment}}
tables: [{table: bench.orders, column: id, tag: order}]
shutdown: {grace: 1s}
log: {level: warn}
%s`, listen, backend, m)
	path := filepath.Join(dir, "leafproxy-"+name+".yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return startProc(t, "leafproxy-"+name, strings.Fields(os.Getenv("LEAFPROXY_BENCH_PROXY_ENV")), listens, bin, "serve", "--config", path)
}

func getMetrics(addr string) error {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %s", resp.Status)
	}
	return err
}
