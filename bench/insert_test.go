package bench

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/loadgen"
)

// insertRowsSQL is a 100-row (n-row) INSERT without the key column.
func insertRowsSQL(table string, n int) string {
	var sb strings.Builder
	sb.WriteString("INSERT INTO " + table + " (v) VALUES ")
	for i := range n {
		if i > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, "('row-%d')", i)
	}
	return sb.String()
}

// TestInsertBench measures INSERTs without a key at 32 connections, all on
// one MariaDB: leafproxy filling the key from a segment tag (text and
// prepared) and from a snowflake tag, against direct INSERTs into an
// AUTO_INCREMENT table and into a table whose key defaults to a native
// sequence. Single-row statements (QPS) and 100-row statements (rows/s).
// Every table is truncated before each cell.
func TestInsertBench(t *testing.T) {
	benchEnabled(t)
	dur := envDuration(t, "LEAFPROXY_BENCH_DURATION", 5*time.Second)
	warm := envDuration(t, "LEAFPROXY_BENCH_WARMUP", time.Second)
	rounds := envInt(t, "LEAFPROXY_BENCH_ROUNDS", 1)
	conns := envInt(t, "LEAFPROXY_BENCH_CONNS", 32)

	srv := testdb.Start(t)
	srv.Exec(t,
		"CREATE DATABASE bench",
		"CREATE SEQUENCE bench.oseq CACHE 1000",
		"CREATE TABLE bench.orders (id BIGINT PRIMARY KEY, v VARCHAR(32))",
		"CREATE TABLE bench.orders_sf (id BIGINT PRIMARY KEY, v VARCHAR(32))",
		"CREATE TABLE bench.orders_ai (id BIGINT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(32))",
		"CREATE TABLE bench.orders_seq (id BIGINT NOT NULL DEFAULT NEXTVAL(bench.oseq) PRIMARY KEY, v VARCHAR(32))",
	)
	direct := srv.DSN("bench")
	flog := &fetchLog{}
	proxyDSN := startLeafService(t, srv, "bench", flog, func(cfg *config.Config) {
		cfg.Sequences.Tags["order"] = config.Tag{Generator: "segment", Step: 1000}
		cfg.Sequences.Tags["order_sf"] = config.Tag{Generator: "snowflake"}
		cfg.Tables = []config.Table{
			{Table: "orders", Column: "id", Tag: "order"},
			{Table: "orders_sf", Column: "id", Tag: "order_sf"},
		}
	})
	// The bare TCP relay (bench/tcprelay.go) in front of the same MariaDB:
	// the floor any proxy hop pays on this machine, to tell the hop's cost
	// from the key filling's.
	relay, err := StartRelay(context.Background(), srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { relay.Close() })
	relayDSN := dsnAt(t, direct, relay.Addr(), "", "")
	db := srv.Open(t, "bench")
	truncate := func(table string) func(t *testing.T) {
		return func(t *testing.T) {
			if _, err := db.Exec("TRUNCATE TABLE " + table); err != nil {
				t.Fatal(err)
			}
		}
	}
	one := func(table string) string { return "INSERT INTO " + table + " (v) VALUES (?)" }
	seq := []loadgen.ArgSpec{{Kind: "seq", Lo: 1}}
	exec := loadgen.ModeExec
	const rows = 100

	groups := []benchGroup{
		{name: "1-row INSERT", conns: conns, cases: []benchCase{
			{name: "leafproxy segment", cfg: loadgen.Config{DSN: proxyDSN, Query: one("orders"), Args: seq, Mode: exec}, before: truncate("orders")},
			{name: "direct AUTO_INCREMENT", cfg: loadgen.Config{DSN: direct, Query: one("orders_ai"), Args: seq, Mode: exec}, before: truncate("orders_ai")},
			{name: "direct DEFAULT NEXTVAL(seq)", cfg: loadgen.Config{DSN: direct, Query: one("orders_seq"), Args: seq, Mode: exec}, before: truncate("orders_seq")},
			{name: "leafproxy snowflake", cfg: loadgen.Config{DSN: proxyDSN, Query: one("orders_sf"), Args: seq, Mode: exec}, before: truncate("orders_sf")},
			{name: "leafproxy segment (prepared)", cfg: loadgen.Config{DSN: proxyDSN, Query: one("orders"), Args: seq, Mode: exec, Prepare: true}, before: truncate("orders")},
			{name: "direct AUTO_INCREMENT (prepared)", cfg: loadgen.Config{DSN: direct, Query: one("orders_ai"), Args: seq, Mode: exec, Prepare: true}, before: truncate("orders_ai")},
			{name: "relay AUTO_INCREMENT", cfg: loadgen.Config{DSN: relayDSN, Query: one("orders_ai"), Args: seq, Mode: exec}, before: truncate("orders_ai")},
		}},
		{name: "100-row INSERT", conns: conns, cases: []benchCase{
			{name: "leafproxy segment", cfg: loadgen.Config{DSN: proxyDSN, Query: insertRowsSQL("orders", rows), Mode: exec}, before: truncate("orders")},
			{name: "direct AUTO_INCREMENT", cfg: loadgen.Config{DSN: direct, Query: insertRowsSQL("orders_ai", rows), Mode: exec}, before: truncate("orders_ai")},
			{name: "direct DEFAULT NEXTVAL(seq)", cfg: loadgen.Config{DSN: direct, Query: insertRowsSQL("orders_seq", rows), Mode: exec}, before: truncate("orders_seq")},
			{name: "leafproxy snowflake", cfg: loadgen.Config{DSN: proxyDSN, Query: insertRowsSQL("orders_sf", rows), Mode: exec}, before: truncate("orders_sf")},
			{name: "leafproxy segment (prepared)", cfg: loadgen.Config{DSN: proxyDSN, Query: insertRowsSQL("orders", rows), Mode: exec, Prepare: true}, before: truncate("orders")},
			{name: "relay AUTO_INCREMENT", cfg: loadgen.Config{DSN: relayDSN, Query: insertRowsSQL("orders_ai", rows), Mode: exec}, before: truncate("orders_ai")},
		}},
	}
	cells := runGroups(t, rounds, dur, warm, groups)

	out := new(strings.Builder)
	fmt.Fprintf(out, "\nINSERT without a key: %s per cell (+%s warm-up), %d round(s), GOMAXPROCS %d, %d CPUs\n\n", dur, warm, rounds, runtime.GOMAXPROCS(0), runtime.NumCPU())
	printGroups(t, out, groups, cells, true)

	get := func(g benchGroup, name string) *rcell { return cells[cellKey(g, name)] }
	rps := func(c *rcell) float64 {
		if c == nil {
			return 0
		}
		return c.rowsPerSec()
	}
	fmt.Fprintln(out, "\nRows/s ratios, merged over rounds (in parentheses: median and range of the per-round ratios).")
	fmt.Fprintln(out, "\n| workload | leafproxy segment / direct AUTO_INCREMENT (>= 0.9 for 1 row) | leafproxy segment / native sequence | leafproxy snowflake / AUTO_INCREMENT | relay / direct AUTO_INCREMENT (a bare hop) | leafproxy segment / relay AUTO_INCREMENT | prepared: leafproxy / AUTO_INCREMENT | leafproxy / AUTO_INCREMENT p999 |")
	fmt.Fprintln(out, "|---|---:|---:|---:|---:|---:|---:|---:|")
	r := func(a, b *rcell) string { return ratio(rps(a), rps(b)) + roundRange(a, b, mRows) }
	for _, g := range groups {
		lp, ai, sq, sf := get(g, "leafproxy segment"), get(g, "direct AUTO_INCREMENT"), get(g, "direct DEFAULT NEXTVAL(seq)"), get(g, "leafproxy snowflake")
		lpp, aip, rl := get(g, "leafproxy segment (prepared)"), get(g, "direct AUTO_INCREMENT (prepared)"), get(g, "relay AUTO_INCREMENT")
		fmt.Fprintf(out, "| %s | %s | %s | %s | %s | %s | %s | %s%s |\n", g.name, r(lp, ai), r(lp, sq), r(sf, ai), r(rl, ai), r(lp, rl), r(lpp, aip),
			ratio(p999(lp), p999(ai)), roundRange(lp, ai, mP999))
	}
	if ev := flog.between("order", time.Time{}, time.Now()); len(ev) > 0 {
		fmt.Fprintf(out, "\nTag order: %d segment fetches during the suite, last segment %d IDs\n", len(ev), ev[len(ev)-1].size)
	}
	report(t, out.String())
}
