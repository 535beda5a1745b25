package bench

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/loadgen"
)

// TestNextvalBlockBench measures IDs per second handed out through one
// leafproxy with blocks of 1,000 (SELECT NEXTVAL('b', 1000), text and
// prepared with n bound at EXECUTE) from 32 connections, beside single
// NEXTVAL through the proxy and beside MariaDB's native sequence
// directly: SELECT NEXTVAL(s) on CREATE SEQUENCE s CACHE 1000, and, the
// closest MariaDB has to a block, a sequence INCREMENT BY 1000 whose every
// value a client would take as the start of a block of 1,000. Goal: blocks
// at least 100x single NEXTVAL in IDs per second.
func TestNextvalBlockBench(t *testing.T) {
	benchEnabled(t)
	dur := envDuration(t, "LEAFPROXY_BENCH_DURATION", 5*time.Second)
	warm := envDuration(t, "LEAFPROXY_BENCH_WARMUP", time.Second)
	rounds := envInt(t, "LEAFPROXY_BENCH_ROUNDS", 1)
	const block = 1000

	srv := testdb.Start(t)
	srv.Exec(t, "CREATE DATABASE bench", "CREATE SEQUENCE bench.s CACHE 1000",
		fmt.Sprintf("CREATE SEQUENCE bench.s_block INCREMENT BY %d CACHE 1000", block))
	direct := srv.DSN("bench")
	flog := &fetchLog{}
	proxyDSN := startLeafService(t, srv, "bench", flog, func(cfg *config.Config) {
		// One tag per case, each with the default step: the block tag's
		// step grows on its own (dynamic step) as blocks use it up.
		cfg.Sequences.Tags["b"] = config.Tag{Generator: "segment", Step: 1000}
		cfg.Sequences.Tags["bp"] = config.Tag{Generator: "segment", Step: 1000}
		cfg.Sequences.Tags["t"] = config.Tag{Generator: "segment", Step: 1000}
	})
	const (
		caseBlock     = "leafproxy NEXTVAL('b', 1000)"
		caseBlockPrep = "leafproxy NEXTVAL('bp', ?) prepared, ? = 1000"
		caseSingle    = "leafproxy NEXTVAL('t')"
		caseNative    = "direct native NEXTVAL(s), CACHE 1000"
		caseNativeInc = "direct native NEXTVAL(s_block), INCREMENT BY 1000"
	)
	idsPer := map[string]float64{caseBlock: block, caseBlockPrep: block, caseSingle: 1, caseNative: 1, caseNativeInc: block}
	groups := []benchGroup{{name: "ids", conns: 32, cases: []benchCase{
		{name: caseBlock, cfg: loadgen.Config{DSN: proxyDSN, Query: fmt.Sprintf("SELECT NEXTVAL('b', %d)", block)}},
		{name: caseBlockPrep, cfg: loadgen.Config{DSN: proxyDSN, Query: "SELECT NEXTVAL('bp', ?)", Prepare: true,
			Args: []loadgen.ArgSpec{{Kind: "const", Value: fmt.Sprint(block)}}}},
		{name: caseSingle, cfg: loadgen.Config{DSN: proxyDSN, Query: "SELECT NEXTVAL('t')"}},
		{name: caseNative, cfg: loadgen.Config{DSN: direct, Query: "SELECT NEXTVAL(s)"}},
		{name: caseNativeInc, cfg: loadgen.Config{DSN: direct, Query: "SELECT NEXTVAL(s_block)"}},
	}}}
	cells := runGroups(t, rounds, dur, warm, groups)

	out := new(strings.Builder)
	fmt.Fprintf(out, "\nNEXTVAL blocks: %s per cell (+%s warm-up), %d round(s), 32 connections, GOMAXPROCS %d, %d CPUs\n\n", dur, warm, rounds, runtime.GOMAXPROCS(0), runtime.NumCPU())
	fmt.Fprintln(out, "| target | requests/s | IDs per request | IDs/s | p50 | p99 | p999 | errors |")
	fmt.Fprintln(out, "|---|---:|---:|---:|---:|---:|---:|---:|")
	g := groups[0]
	idsPerSec := map[string]float64{}
	for _, c := range g.cases {
		x := cells[cellKey(g, c.name)]
		if x == nil {
			continue
		}
		s := x.hist.Summary()
		idsPerSec[c.name] = x.qps() * idsPer[c.name]
		fmt.Fprintf(out, "| %s | %.0f | %.0f | %.0f | %s | %s | %s | %d |\n", c.name, x.qps(), idsPer[c.name], idsPerSec[c.name],
			us(s.P50), us(s.P99), us(s.P999), x.errors)
		if x.firstErr != "" {
			t.Errorf("%s: %d errors, first: %s", c.name, x.errors, x.firstErr)
		}
	}
	ids := func(name string) roundMetric {
		return func(r loadgen.Result) float64 { return r.QPS * idsPer[name] }
	}
	perRound := func(a, b string) string {
		ca, cb := cells[cellKey(g, a)], cells[cellKey(g, b)]
		if ca == nil || cb == nil || len(ca.rounds) < 2 || len(ca.rounds) != len(cb.rounds) {
			return ""
		}
		rs := make([]string, len(ca.rounds))
		for i := range ca.rounds {
			rs[i] = fmt.Sprintf("%.3g", ids(a)(ca.rounds[i])/ids(b)(cb.rounds[i]))
		}
		return " (per round: " + strings.Join(rs, ", ") + ")"
	}
	fmt.Fprintln(out, "\n| IDs/s ratio | merged |")
	fmt.Fprintln(out, "|---|---:|")
	for _, r := range [][2]string{{caseBlock, caseSingle}, {caseBlockPrep, caseSingle}, {caseBlock, caseNative}, {caseBlock, caseNativeInc}, {caseSingle, caseNative}} {
		fmt.Fprintf(out, "| %s / %s | %s%s |\n", r[0], r[1], ratio(idsPerSec[r[0]], idsPerSec[r[1]]), perRound(r[0], r[1]))
	}
	for _, tag := range []string{"b", "bp"} {
		ev := flog.between(tag, time.Time{}, time.Now())
		own := 0
		for _, e := range ev {
			if e.size == block {
				own++
			}
		}
		last := int64(0)
		if len(ev) > 0 {
			last = ev[len(ev)-1].size
		}
		fmt.Fprintf(out, "\nTag %s: %d store fetches in the whole run (%d of exactly %d IDs: blocks fetched on their own or the first segment), last segment %d IDs\n",
			tag, len(ev), own, block, last)
	}
	if r := idsPerSec[caseBlock] / idsPerSec[caseSingle]; idsPerSec[caseSingle] > 0 && r < 100 {
		t.Logf("goal missed: blocks of %d give %.0fx single NEXTVAL's IDs/s, goal >= 100x", block, r)
	}
	report(t, out.String())
}
