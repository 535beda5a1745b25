package rewriter

import (
	"github.com/leafproxy/leafproxy/internal/sqltext"
	"io"
	"runtime"
	"strings"
	"testing"
)

// rowsBytes is what planning text with pl (charged to env's budget),
// assigning its IDs and rendering it allocate, in bytes, as the engine
// does them (the IDs drawn, the IDs assigned, the rendered text: a Large
// plan's written in pieces to the backend, here io.Discard).
func rowsBytes(t testing.TB, pl *Planner, env *Env, text string) (alloc uint64, out int, large bool) {
	t.Helper()
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	p, err := pl.PlanQuery(text, sqltext.ClassifyString(text), env)
	if err != nil || p.Kind != Rewrite {
		t.Fatalf("plan: %v %v", err, p.Kind)
	}
	batches := make([][]int64, len(p.Tags))
	for i, tc := range p.Tags {
		batches[i] = make([]int64, tc.N)
		for j := range batches[i] {
			batches[i][j] = 1_000_000_000_000_000_000 + int64(j) // 19 digits, as snowflake IDs
		}
	}
	ids, err := p.AssignIDs(nil, batches)
	if err != nil {
		t.Fatal(err)
	}
	if p.Large() {
		out = p.RenderedLen(text, ids)
		if _, err := p.WriteTo(io.Discard, nil, text, ids); err != nil {
			t.Fatal(err)
		}
	} else {
		rendered, err := p.Render(nil, text, ids)
		if err != nil {
			t.Fatal(err)
		}
		out = len(rendered)
	}
	runtime.ReadMemStats(&ms1)
	return ms1.TotalAlloc - ms0.TotalAlloc, out, p.Large()
}

// A many-row INSERT into a rule table is charged RowCost a row before it
// is planned, held until the Planner is released (the engine: once the
// rendered text was sent), and that covers what planning, drawing and
// rendering it allocate when it is planned Large (its rows as offsets,
// its text written in pieces); planned otherwise it is charged
// EditRowCost a row before its rows are planned, and that covers them
// (issue 29: 604 bytes a row for 1,000,000 rows of ('y') before the
// edits, IDs and text were sized at once, 60-70x the statement in the
// proxy's RSS; then 126-132 bytes a row until rows became offsets).
func TestRowCostCovers(t *testing.T) {
	const rows = 200_000
	for _, tc := range []struct {
		name, head, row string
		large           bool
	}{
		{"absent key", "INSERT INTO orders (name) VALUES ", "('y')", true},
		{"no columns", "INSERT INTO orders () VALUES ", "()", true},
		{"absent key, upsert", "INSERT INTO orders (name) VALUES ", "('y')", true},
		{"key NULL", "INSERT INTO orders (id, name) VALUES ", "(NULL,'y')", false},
		{"key DEFAULT, spaced", "INSERT INTO orders (id, name) VALUES ", " (DEFAULT, 'y')", false},
		{"parser path", "INSERT INTO orders VALUES ", "(NULL,'y','z')", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := tc.head + tc.row + strings.Repeat(","+tc.row, rows-1)
			if strings.HasSuffix(tc.name, "upsert") {
				text += " ON DUPLICATE KEY UPDATE name = VALUES(name)"
			}
			env := testEnv(t, Mode{})
			b := &budgetLog{}
			env.Limits.Memory = b
			var pl Planner
			alloc, out, large := rowsBytes(t, &pl, env, text)
			held := b.acquired - b.released
			t.Logf("%d rows, %.1f MB: allocated %.1f MB (%d bytes a row, %.1fx the text), rendered %.1f MB, charged %.1f MB held, Large %v",
				rows, float64(len(text))/1e6, float64(alloc)/1e6, alloc/rows, float64(alloc)/float64(len(text)), float64(out)/1e6, float64(held)/1e6, large)
			if large != tc.large {
				t.Fatalf("planned Large: %v, want %v", large, tc.large)
			}
			cost := int64(RowCost)
			if !large {
				cost = EditRowCost
			}
			if held < int64(rows)*cost {
				t.Errorf("held %d bytes after planning, want the rows' %d until Release", held, int64(rows)*cost)
			}
			if tc.name != "parser path" && !raceEnabled && alloc > uint64(rows*cost) {
				t.Errorf("allocated %d bytes a row, more than charged (%d)", alloc/rows, cost)
			}
			pl.Release()
			if b.acquired != b.released {
				t.Errorf("after Release: acquired %d, released %d", b.acquired, b.released)
			}
		})
	}
}

func TestEstimateRows(t *testing.T) {
	for _, tc := range []struct {
		text string
		want int
	}{
		{"INSERT INTO t (v) VALUES (1)", 1},
		{"INSERT INTO t (v) VALUES (1),(2), (3) ,\n(4)", 4},
		{"INSERT INTO t SET v = " + strings.Repeat("(", 1000) + "1" + strings.Repeat(")", 1000), 1},
		{"INSERT INTO t (a, b) VALUES (f(1), 2), (g(3), 4)", 4}, // calls followed by a comma count too: an upper bound
	} {
		if got := estimateRows(tc.text); got != tc.want {
			t.Errorf("estimateRows(%.60q) = %d, want %d", tc.text, got, tc.want)
		}
	}
}
