package bench

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
)

// TestInsertSelectBench copies LEAFPROXY_BENCH_ROWS rows (default
// 1,000,000) with one INSERT ... SELECT into a table whose key the proxy
// fills (segment and snowflake tags), against the same copy into an
// AUTO_INCREMENT table directly and through the proxy (a plain relay), on
// one MariaDB. Each round truncates the targets and runs the cases in a
// rotated order; the ratios are of the medians. The proxy's heap is
// sampled during its copies: the rows never pass through it.
//
//	LEAFPROXY_BENCH=1 go test -count=1 -v -run TestInsertSelectBench -timeout 60m ./bench
func TestInsertSelectBench(t *testing.T) {
	benchEnabled(t)
	rows := envInt(t, "LEAFPROXY_BENCH_ROWS", 1_000_000)
	rounds := envInt(t, "LEAFPROXY_BENCH_ROUNDS", 3)

	srv := testdb.StartWith(t, "--innodb-log-file-size=512M", "--innodb-buffer-pool-size=1G")
	srv.Exec(t,
		"CREATE DATABASE bench",
		"CREATE TABLE bench.src (id BIGINT PRIMARY KEY, a INT, b VARCHAR(40), c DATETIME)",
		fmt.Sprintf("INSERT INTO bench.src SELECT seq, seq %% 1000, CONCAT('name-', seq), '2026-01-01' + INTERVAL seq SECOND FROM bench.seq_1_to_%d", rows),
		"CREATE TABLE bench.orders (id BIGINT PRIMARY KEY, a INT, b VARCHAR(40), c DATETIME)",
		"CREATE TABLE bench.orders_sf (id BIGINT PRIMARY KEY, a INT, b VARCHAR(40), c DATETIME)",
		"CREATE TABLE bench.orders_ai (id BIGINT AUTO_INCREMENT PRIMARY KEY, a INT, b VARCHAR(40), c DATETIME)",
	)
	flog := &fetchLog{}
	proxyDSN := startLeafService(t, srv, "bench", flog, func(cfg *config.Config) {
		cfg.Sequences.Tags["order"] = config.Tag{Generator: "segment", Step: 1000}
		cfg.Sequences.Tags["order_sf"] = config.Tag{Generator: "snowflake"}
		cfg.Tables = []config.Table{
			{Table: "orders", Column: "id", Tag: "order"},
			{Table: "orders_sf", Column: "id", Tag: "order_sf"},
		}
	})
	direct := srv.Open(t, "bench")
	proxied, err := sql.Open("mysql", proxyDSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxied.Close() })
	copyTo := func(table string) string {
		return "INSERT INTO " + table + " (a, b, c) SELECT a, b, c FROM src"
	}
	type bcase struct {
		name  string
		table string
		proxy bool
	}
	cases := []bcase{
		{"direct AUTO_INCREMENT", "orders_ai", false},
		{"leafproxy segment", "orders", true},
		{"leafproxy snowflake", "orders_sf", true},
		{"relay AUTO_INCREMENT (through leafproxy, no rule)", "orders_ai", true},
	}
	times := map[string][]time.Duration{}
	var heapPeak uint64
	for r := range rounds {
		for i := range cases {
			c := cases[(i+r)%len(cases)]
			if _, err := direct.Exec("TRUNCATE TABLE " + c.table); err != nil {
				t.Fatal(err)
			}
			db := direct
			if c.proxy {
				db = proxied
			}
			stop := sampleHeap(&heapPeak)
			start := time.Now()
			res, err := db.ExecContext(context.Background(), copyTo(c.table))
			took := time.Since(start)
			stop()
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if n, _ := res.RowsAffected(); n != int64(rows) {
				t.Fatalf("%s: %d rows affected, want %d", c.name, n, rows)
			}
			var distinct int
			if err := direct.QueryRow("SELECT COUNT(DISTINCT id) FROM " + c.table).Scan(&distinct); err != nil || distinct != rows {
				t.Fatalf("%s: %d distinct keys for %d rows (%v)", c.name, distinct, rows, err)
			}
			times[c.name] = append(times[c.name], took)
		}
	}
	median := func(d []time.Duration) time.Duration {
		s := append([]time.Duration(nil), d...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return s[len(s)/2]
	}
	out := new(strings.Builder)
	fmt.Fprintf(out, "\nINSERT ... SELECT of %d rows, %d round(s), GOMAXPROCS %d, %d CPUs\n\n", rows, rounds, runtime.GOMAXPROCS(0), runtime.NumCPU())
	fmt.Fprintln(out, "| copy | median s | rows/s | vs direct AUTO_INCREMENT (goal >= 0.5) | per round s |")
	fmt.Fprintln(out, "|---|---:|---:|---:|---|")
	base := median(times["direct AUTO_INCREMENT"])
	for _, c := range cases {
		m := median(times[c.name])
		var per []string
		for _, d := range times[c.name] {
			per = append(per, fmt.Sprintf("%.2f", d.Seconds()))
		}
		fmt.Fprintf(out, "| %s | %.2f | %.0f | %.2fx | %s |\n", c.name, m.Seconds(), float64(rows)/m.Seconds(), base.Seconds()/m.Seconds(), strings.Join(per, ", "))
	}
	fmt.Fprintf(out, "\nleafproxy heap in use, peak during the copies: %.1f MB\n", float64(heapPeak)/(1<<20))
	t.Log(out.String())
	if p := os.Getenv("LEAFPROXY_BENCH_OUT"); p != "" {
		os.WriteFile(p, []byte(out.String()), 0o644)
	}
}

// sampleHeap records the process's peak heap in use until the returned
// function is called (the proxy runs in this process).
func sampleHeap(peak *uint64) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		var ms runtime.MemStats
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&ms)
			*peak = max(*peak, ms.HeapInuse)
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() { close(done); <-finished }
}
