package sqltext

import (
	"strings"
	"testing"
)

func TestQuoteIdent(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"", "``"},
		{"t", "`t`"},
		{"order items", "`order items`"},
		{"a`b", "`a``b`"},
		{"``", "``````"},
		{"`x`", "```x```"},
		{"naïve", "`naïve`"},
		{"bad\xffutf8`", "`bad\xffutf8```"},
		{"q'\"\\", "`q'\"\\`"},
	} {
		if got := QuoteIdent(tc.name); got != tc.want {
			t.Errorf("QuoteIdent(%q) = %q, want %q", tc.name, got, tc.want)
		}
		if got := string(AppendQuotedIdent([]byte("AS "), tc.name)); got != "AS "+tc.want {
			t.Errorf("AppendQuotedIdent(%q) = %q, want %q", tc.name, got, "AS "+tc.want)
		}
		// The helpers this one replaced, byte for byte.
		if old := "`" + strings.ReplaceAll(tc.name, "`", "``") + "`"; QuoteIdent(tc.name) != old {
			t.Errorf("QuoteIdent(%q) = %q, the old helpers made %q", tc.name, QuoteIdent(tc.name), old)
		}
	}
}

func TestAppendQuotedIdentNoAlloc(t *testing.T) {
	buf := make([]byte, 0, 64)
	if n := testing.AllocsPerRun(100, func() { buf = AppendQuotedIdent(buf[:0], "a`b") }); n != 0 {
		t.Errorf("AppendQuotedIdent allocated %v times into a buffer large enough", n)
	}
}
