package rewriter

import (
	"github.com/leafproxy/leafproxy/internal/sqltext"
	"strconv"
	"strings"
	"testing"
)

func benchPlan(b *testing.B, sql string, want Kind) {
	env := testEnv(b, Mode{})
	p, err := PlanQuery(sql, env)
	if err != nil || p.Kind != want {
		b.Fatalf("%v %v", p.Kind, err)
	}
	var buf []byte
	ids := ids(len(p.Slots))
	b.SetBytes(int64(len(sql)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		p, _ := PlanQuery(sql, env)
		if p.Kind == Rewrite {
			buf, _ = p.Render(buf[:0], sql, ids) // a fresh plan is not kept: no error
		}
	}
}

// update1KB is a 1 KB UPDATE; dense with v's (two per 47 bytes) or not.
func update1KB(dense bool) string {
	filler := "customer asked for a blue box and a signed receipt at the desk, "
	if dense {
		filler = "delivered over the weekend to the front door, "
	}
	var sb strings.Builder
	sb.WriteString("UPDATE orders SET status = 'shipped', note = '")
	for sb.Len() < 1000 {
		sb.WriteString(filler)
	}
	sb.WriteString("' WHERE id = 42 AND customer_id = 7")
	return sb.String()
}

func insertRows(n int) string {
	var sb strings.Builder
	sb.WriteString("INSERT INTO orders (name, note) VALUES ")
	for i := range n {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString("('customer " + strconv.Itoa(i) + "', 'a note about it')")
	}
	return sb.String()
}

func BenchmarkPassThroughSelect(b *testing.B) {
	benchPlan(b, "SELECT * FROM t WHERE id = 42", PassThrough)
}

func BenchmarkPassThroughUpdate1KB(b *testing.B) {
	benchPlan(b, update1KB(false), PassThrough)
}

func BenchmarkPassThroughUpdate1KBManyV(b *testing.B) {
	benchPlan(b, update1KB(true), PassThrough)
}

// The same UPDATE with "value" in it: the filter cannot rule it out, so the
// lexer scans it.
func BenchmarkPassThroughUpdate1KBScanned(b *testing.B) {
	benchPlan(b, strings.Replace(update1KB(false), "shipped", "value", 1), PassThrough)
}

func BenchmarkPassThroughInsertOtherTable(b *testing.B) {
	benchPlan(b, "INSERT INTO audit (name, note) VALUES ('a', 'b')", PassThrough)
}

func BenchmarkSequenceSelect(b *testing.B) {
	benchPlan(b, "SELECT NEXTVAL('t')", Sequence)
}

func BenchmarkNextvalInsert(b *testing.B) {
	benchPlan(b, "INSERT INTO t (a, b) VALUES (NEXTVAL('t'), 'x')", Rewrite)
}

// benchPaths plans and renders sql (a Rewrite) with the fast path (fast.go)
// and with the TiDB parser alone.
func benchPaths(b *testing.B, sql string, prepared bool) {
	for _, path := range []struct {
		name string
		fast bool
	}{{"fast", true}, {"parser", false}} {
		b.Run(path.name, func(b *testing.B) {
			env := testEnv(b, Mode{})
			p, hits, err := planWith(sql, sqltext.ClassifyString(sql), env, prepared, path.fast)
			if err != nil || p.Kind != Rewrite || (hits > 0) != path.fast {
				b.Fatalf("%v %v, fast path hits %d", p.Kind, err, hits)
			}
			var buf []byte
			n := 0 // a Large plan keeps its rows as offsets, not Slots
			for _, tc := range p.Tags {
				n += tc.N
			}
			ids := ids(n)
			b.SetBytes(int64(len(sql)))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				p, _, _ := planWith(sql, sqltext.ClassifyString(sql), env, prepared, path.fast)
				buf, _ = p.Render(buf[:0], sql, ids) // a fresh plan is not kept: no error
			}
		})
	}
}

// The single-row INSERT of docs/bench-insert.md, as go-sql-driver sends it
// (interpolated) and as GORM prepares it.
func BenchmarkInsertORM(b *testing.B) {
	b.Run("text", func(b *testing.B) { benchPaths(b, "INSERT INTO orders (name) VALUES ('x')", false) })
	b.Run("prepared", func(b *testing.B) { benchPaths(b, "INSERT INTO `orders` (`name`,`note`) VALUES (?,?)", true) })
}

func BenchmarkInsert1Row(b *testing.B) {
	benchPaths(b, insertRows(1), false)
}

func BenchmarkInsert100Rows(b *testing.B) {
	benchPaths(b, insertRows(100), false)
}

func BenchmarkInsert10000Rows(b *testing.B) {
	benchPaths(b, insertRows(10000), false)
}

func BenchmarkRender100Rows(b *testing.B) {
	sql := insertRows(100)
	p, err := PlanQuery(sql, testEnv(b, Mode{}))
	if err != nil {
		b.Fatal(err)
	}
	ids := ids(len(p.Slots))
	buf := p.mustRender(b, nil, sql, ids)
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = p.Render(buf[:0], sql, ids) // rendered once above: no error
	}
}

// otherInsertRows is insertRows(n) into a table without a rule: only its
// table name matters.
func otherInsertRows(n int) string {
	return strings.Replace(insertRows(n), "INSERT INTO orders", "INSERT INTO audit", 1)
}

func BenchmarkPassThroughInsertOtherTable1Row(b *testing.B) {
	benchPlan(b, otherInsertRows(1), PassThrough)
}

func BenchmarkPassThroughInsertOtherTable1000Rows(b *testing.B) {
	benchPlan(b, otherInsertRows(1000), PassThrough)
}
