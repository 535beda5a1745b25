package integration

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/internal/testkit/leafproc"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
)

// What one client can make the proxy spend on planning (issue 21): a
// statement the proxy must parse (a NEXTVAL in it, an INSERT into a rule
// table the lexer-only fast path does not read) went to the TiDB parser
// whatever its shape. SELECT NEXTVAL('order') + ((((...1...)))) with a
// million levels (2 MB) grew the proxy by 415 MB, the same nesting in a
// filled INSERT by 880 MB, 8 sessions at once to 4.2 GB. Now nesting
// beyond limits.max_plan_depth is refused before the parser runs, and
// parses share limits.plan_memory.

// planEnv is a proxy over a backend with app.orders (id BIGINT key, v)
// filled from tag "order", with limits.plan_memory = planMemory: the
// leafproxy binary in a child process (internal/testkit/leafproc), so the memory
// measured is the proxy's alone, not this process's clients or other tests.
func planEnv(t *testing.T, planMemory int64) (*testdb.Server, *leafproc.Proc, *sql.DB) {
	backend := testdb.Start(t)
	backend.Exec(t, "CREATE DATABASE IF NOT EXISTS app",
		"CREATE TABLE app.orders (id BIGINT PRIMARY KEY, v INT)")
	p := leafproc.Start(t, fmt.Sprintf(`backend:
  addr: %s
  user: root
users:
  - name: app
    password: secret
sequences:
  wait_timeout: 1s
  tags:
    order: {generator: segment}
tables:
  - {table: orders, column: id, tag: order}
limits:
  plan_memory: %dMiB
log:
  level: warn
`, backend.Addr, planMemory>>20))
	lf := &leaf{addr: p.Addr}
	db := lf.open(t, "app", nil)
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	return backend, p, db
}

// concurrently runs f on n sessions at once and returns what each got.
func concurrently(t *testing.T, db *sql.DB, n int, f func(c *sql.Conn) error) []error {
	t.Helper()
	conns := make([]*sql.Conn, n)
	for i := range conns {
		c, err := db.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if err := c.PingContext(context.Background()); err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(c)
		}()
	}
	wg.Wait()
	for _, c := range conns {
		c.Close()
	}
	return errs
}

// 8 sessions at once send the million-level statements of the issue, both
// forms: each gets 1473 naming limits.max_plan_depth, the process grows by
// tens of MiB (the statements themselves, in the clients' and the proxy's
// buffers), not GBs, and the sessions go on. So with 100,000 NEXTVAL calls
// in one statement (1.8 MB), charged 2 KiB a call (rewriter.CallCost): 1041
// naming limits.plan_memory, before the planner reads them (before: 204
// MiB of heap for the 8).
func TestDeepStatementsRefused(t *testing.T) {
	_, p, db := planEnv(t, 64<<20)
	nest := strings.Repeat("(", 1_000_000) + "1" + strings.Repeat(")", 1_000_000)
	calls := "SELECT NEXTVAL('order')" + strings.Repeat(", NEXTVAL('order')", 100_000)
	for _, tc := range []struct {
		name, sql  string
		code       uint16
		want, hint string
	}{
		{"NEXTVAL", "SELECT NEXTVAL('order') + " + nest, 1473, "the statement around NEXTVAL('order') nests parentheses more than 1000 deep", "raise limits.max_plan_depth"},
		{"filled INSERT", "INSERT INTO orders SET v = " + nest, 1473, "this INSERT into app.orders nests parentheses more than 1000 deep: to fill its key column id", "raise limits.max_plan_depth"},
		{"100,000 calls", calls, 1041, "this statement is too large for the proxy to plan", "raise limits.plan_memory"},
		{"100,000 calls and an expression", calls + " + 1", 1041, "this statement is too large for the proxy to plan", "raise limits.plan_memory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := p.Measure(t)
			errs := concurrently(t, db, 8, func(c *sql.Conn) error {
				_, err := c.ExecContext(context.Background(), tc.sql)
				return err
			})
			grew := m.Growth(t)
			t.Logf("8 sessions x %.1f MB: the proxy's peak RSS growth %.1f MiB over %.1f MiB", float64(len(tc.sql))/1e6, float64(grew)/(1<<20), float64(m.Base)/(1<<20))
			for i, err := range errs {
				if code, state := myErr(err); code != tc.code || state != "HY000" || !strings.Contains(err.Error(), tc.want) ||
					!strings.Contains(err.Error(), tc.hint) {
					t.Fatalf("session %d: %v, want %d saying %q and %q", i, err, tc.code, tc.want, tc.hint)
				}
			}
			if grew > 64<<20 {
				t.Errorf("the proxy's RSS grew %.1f MiB for 8 refused statements, bound 64 MiB", float64(grew)/(1<<20))
			}
		})
	}
	var id int64
	if err := db.QueryRow("SELECT NEXTVAL('order') + ((((1))))").Scan(&id); err != nil || id < 2 {
		t.Fatalf("a nested statement within the limit: %d, %v", id, err)
	}
}

// 8 sessions at once send a 4,000-row INSERT with NEXTVAL and an
// expression in each row (104,000 tokens, charged 53 MiB) with
// limits.plan_memory = 64 MiB: the parses take turns, every statement
// succeeds with distinct keys, and the heap grows by 54-56 MiB (one
// session alone: 26 MiB; without the budget, parsing at once: 200 MiB).
// An 8,000-row one can never fit and gets 1041 at once.
func TestPlanMemoryShared(t *testing.T) {
	const budget = 64 << 20
	backend, p, db := planEnv(t, budget)
	const rows = 4_000
	insert := func(n int) string {
		var sb strings.Builder
		sb.WriteString("INSERT INTO orders (id, v) VALUES ")
		for i := range n {
			if i > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, "(NEXTVAL('order'), %d+1+1+1+1+1+1+1+1+1)", i)
		}
		return sb.String()
	}
	stmt := insert(rows)
	m := p.Measure(t)
	start := time.Now()
	errs := concurrently(t, db, 8, func(c *sql.Conn) error {
		_, err := c.ExecContext(context.Background(), stmt)
		return err
	})
	grew := m.Growth(t)
	t.Logf("8 sessions x %d-row INSERT (%d KB) in %v: the proxy's peak RSS growth %.1f MiB over %.1f MiB",
		rows, len(stmt)>>10, time.Since(start).Round(time.Millisecond), float64(grew)/(1<<20), float64(m.Base)/(1<<20))
	for i, err := range errs {
		if err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
	}
	var n, distinct int
	if err := backend.Open(t, "app").QueryRow("SELECT COUNT(*), COUNT(DISTINCT id) FROM orders").Scan(&n, &distinct); err != nil {
		t.Fatal(err)
	}
	if n != 8*rows || distinct != n {
		t.Fatalf("%d rows, %d distinct keys; want %d of each", n, distinct, 8*rows)
	}
	if grew > budget*3/2 {
		t.Errorf("the proxy's RSS grew %.1f MiB, bound 1.5 x limits.plan_memory = %d MiB", float64(grew)/(1<<20), budget*3/2>>20)
	}
	_, err := db.Exec(insert(2 * rows))
	if code, _ := myErr(err); code != 1041 || !strings.Contains(err.Error(), "raise limits.plan_memory") {
		t.Fatalf("a statement over limits.plan_memory: %v, want 1041 naming the limit", err)
	}
}

// rssSampler reads the process's peak resident set (VmHWM, reset through
// /proc/self/clear_refs) against its resident set at the start.
type rssSampler struct {
	t    testing.TB
	base int64
}

func startRSS(t testing.TB) *rssSampler {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Logf("cannot reset the peak RSS: %v", err)
	}
	return &rssSampler{t: t, base: procStatus(t, "VmRSS")}
}

func (r *rssSampler) growth() int64 { return max(procStatus(r.t, "VmHWM")-r.base, 0) }

// procStatus is a /proc/self/status field in bytes.
func procStatus(t testing.TB, field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && k == field {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}
