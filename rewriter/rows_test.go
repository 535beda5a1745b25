package rewriter

import (
	"bytes"
	"strings"
	"testing"

	"github.com/leafproxy/leafproxy/internal/sqltext"
)

// A Large plan (rows as offsets, rowRun) renders exactly what the parser
// path's plan of the same text renders, with the same IDs in the same
// order, whether rendered whole (Render) or written in pieces (WriteTo),
// and RenderedLen says its length.
func TestLargePlanRendersAsEdits(t *testing.T) {
	big := "'" + strings.Repeat("z", 3*renderChunk) + "'" // a row longer than a piece
	for _, tc := range []struct{ name, text string }{
		{"rows", "INSERT INTO orders (name) VALUES ('y')" + strings.Repeat(", ('y')", 60_000)},
		{"no columns", "INSERT INTO orders () VALUES ()" + strings.Repeat(",()", 100_000)},
		{"glued, upsert", "INSERT INTO orders(name)VALUES('y')" + strings.Repeat(",('y')", 50_000) + ",(" + big + ")" +
			strings.Repeat(",(f(1))", 40_000) + " ON DUPLICATE KEY UPDATE name = VALUES(name) -- end"},
		{"a long row first", "INSERT INTO orders (name, note) VALUES (" + big + ", 1)" + strings.Repeat(",('y',2)", 30_000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := testEnv(t, Mode{})
			large, err := PlanQuery(tc.text, env)
			if err != nil || !large.Large() || large.Slots != nil || len(large.Tags) != 1 || large.Tags[0].Tag != "order" {
				t.Fatalf("%v: Large %v, %d slots, tags %v", err, large.Large(), len(large.Slots), large.Tags)
			}
			parsed, _, err := planWith(tc.text, sqltext.ClassifyString(tc.text), env, false, false)
			if err != nil || parsed.Large() || len(parsed.Tags) != 1 || parsed.Tags[0] != large.Tags[0] {
				t.Fatalf("parser path: %v, tags %v, want %v", err, parsed.Tags, large.Tags)
			}
			batch := make([]int64, large.Tags[0].N)
			for i := range batch {
				batch[i] = 1_000_000_000_000_000_000 + int64(i)*7 // 19 digits, as snowflake IDs
			}
			ids, err := large.AssignIDs(nil, [][]int64{batch})
			if err != nil {
				t.Fatal(err)
			}
			pids, err := parsed.AssignIDs(nil, [][]int64{batch})
			if err != nil {
				t.Fatal(err)
			}
			want := string(parsed.mustRender(t, nil, tc.text, pids))
			if got := string(large.mustRender(t, nil, tc.text, ids)); got != want {
				t.Fatalf("Render differs from the parser path's at byte %d", firstDiff(got, want))
			}
			var w bytes.Buffer
			pieces := &countWriter{w: &w}
			if _, err := large.WriteTo(pieces, nil, tc.text, ids); err != nil {
				t.Fatal(err)
			}
			if got := w.String(); got != want {
				t.Fatalf("WriteTo differs from the parser path's Render at byte %d", firstDiff(got, want))
			}
			if n := large.RenderedLen(tc.text, ids); n != len(want) {
				t.Fatalf("RenderedLen %d, rendered %d", n, len(want))
			}
			if pieces.max > 2*renderChunk && pieces.max > len(big)+renderChunk {
				t.Errorf("WriteTo wrote a piece of %d bytes", pieces.max)
			}
			t.Logf("%d rows: %d bytes rendered in %d pieces", len(batch), len(want), pieces.n)
		})
	}
}

// A text with more than the large INSERT is planned with edits: the rows
// as offsets hold for the text's one statement only.
func TestLargeRowsOneStatement(t *testing.T) {
	env := testEnv(t, Mode{})
	rows := "INSERT INTO orders (name) VALUES ('y')" + strings.Repeat(",('y')", 50_000)
	for _, text := range []string{rows + "; INSERT INTO orders (name) VALUES ('x')", "INSERT INTO orders (name) VALUES ('x');" + rows} {
		p, err := PlanQuery(text, env)
		if err != nil || p.Large() || len(p.Slots) != 50_002 {
			t.Fatalf("%v: Large %v, %d slots", err, p.Large(), len(p.Slots))
		}
	}
}

type countWriter struct {
	w      *bytes.Buffer
	n, max int
}

func (c *countWriter) Write(p []byte) (int, error) {
	c.n++
	c.max = max(c.max, len(p))
	return c.w.Write(p)
}

func firstDiff(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
