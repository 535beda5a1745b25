package sqltext

import "testing"

// TestUseName: USE's database name, a backquoted one decoded.
func TestUseName(t *testing.T) {
	for _, tt := range []struct {
		rest string
		name string
		ok   bool
	}{
		{" shop", "shop", true},
		{" shop ; ", "shop", true},
		{" /* c */ shop", "shop", true},
		{" `we``ird`;", "we`ird", true},
		{"\t`a b`\n", "a b", true},
		{" `open", "", false},
		{" ``", "", false},
		{" a b", "", false},
		{" `a` b", "", false},
		{"", "", false},
	} {
		if name, ok := UseName([]byte(tt.rest)); name != tt.name || ok != tt.ok {
			t.Errorf("UseName(%q) = %q, %v; want %q, %v", tt.rest, name, ok, tt.name, tt.ok)
		}
	}
}
