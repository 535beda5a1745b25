package rewriter

import (
	"errors"
	"github.com/leafproxy/leafproxy/internal/sqltext"
	"runtime"
	"strings"
	"testing"
)

// Tests of what planning with the parser may cost (parse.go): the nesting
// limit, the memory budget, and what the parser pool keeps.

func nested(depth int) string {
	return strings.Repeat("(", depth) + "1" + strings.Repeat(")", depth)
}

// budgetLog is a Budget that records what it is asked for.
type budgetLog struct {
	acquired, released int64
	calls              int
	refuse             error
	busy               bool // TryAcquire finds nothing free
}

func (b *budgetLog) Acquire(n int64) error {
	b.calls++
	if b.refuse != nil {
		return b.refuse
	}
	b.acquired += n
	return nil
}

func (b *budgetLog) TryAcquire(n int64) bool {
	b.calls++
	if b.refuse != nil || b.busy {
		return false
	}
	b.acquired += n
	return true
}

func (b *budgetLog) Release(n int64) { b.released += n }

func TestNestingLimit(t *testing.T) {
	env := testEnv(t, Mode{})
	env.Limits.MaxDepth = 5
	for _, tc := range []struct {
		name, sql string
		want      string // "" plans; else the error mentions it
	}{
		{"NEXTVAL at the limit", "SELECT NEXTVAL('order') + " + nested(5), ""},
		{"NEXTVAL over the limit", "SELECT NEXTVAL('order') + " + nested(6), "the statement around NEXTVAL('order') nests parentheses more than 5 deep"},
		{"a million levels", "SELECT NEXTVAL('order') + " + nested(1_000_000), "limits.max_plan_depth = 5"},
		{"filled INSERT on the parser path", "INSERT INTO orders VALUES (NULL, " + nested(6) + ", 'x')", "this INSERT into shop.orders nests parentheses more than 5 deep: to fill its key column id"},
		{"INSERT with NEXTVAL", "INSERT INTO audit (id, v) VALUES (NEXTVAL(order), " + nested(6) + ")", "around NEXTVAL(order)"},
		{"side by side", "SELECT NEXTVAL('order') + " + strings.Repeat(nested(5)+"+", 100) + "1", ""},
		{"quoted and commented parentheses", "SELECT NEXTVAL('order') + " + nested(2) + ", '((((((((' /* (((((((( */ -- ((((((((\n", ""},
		// The fast path reads rows with the lexer alone: no parser, no limit
		// (the server answers for the nesting).
		{"fast path", "INSERT INTO orders (name, note) VALUES (" + nested(100) + ", 'x')", ""},
		// Nothing to plan: passes through unparsed.
		{"pass through", "SELECT " + nested(100), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := PlanQuery(tc.sql, env)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("error %v", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Code() != CodeTooDeep || e.SQLState() != "HY000" || !strings.Contains(e.Error(), tc.want) {
				t.Fatalf("error %v, want 1473 mentioning %q", err, tc.want)
			}
			if !strings.Contains(e.Error(), "raise limits.max_plan_depth") {
				t.Fatalf("%q does not say how to raise the limit", e.Error())
			}
		})
	}
	// The default.
	env.Limits.MaxDepth = 0
	if _, err := PlanQuery("SELECT NEXTVAL('order') + "+nested(DefaultMaxDepth), env); err != nil {
		t.Fatalf("at the default depth: %v", err)
	}
	if _, err := PlanPrepare("SELECT NEXTVAL('order') + "+nested(DefaultMaxDepth+1), env); err == nil || !strings.Contains(err.Error(), "more than 1000 deep") {
		t.Fatalf("over the default depth (prepared): %v", err)
	}
}

func TestParseBudget(t *testing.T) {
	env := testEnv(t, Mode{})
	b := &budgetLog{}
	env.Limits.Memory = b
	var pl Planner
	for _, tc := range []struct {
		name, sql string
		parsed    int // statements the parser reads (charged once, for the costliest)
	}{
		{"NEXTVAL select (lexer)", "SELECT NEXTVAL('order')", 0},
		{"fast path INSERT", "INSERT INTO orders (name) VALUES ('a'), ('b')", 0},
		{"pass through", "SELECT * FROM t WHERE a = (1)", 0},
		{"INSERT on the parser path", "INSERT INTO orders VALUES (NULL, 'a', 'b')", 1},
		{"two statements", "INSERT INTO orders VALUES (NULL, 'a', 'b'); SELECT NEXTVAL('order') + 1", 2},
		{"NEXTVAL in an INSERT", "INSERT INTO audit (id) VALUES (NEXTVAL(order))", 1},
		{"NEXTVAL select of many calls (lexer, charged per call)", "SELECT NEXTVAL('order')" + strings.Repeat(", NEXTVAL('order')", freeCalls), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			*b = budgetLog{}
			if _, err := pl.PlanQuery(tc.sql, sqltext.ClassifyString(tc.sql), env); err != nil {
				t.Fatal(err)
			}
			if (b.calls > 0) != (tc.parsed > 0) || b.acquired != b.released {
				t.Fatalf("%d acquires of %d bytes, %d released; want them for %d parses, all released", b.calls, b.acquired, b.released, tc.parsed)
			}
			if tc.parsed > 0 && b.acquired < TokenCost*int64(4*tc.parsed) {
				t.Fatalf("charged %d bytes for %d statements", b.acquired, tc.parsed)
			}
		})
	}
	// Calls, then a parse that needs more than is free: what was held is
	// given back and the whole waited for (no holding while waiting).
	*b = budgetLog{busy: true}
	many := "SELECT NEXTVAL('order') + 1" + strings.Repeat(", NEXTVAL('order')", 2*freeCalls)
	if _, err := pl.PlanQuery(many, sqltext.ClassifyString(many), env); err != nil {
		t.Fatal(err)
	}
	if calls := int64(2*freeCalls+1) * CallCost; b.calls != 3 || b.acquired <= 2*calls || b.released != b.acquired {
		t.Fatalf("%d calls to the budget, %d bytes acquired, %d released; want the calls' %d, a refused top-up, then all at once", b.calls, b.acquired, b.released, calls)
	}
	// What Acquire says is what the caller gets, and nothing is planned.
	refusal := errors.New("budget says no")
	*b = budgetLog{refuse: refusal}
	if p, err := pl.PlanQuery("INSERT INTO orders VALUES (NULL, 'a', 'b')", sqltext.ClassifyString("INSERT INTO orders VALUES (NULL, 'a', 'b')"), env); err != refusal || p.Kind != PassThrough {
		t.Fatalf("refused budget: %v %v", p.Kind, err)
	}
	if b.released != 0 {
		t.Fatalf("released %d bytes never acquired", b.released)
	}
}

// TestParseCostCovers: what a parse is charged (parseMemory) covers what
// planning really allocates, for the shapes that cost the most per token
// (measured: unary operator chains, long expression chains, UNIONs,
// subqueries, nesting at the default limit).
func TestParseCostCovers(t *testing.T) {
	env := testEnv(t, Mode{})
	const n = 1 << 16
	for _, tc := range []struct{ name, sql string }{
		{"plus chain", "SELECT NEXTVAL('order')" + strings.Repeat("+1", n)},
		{"unary minus chains", "SELECT NEXTVAL('order')" + strings.Repeat("+"+strings.Repeat("-", 500)+"1", n/500)},
		{"nesting at the limit", "SELECT NEXTVAL('order')" + strings.Repeat("+"+nested(DefaultMaxDepth), n/2000)},
		{"select list", "SELECT NEXTVAL('order')" + strings.Repeat(",'a'", n)},
		{"subqueries", "SELECT NEXTVAL('order')" + strings.Repeat("+(SELECT 1)", n/4)},
		{"unions", "SELECT NEXTVAL('order') + (SELECT 1" + strings.Repeat(" UNION SELECT 1", n/2) + ")"},
		{"rows with NEXTVAL", "INSERT INTO audit (id, v) VALUES (NEXTVAL(order), 'a')" + strings.Repeat(",(NEXTVAL(order), 'a')", n/8)},
		{"rows without column list", "INSERT INTO orders VALUES (NULL, 'a', 'b')" + strings.Repeat(",(NULL, 'a', 'b')", n/8)},
		{"calls in an expression", "SELECT NEXTVAL('order')" + strings.Repeat(", NEXTVAL('order')", n/2) + " + 1"},
		{"a NEXTVAL select of many calls", "SELECT NEXTVAL('order')" + strings.Repeat(", NEXTVAL('order')", n/2)},
		{"calls in a SET list", "INSERT INTO orders SET id = NEXTVAL('order'), name = 'a'" + strings.Repeat(", note = NEXTVAL('order')", n/8)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &budgetLog{}
			env.Limits.Memory = b
			runtime.GC()
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			_, err := PlanQuery(tc.sql, env)
			runtime.ReadMemStats(&m1)
			if err != nil {
				t.Fatal(err)
			}
			alloc := int64(m1.TotalAlloc - m0.TotalAlloc)
			t.Logf("%d bytes: charged %d, allocated %d (%.0f%%)", len(tc.sql), b.acquired, alloc, 100*float64(alloc)/float64(b.acquired))
			if alloc > b.acquired || b.released != b.acquired {
				t.Fatalf("charged %d bytes (%d given back); planning allocated %d", b.acquired, b.released, alloc)
			}
		})
	}
}

// A parser that read a large statement is not put back into the pool: it
// would keep the statement's tree (and a deep statement's stack) until
// its next use. sync.Pool keeps what it holds across one collection (its
// victim cache), so the heap after one collection shows what it keeps.
func TestLargeParseNotPooled(t *testing.T) {
	env := testEnv(t, Mode{})
	for _, sql := range []string{
		"SELECT NEXTVAL('order')" + strings.Repeat("+1", 100_000),
		"SELECT NEXTVAL('order') + " + strings.Repeat(nested(DefaultMaxDepth)+"+", 50) + "1",
	} {
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		if _, err := PlanQuery(sql, env); err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&m1)
		kept := int64(m1.HeapAlloc) - int64(m0.HeapAlloc)
		t.Logf("%d bytes planned; %d bytes kept after a collection", len(sql), kept)
		if kept > 2<<20 {
			t.Errorf("planning a %d-byte statement left %.1f MiB on the heap (the pooled parser's tree)", len(sql), float64(kept)/(1<<20))
		}
	}
}

// BenchmarkParseCost is the lexer pass the parser path now makes before
// parsing (compare BenchmarkInsert1Row/parser and Insert100Rows/parser,
// the parses it precedes).
func BenchmarkParseCost(b *testing.B) {
	env := testEnv(b, Mode{})
	for _, tc := range []struct{ name, sql string }{
		{"1row", "INSERT INTO orders (name, note) VALUES ('customer 1', 'a note about it')"},
		{"100rows", insertRows(100)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			bl := builder{sql: tc.sql, env: env}
			b.SetBytes(int64(len(tc.sql)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bl.parseCost(0, len(tc.sql), true, "orders", Rule{Column: "id"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
