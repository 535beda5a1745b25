package bench

// Rounds of benchmark groups: each case run side by side per round, the
// per-round cells and their ratios.
import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/loadgen"
)

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
// (comma-separated substrings of "group/case"; a trailing $ anchors the end)
// narrows the cases, e.g. for profiling one.
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
		return slices.ContainsFunc(only, func(s string) bool {
			if exact, ok := strings.CutSuffix(s, "$"); ok {
				return strings.HasSuffix(name, exact)
			}
			return strings.Contains(name, s)
		})
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
				if !keep(g.name + "/" + c.name) {
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
				cells[k].addRound(res)
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

// rcell is a cell that also counts rows (affected rows for INSERTs) and
// keeps each round's result, for per-round ratios: two targets measured
// back to back share the machine's mood, so the spread of their per-round
// ratios shows how much the neighbours moved a merged ratio.
type rcell struct {
	cell
	rows   uint64
	rounds []loadgen.Result
}

func (c *rcell) addRound(r loadgen.Result) {
	c.add(r)
	c.rows += r.Rows
	c.rounds = append(c.rounds, r)
}

// roundMetric picks a figure from one round.
type roundMetric func(loadgen.Result) float64

func mQPS(r loadgen.Result) float64  { return r.QPS }
func mRows(r loadgen.Result) float64 { return r.RowsPerSec }
func mP999(r loadgen.Result) float64 { return float64(r.Hist.Percentile(99.9)) }

// roundRange is " (median M, lo-hi)" over the per-round ratios a/b, or ""
// with one round. The median is the noise-resistant figure: one round hit
// by a neighbour's burst moves the merged ratio but not the median.
func roundRange(a, b *rcell, m roundMetric) string {
	if a == nil || b == nil || len(a.rounds) < 2 || len(a.rounds) != len(b.rounds) {
		return ""
	}
	rs := make([]float64, len(a.rounds))
	for i := range a.rounds {
		x, y := m(a.rounds[i]), m(b.rounds[i])
		if y == 0 {
			return ""
		}
		rs[i] = x / y
	}
	slices.Sort(rs)
	med := rs[len(rs)/2]
	if len(rs)%2 == 0 {
		med = (rs[len(rs)/2-1] + rs[len(rs)/2]) / 2
	}
	return fmt.Sprintf(" (median %.2f, %.2f-%.2f)", med, rs[0], rs[len(rs)-1])
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
