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
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/loadgen"
)

// TestMetricsCost (issue 21, item 3) measures what the statement-path
// metrics cost: leafproxy processes built from this tree on one MariaDB,
// one with metrics.listen set (every session counts its commands, errors
// and relayed commands' latency, the engine its statements, NEXTVAL
// latency and IDs per tag) and two without (nothing is counted). While
// the metrics process is measured, /metrics is scraped every
// LEAFPROXY_BENCH_SCRAPE (default 5s, more often than Prometheus' usual
// 15-60 s), so the scrapes' cost is in its figures; what one scrape costs
// the proxy (adding up the sessions, the Go and process collectors, a
// health probe: two fresh logins) is measured first, on the idle
// processes. Workloads: pass-through SELECT 1
// (the budget: at most 2% of its throughput), SELECT NEXTVAL('t') and a
// filled single-row INSERT, LEAFPROXY_BENCH_CONNS connections per process
// (default 32).
//
// On a shared, noisy machine a proxy measured after another meets other
// neighbours (rounds of the alternating mode swing by +-40%), so by
// default the processes are driven at the same time, each by its own
// connections, and compared within the same seconds: "on/off" is the
// metrics process against one without, "off/off" the two without against
// each other, the instrument's own spread. LEAFPROXY_BENCH_METRICS_MODE=
// alternate measures them one after the other instead (order alternating
// every round). Reported: each round's ratios of QPS and of the proxy
// process's CPU per request, and their medians.
func TestMetricsCost(t *testing.T) {
	benchEnabled(t)
	dur := envDuration(t, "LEAFPROXY_BENCH_DURATION", 4*time.Second)
	warm := envDuration(t, "LEAFPROXY_BENCH_WARMUP", time.Second)
	rounds := envInt(t, "LEAFPROXY_BENCH_ROUNDS", 10)
	conns := envInt(t, "LEAFPROXY_BENCH_CONNS", 32)
	scrapeEvery := envDuration(t, "LEAFPROXY_BENCH_SCRAPE", 5*time.Second)
	concurrent := os.Getenv("LEAFPROXY_BENCH_METRICS_MODE") != "alternate"

	srv := testdb.StartWith(t, "--innodb-log-file-size=512M", "--innodb-buffer-pool-size=256M")
	srv.Exec(t, "CREATE DATABASE bench", "CREATE TABLE bench.orders (id BIGINT PRIMARY KEY, v VARCHAR(32))")
	db := srv.Open(t, "bench")
	dir := t.TempDir()
	bin := buildLeafproxy(t, dir)
	metricsAddr := freeAddr(t)
	type target struct {
		name   string
		addr   string
		pid    int
		scrape bool
	}
	targets := []target{{name: "metrics on", scrape: true}, {name: "metrics off"}}
	if concurrent {
		targets = append(targets, target{name: "metrics off (2)"})
	}
	for i := range targets {
		targets[i].addr = freeAddr(t)
		m := ""
		if targets[i].scrape {
			m = metricsAddr
		}
		targets[i].pid = startLeafMetrics(t, bin, dir, strings.NewReplacer(" ", "-", "(", "", ")", "").Replace(targets[i].name), targets[i].addr, srv.Addr, m)
	}
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
	type meas struct{ qps, cpu, p999 float64 } // cpu: the proxy's, us per request
	res := map[string][]meas{}
	var scrapeMu sync.Mutex
	var scrapes, scrapeErrs int
	var scrapeTime time.Duration

	// measure drives the targets (at once, or one after the other) with
	// w and returns each one's figures.
	measure := func(w wl, tgs []target) []meas {
		type sample struct {
			cpu time.Duration
			at  time.Time
		}
		out := make([]meas, len(tgs))
		run := func(i int) {
			tg := tgs[i]
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
							scrapeMu.Lock()
							scrapeTime += time.Since(t0)
							scrapes++
							if err != nil {
								scrapeErrs++
							}
							scrapeMu.Unlock()
						}
					}
				})
			}
			first := make(chan sample, 1)
			go func() {
				time.Sleep(warm) // the warm-up before the measured window, not a wait
				first <- sample{procCPUPrecise(tg.pid), time.Now()}
			}()
			r, err := loadgen.Run(context.Background(), cfg)
			end := sample{procCPUPrecise(tg.pid), time.Now()}
			close(stop)
			wg.Wait()
			if err != nil {
				t.Errorf("%s, %s: %v", w.name, tg.name, err)
				return
			}
			if r.Errors > 0 {
				t.Errorf("%s, %s: %d errors, first: %s", w.name, tg.name, r.Errors, r.FirstError)
			}
			s0 := <-first
			m := meas{qps: r.QPS, p999: float64(r.Hist.Percentile(99.9)) / 1e3}
			if r.QPS > 0 {
				m.cpu = float64(end.cpu-s0.cpu) / float64(end.at.Sub(s0.at)) / r.QPS * 1e6
			}
			out[i] = m
		}
		if !concurrent {
			for i := range tgs {
				run(i)
			}
			return out
		}
		var wg sync.WaitGroup
		for i := range tgs {
			wg.Go(func() { run(i) })
		}
		wg.Wait()
		return out
	}

	// One scrape's CPU in the proxy: 10 scrapes, each with a fresh health
	// probe (cached for a second), against an idle process's CPU over the
	// same time.
	const nScrapes = 10
	time.Sleep(1100 * time.Millisecond) // past the health probe's 1 s cache, so each scrape makes a fresh one
	on0, off0 := procCPUPrecise(targets[0].pid), procCPUPrecise(targets[1].pid)
	for range nScrapes {
		if err := getMetrics(metricsAddr); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1100 * time.Millisecond)
	}
	perScrape := ((procCPUPrecise(targets[0].pid) - on0) - (procCPUPrecise(targets[1].pid) - off0)) / nScrapes

	out := new(strings.Builder)
	mode := "one after the other, order alternating every round"
	if concurrent {
		mode = "all at once, each with its own connections"
	}
	fmt.Fprintf(out, "\nStatement-path metrics on vs off: %d connections per process, %s per cell (+%s warm-up), %d rounds, %s; /metrics scraped every %s; %d CPUs, load %s\n\n",
		conns, dur, warm, rounds, mode, scrapeEvery, runtime.NumCPU(), loadAvg())
	fmt.Fprintf(out, "One scrape of /metrics costs the idle proxy %.2f ms of CPU (mean of %d, each with a fresh health probe; the idle process without metrics over the same time subtracted)\n\n",
		float64(perScrape)/1e6, nScrapes)
	for round := range rounds {
		for _, w := range workloads {
			tgs := slices.Clone(targets)
			if round%2 == 1 {
				slices.Reverse(tgs)
			}
			if w.before != nil {
				w.before()
			}
			ms := measure(w, tgs)
			for i, tg := range tgs {
				k := w.name + "/" + tg.name
				res[k] = append(res[k], ms[i])
				t.Logf("round %d, %s, %s: %.0f QPS, proxy CPU %.1fus/req, p999 %.0fus", round+1, w.name, tg.name, ms[i].qps, ms[i].cpu, ms[i].p999)
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
	pairs := [][2]string{{"metrics on", "metrics off"}}
	if concurrent {
		pairs = append(pairs, [2]string{"metrics off (2)", "metrics off"})
	}
	fmt.Fprintf(out, "\n| ratio (same round) | median | per round |\n|---|---:|---|\n")
	for _, w := range workloads {
		for _, pr := range pairs {
			for _, which := range []struct {
				label string
				f     func(meas) float64
			}{{"QPS", func(m meas) float64 { return m.qps }}, {"proxy CPU per request", func(m meas) float64 { return m.cpu }}} {
				a, b := res[w.name+"/"+pr[0]], res[w.name+"/"+pr[1]]
				var per []float64
				var txt []string
				for r := range min(len(a), len(b)) {
					if v := which.f(b[r]); v > 0 {
						per = append(per, which.f(a[r])/v)
						txt = append(txt, fmt.Sprintf("%.3f", which.f(a[r])/v))
					}
				}
				fmt.Fprintf(out, "| %s: %s / %s %s | **%.3fx** | %s |\n", w.name, pr[0], pr[1], which.label, med(per), strings.Join(txt, ", "))
			}
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

// procCPUPrecise is a process's CPU time to the nanosecond: the sum of its
// threads' run time in /proc/<pid>/task/*/schedstat (procCPU's utime +
// stime count 10 ms ticks, coarse for a few seconds at a fraction of a
// CPU). Falls back to procCPU when schedstat is not there.
func procCPUPrecise(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return procCPU(pid)
	}
	var total time.Duration
	for _, tk := range tasks {
		b, err := os.ReadFile(dir + "/" + tk.Name() + "/schedstat")
		if err != nil {
			continue // the thread ended meanwhile
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return procCPU(pid)
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return procCPU(pid)
		}
		total += time.Duration(ns)
	}
	return total
}
