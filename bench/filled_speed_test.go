package bench

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/loadgen"
)

// TestFilledInsertSpeed (issue 29) measures the many-row filled INSERT
// `INSERT INTO t (v) VALUES ('y'),...` end to end, in one run on one
// MariaDB, four ways: (a) direct into an AUTO_INCREMENT table, (b) through
// haproxy in TCP mode into the AUTO_INCREMENT table, (c) through the
// leafproxy built from this tree into a rule table (key filled) and (d)
// through a leafproxy built from LEAFPROXY_BENCH_BEFORE (a commit, built
// with git archive + go build, or a binary; default 0b2009d, main before
// the row-offset plans) into the same rule table. Every proxy is a process
// of its own, so its CPU per statement is its threads' run time (schedstat)
// over the measured window divided by the statements.
//
// Statements of LEAFPROXY_BENCH_ROWS rows (default "1000 10000") run
// closed-loop at each client count of LEAFPROXY_BENCH_CLIENTS (default
// "1 8") for LEAFPROXY_BENCH_DURATION per cell; the 1,000,000-row statement
// (6 MB) runs once per target per round (LEAFPROXY_BENCH_HUGE=0 leaves it
// out). Targets run in ABBA order (the
// order reverses every round); tables are truncated and InnoDB's dirty pages
// written back before each cell. Medians over LEAFPROXY_BENCH_ROUNDS.
func TestFilledInsertSpeed(t *testing.T) {
	benchEnabled(t)
	dur := envDuration(t, "LEAFPROXY_BENCH_DURATION", 3*time.Second)
	warm := envDuration(t, "LEAFPROXY_BENCH_WARMUP", time.Second)
	rounds := envInt(t, "LEAFPROXY_BENCH_ROUNDS", 4)
	var clients []int
	for _, f := range strings.Fields(envString("LEAFPROXY_BENCH_CLIENTS", "1 8")) {
		var n int
		if _, err := fmt.Sscan(f, &n); err != nil || n < 1 {
			t.Fatalf("LEAFPROXY_BENCH_CLIENTS: %q", f)
		}
		clients = append(clients, n)
	}
	var sizes []int
	for _, f := range strings.Fields(envString("LEAFPROXY_BENCH_ROWS", "1000 10000")) {
		var n int
		if _, err := fmt.Sscan(f, &n); err != nil || n < 1 {
			t.Fatalf("LEAFPROXY_BENCH_ROWS: %q", f)
		}
		sizes = append(sizes, n)
	}
	huge := os.Getenv("LEAFPROXY_BENCH_HUGE") != "0"
	hapBin := haproxyBinary(t)

	srv := testdb.StartWith(t, "--innodb-log-file-size=1G", "--innodb-buffer-pool-size=1G")
	srv.Exec(t,
		"CREATE DATABASE bench",
		"CREATE TABLE bench.orders (id BIGINT PRIMARY KEY, v VARCHAR(32))",
		"CREATE TABLE bench.orders_ai (id BIGINT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(32))",
	)
	dir := t.TempDir()
	hapAddr := freeAddr(t)
	hap := startHaproxy(t, hapBin, dir, hapAddr, srv.Addr, filepath.Join(dir, "hap.sock"), filepath.Join(srv.Dir, "mysqld.sock"))
	newBin := buildLeafproxy(t, dir)
	oldBin, oldName := beforeBinary(t, dir, envString("LEAFPROXY_BENCH_BEFORE", "0b2009d"))
	newAddr, oldAddr := freeAddr(t), freeAddr(t)
	newPID := startLeafProcessEnv(t, newBin, dir, "new", "tcp", newAddr, srv.Addr, nil)
	oldPID := startLeafProcessEnv(t, oldBin, dir, "old", "tcp", oldAddr, srv.Addr, nil)

	direct := srv.DSN("bench")
	at := func(addr, user, pass string) string {
		c, err := mysql.ParseDSN(direct)
		if err != nil {
			t.Fatal(err)
		}
		c.Addr = addr
		if user != "" {
			c.User, c.Passwd = user, pass
		}
		return c.FormatDSN()
	}
	type ftarget struct {
		name, dsn, table string
		pid              int // the proxy's process, 0 for direct
	}
	targets := []ftarget{
		{"(a) direct AUTO_INCREMENT", direct, "orders_ai", 0},
		{"(b) haproxy AUTO_INCREMENT", at(hapAddr, "", ""), "orders_ai", hap},
		{"(c) leafproxy filled, this tree", at(newAddr, "app", "secret"), "orders", newPID},
		{"(d) leafproxy filled, " + oldName, at(oldAddr, "app", "secret"), "orders", oldPID},
	}
	db := srv.Open(t, "bench")
	for _, tg := range targets {
		h, err := sql.Open("mysql", tg.dsn)
		if err != nil {
			t.Fatal(err)
		}
		_, err = h.Exec("INSERT INTO " + tg.table + " (v) VALUES ('probe'),('probe')")
		h.Close()
		if err != nil {
			t.Fatalf("%s: %v", tg.name, err)
		}
	}
	truncate := func(table string) {
		if _, err := db.Exec("TRUNCATE TABLE " + table); err != nil {
			t.Fatal(err)
		}
	}
	stmt := func(table string, n int) string {
		return "INSERT INTO " + table + " (v) VALUES ('y')" + strings.Repeat(",('y')", n-1)
	}

	// One cell of one round.
	type fmeas struct {
		qps, p50, p99 float64 // p50, p99 in ms
		proxyCPU      float64 // ms per statement
		dbCPU         float64 // ms per statement
	}
	type cellKey struct {
		rows, conns int
		target      string
	}
	res := map[cellKey][]fmeas{}
	type shape struct{ rows, conns int }
	var shapes []shape
	for _, rows := range sizes {
		for _, c := range clients {
			shapes = append(shapes, shape{rows, c})
		}
	}
	out := new(strings.Builder)
	fmt.Fprintf(out, "\nfilled INSERT speed: haproxy %s (TCP), before = %s; %s per cell (+%s warm-up), %d round(s) in ABBA order, %d CPUs\n\n",
		haproxyVersion(hapBin), oldName, dur, warm, rounds, runtime.NumCPU())
	ctx := context.Background()
	var loads []string
	for round := 0; round < rounds; round++ {
		l := loadAvg()
		loads = append(loads, l)
		fmt.Fprintf(out, "round %d: load average %s\n", round+1, l)
		order := slices.Clone(targets)
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, sh := range shapes {
			for _, tg := range order {
				truncate(tg.table)
				quiesce(t, db)
				cfg := loadgen.Config{DSN: tg.dsn, Query: stmt(tg.table, sh.rows), Mode: loadgen.ModeExec,
					Conns: sh.conns, Duration: dur, Warmup: warm}
				type sample struct {
					cpu, db time.Duration
					at      time.Time
				}
				first := make(chan sample, 1)
				go func() {
					time.Sleep(warm) // the warm-up before the measured window, not a wait
					first <- sample{procCPUPrecise(tg.pid), procCPUPrecise(srv.PID()), time.Now()}
				}()
				r, err := loadgen.Run(ctx, cfg)
				end := sample{procCPUPrecise(tg.pid), procCPUPrecise(srv.PID()), time.Now()}
				if err != nil {
					t.Fatalf("%d rows, %d clients, %s: %v", sh.rows, sh.conns, tg.name, err)
				}
				if r.Errors > 0 {
					t.Errorf("%d rows, %d clients, %s: %d errors, first: %s", sh.rows, sh.conns, tg.name, r.Errors, r.FirstError)
				}
				s0 := <-first
				m := fmeas{qps: r.QPS, p50: float64(r.Hist.Percentile(50)) / 1e6, p99: float64(r.Hist.Percentile(99)) / 1e6}
				if win := end.at.Sub(s0.at); r.QPS > 0 && win > 0 {
					stmts := r.QPS * win.Seconds()
					if tg.pid != 0 {
						m.proxyCPU = float64(end.cpu-s0.cpu) / 1e6 / stmts
					}
					m.dbCPU = float64(end.db-s0.db) / 1e6 / stmts
				}
				k := cellKey{sh.rows, sh.conns, tg.name}
				res[k] = append(res[k], m)
				t.Logf("round %d, %d rows, %d clients, %s: %.1f stmt/s, p50 %.1fms, p99 %.1fms, proxy CPU %.2fms/stmt, MariaDB CPU %.2fms/stmt",
					round+1, sh.rows, sh.conns, tg.name, m.qps, m.p50, m.p99, m.proxyCPU, m.dbCPU)
			}
		}
		if !huge {
			continue
		}
		// The 6 MB statement, once per target: its wall time and the
		// proxy's CPU for it.
		text := map[string]string{}
		for _, tg := range order {
			if tg.pid == 0 {
				continue // direct: not a proxy comparison; MariaDB's own time shows in (b)
			}
			if text[tg.table] == "" {
				text[tg.table] = stmt(tg.table, 1_000_000)
			}
			truncate(tg.table)
			quiesce(t, db)
			h, err := sql.Open("mysql", tg.dsn)
			if err != nil {
				t.Fatal(err)
			}
			c0, d0, t0 := procCPUPrecise(tg.pid), procCPUPrecise(srv.PID()), time.Now()
			_, err = h.Exec(text[tg.table])
			el := time.Since(t0)
			c1, d1 := procCPUPrecise(tg.pid), procCPUPrecise(srv.PID())
			h.Close()
			if err != nil {
				t.Fatalf("1,000,000 rows, %s: %v", tg.name, err)
			}
			ms := float64(el) / 1e6
			m := fmeas{qps: 1e3 / ms, p50: ms, p99: ms, proxyCPU: float64(c1-c0) / 1e6, dbCPU: float64(d1-d0) / 1e6}
			k := cellKey{1_000_000, 1, tg.name}
			res[k] = append(res[k], m)
			t.Logf("round %d, 1,000,000 rows, %s: %.0fms, proxy CPU %.0fms, MariaDB CPU %.0fms", round+1, tg.name, ms, m.proxyCPU, m.dbCPU)
		}
	}
	loads = append(loads, loadAvg())
	fmt.Fprintf(out, "load average at the end: %s\n", loads[len(loads)-1])

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
	col := func(ms []fmeas, f func(fmeas) float64) float64 {
		var v []float64
		for _, m := range ms {
			v = append(v, f(m))
		}
		return med(v)
	}
	if huge {
		shapes = append(shapes, shape{1_000_000, 1})
	}
	fmt.Fprintf(out, "\n| rows x clients | target | stmt/s | p50 ms | p99 ms | proxy CPU ms/stmt | MariaDB CPU ms/stmt |\n|---|---|---:|---:|---:|---:|---:|\n")
	for _, sh := range shapes {
		for _, tg := range targets {
			ms := res[cellKey{sh.rows, sh.conns, tg.name}]
			if len(ms) == 0 {
				continue
			}
			cpu := "-"
			if tg.pid != 0 {
				cpu = fmt.Sprintf("%.2f", col(ms, func(m fmeas) float64 { return m.proxyCPU }))
			}
			fmt.Fprintf(out, "| %d x %d | %s | %.1f | %.1f | %.1f | %s | %.1f |\n", sh.rows, sh.conns, tg.name,
				col(ms, func(m fmeas) float64 { return m.qps }), col(ms, func(m fmeas) float64 { return m.p50 }),
				col(ms, func(m fmeas) float64 { return m.p99 }), cpu, col(ms, func(m fmeas) float64 { return m.dbCPU }))
		}
	}
	// Ratios of the same round, then their median.
	ratio := func(sh shape, a, b string, f func(fmeas) float64) string {
		x, y := res[cellKey{sh.rows, sh.conns, a}], res[cellKey{sh.rows, sh.conns, b}]
		var per []float64
		var txt []string
		for i := 0; i < len(x) && i < len(y); i++ {
			if f(y[i]) == 0 {
				continue
			}
			v := f(x[i]) / f(y[i])
			per = append(per, v)
			txt = append(txt, fmt.Sprintf("%.2f", v))
		}
		if len(per) == 0 {
			return "-"
		}
		return fmt.Sprintf("**%.2fx** (%s)", med(per), strings.Join(txt, ", "))
	}
	qps := func(m fmeas) float64 { return m.qps }
	cpu := func(m fmeas) float64 { return m.proxyCPU }
	a, b, c, d := targets[0].name, targets[1].name, targets[2].name, targets[3].name
	fmt.Fprintf(out, "\n| rows x clients | c/b stmt/s | c/d stmt/s | c/d proxy CPU | c/b proxy CPU | b/a stmt/s |\n|---|---|---|---|---|---|\n")
	for _, sh := range shapes {
		fmt.Fprintf(out, "| %d x %d | %s | %s | %s | %s | %s |\n", sh.rows, sh.conns,
			ratio(sh, c, b, qps), ratio(sh, c, d, qps), ratio(sh, c, d, cpu), ratio(sh, c, b, cpu), ratio(sh, b, a, qps))
	}
	fmt.Fprintf(out, "\nload averages (start of each round, end): %s\n", strings.Join(loads, "; "))
	report(t, out.String())
}

func envString(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// beforeBinary is the leafproxy to compare with: spec is a binary's path,
// or a commit of this repository, exported with git archive and built into
// dir. It returns the binary and a name for the report.
func beforeBinary(t *testing.T, dir, spec string) (bin, name string) {
	t.Helper()
	if st, err := os.Stat(spec); err == nil && !st.IsDir() {
		return spec, filepath.Base(spec)
	}
	src := filepath.Join(dir, "before-src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	// The test runs in bench/; the repository is its parent.
	archive := exec.Command("sh", "-c", "git -C .. archive \"$1\" | tar -x -C \"$2\"", "sh", spec, src)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", spec, err, out)
	}
	bin = filepath.Join(dir, "leafproxy-before")
	build := exec.Command("go", "build", "-o", bin, "./cmd/leafproxy")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build leafproxy at %s: %v\n%s", spec, err, out)
	}
	return bin, spec
}
