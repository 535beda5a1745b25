package admin

import (
	"strings"
	"testing"
)

func TestShowFilter(t *testing.T) {
	for _, tc := range []struct{ in, filter string }{
		{"SHOW LEAFPROXY SEQUENCES LIKE 'ord%'", "`tag` LIKE 'ord%'"},
		{"show /* c */ leafproxy sequences like 'a' ESCAPE '!' ;", "`tag` LIKE 'a' ESCAPE '!'"},
		{"SHOW LEAFPROXY SEQUENCES WHERE step < 10", "step < 10"},
		{"SHOW LEAFPROXY SEQUENCES", ""},
		{"SHOW LEAFPROXY SEQUENCES LIKE", ""},
		{"SHOW LEAFPROXY SESSIONS LIKE 'x'", ""},
		{"SHOW TABLES LIKE 'x'", ""},
	} {
		f, ok := showFilter(tc.in)
		if f != tc.filter || ok != (tc.filter != "") {
			t.Errorf("%q: %q %v, want %q", tc.in, f, ok, tc.filter)
		}
	}
	st, ok := parseText([]byte("SHOW LEAFPROXY SEQUENCES WHERE generator = 'segment'"))
	if !ok || st.kind != showSequences || st.filter != "generator = 'segment'" {
		t.Errorf("parse: %+v %v", st, ok)
	}
	var b strings.Builder
	for _, v := range []*string{nil, ptr("12"), ptr("-1.5"), ptr("it's"), ptr("")} {
		literal(&b, v, false)
		b.WriteString(" ")
	}
	literal(&b, ptr("12"), true)
	if got := b.String(); got != "NULL 12 -1.5 _utf8mb4 X'69742773' _utf8mb4'' _utf8mb4 X'3132'" {
		t.Errorf("literals: %s", got)
	}
}

func ptr(s string) *string { return &s }
