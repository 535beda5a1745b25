package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/leafproxy/leafproxy/rewriter"
)

// BenchmarkQueryFilledInsert1000Rows is BenchmarkQueryFilledInsert for a
// 1,000-row INSERT (issue 29: it must not get slower as plans got
// smaller).
func BenchmarkQueryFilledInsert1000Rows(b *testing.B) {
	rules, err := rewriter.NewRules([]rewriter.Rule{{Table: "orders", Column: "id", Tag: "order"}})
	if err != nil {
		b.Fatal(err)
	}
	e := New(&counter{next: 1000}, rules)
	s := &discardSession{fakeSession{db: "bench", columns: map[string][][2]string{"orders": {{"id", "bigint"}, {"v", "varchar"}}}}}
	ctx := context.Background()
	sql := []byte("INSERT INTO orders (v) VALUES ('x')" + strings.Repeat(", ('x')", 999))
	if handled, err := e.queryText(ctx, s, sql); !handled || err != nil {
		b.Fatalf("handled=%v err=%v", handled, err)
	}
	b.SetBytes(int64(len(sql)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.queryText(ctx, s, sql); err != nil {
			b.Fatal(err)
		}
	}
}
