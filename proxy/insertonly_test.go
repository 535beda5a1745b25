package proxy

import (
	"testing"

	"github.com/leafproxy/leafproxy/internal/sqltext"
)

// TestInsertOnly checks queryAfter's shortcut: a text insertOnly accepts
// must get from its class exactly what queryAfter gives it without one
// (no USE, no sql_mode change, no EXECUTE, one statement), and the texts
// it must leave to the class are left.
func TestInsertOnly(t *testing.T) {
	for _, tt := range []struct {
		text string
		want bool
	}{
		{"INSERT INTO orders (`id`, v) VALUES (48000018, 1)", true},
		{"  \n\tinsert into orders (v) values ('a;b')", false}, // a ';', even quoted: left to the class
		{"REPLACE INTO t (id) VALUES (1)", true},
		{"INSERT/* c */INTO t VALUES (1)", true},
		{"INSERTS INTO t VALUES (1)", false},
		{"/* c */ INSERT INTO t VALUES (1)", false},
		{"/*!INSERT INTO t VALUES (1)*/", false},
		{"INSERT INTO t VALUES (1); SET sql_mode=''", false},
		{"SET sql_mode=''", false},
		{"USE db", false},
		{"EXECUTE s", false},
		{"", false},
		{"INSERT", true},
	} {
		if got := insertOnly([]byte(tt.text)); got != tt.want {
			t.Errorf("insertOnly(%q) = %v, want %v", tt.text, got, tt.want)
		}
		if !tt.want {
			continue
		}
		c := sqltext.ClassifyString(tt.text)
		if w := c.PlainWord(); w != sqltext.Insert && w != sqltext.Replace || c.SetsSQLMode() || c.Multi() {
			t.Errorf("%q: insertOnly, but its class is word %v, sets sql_mode %v, multi %v", tt.text, c.PlainWord(), c.SetsSQLMode(), c.Multi())
		}
	}
}
