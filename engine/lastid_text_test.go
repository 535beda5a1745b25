package engine

import (
	"strings"
	"testing"
)

// TestReadsLastID pins readsLastID's one-pass scan to its definition: the
// text names LAST_INSERT_ID or IDENTITY, in any case, anywhere.
func TestReadsLastID(t *testing.T) {
	for _, tt := range []struct {
		text string
		want bool
	}{
		{"INSERT INTO chi (pid) VALUES (LAST_INSERT_ID())", true},
		{"select last_insert_id()", true},
		{"SELECT @@identity", true},
		{"SELECT @@IDENTITY", true},
		{"SELECT @@last_insert_id", true},
		{"INSERT INTO t (v) VALUES ('x') ON DUPLICATE KEY UPDATE id = LAST_INSERT_ID(id)", true},
		{"INSERT INTO orders (v) VALUES (1)", false},
		{"SELECT last_insert_i", false},
		{"SELECT identit", false},
		{"SELECT lLAST_INSERT_IDx", true},
		{"iidentity", true},
		{"", false},
		{"INSERT INTO logs (msg) VALUES ('Last insert id')", false},
	} {
		if got := readsLastID(tt.text); got != tt.want {
			t.Errorf("readsLastID(%q) = %v, want %v", tt.text, got, tt.want)
		}
		lower := strings.ToLower(tt.text)
		if ref := strings.Contains(lower, "last_insert_id") || strings.Contains(lower, "identity"); ref != tt.want {
			t.Errorf("%q: the reference says %v", tt.text, ref)
		}
	}
}
