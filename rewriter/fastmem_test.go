package rewriter

import (
	"runtime"
	"strings"
	"testing"
)

// fastPathBytes is what planning, assigning and rendering text on the
// fast path allocates, in bytes.
func fastPathBytes(t testing.TB, text string) (alloc uint64, out int) {
	env := testEnv(t, Mode{})
	var pl Planner
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	p, err := pl.PlanQuery(text, env)
	if err != nil || p.Kind != Rewrite {
		t.Fatalf("plan: %v %v", err, p.Kind)
	}
	batches := make([][]int64, len(p.Tags))
	for i, tc := range p.Tags {
		batches[i] = make([]int64, tc.N)
		for j := range batches[i] {
			batches[i][j] = 1_000_000 + int64(j)
		}
	}
	ids, err := p.AssignIDs(nil, batches)
	if err != nil {
		t.Fatal(err)
	}
	r := p.Render(nil, text, ids)
	runtime.ReadMemStats(&ms1)
	return ms1.TotalAlloc - ms0.TotalAlloc, len(r)
}

func TestFastPathMemory(t *testing.T) {
	const rows = 1_000_000
	text := "INSERT INTO orders (name) VALUES ('y')" + strings.Repeat(",('y')", rows-1)
	alloc, out := fastPathBytes(t, text)
	t.Logf("%d rows, %.1f MB: allocated %.1f MB (%.1fx the text, %d bytes a row), rendered %.1f MB",
		rows, float64(len(text))/1e6, float64(alloc)/1e6, float64(alloc)/float64(len(text)), alloc/rows, float64(out)/1e6)
}
