package rewriter

import "testing"

// BenchmarkInsert1000Rows: a 1,000-row filled INSERT (issue 29).
func BenchmarkInsert1000Rows(b *testing.B) {
	benchPaths(b, insertRows(1000), false)
}
