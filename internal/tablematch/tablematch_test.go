package tablematch

import (
	"fmt"
	"path"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, name string
		exact, fold   bool // whether it matches with Exact, with Fold
	}{
		{"orders_*", "orders_0", true, true},
		{"orders_*", "orders_", true, true},
		{"orders_*", "orders", false, false},
		{"orders_*", "Orders_1", false, true},
		{"orders_*", "xorders_1", false, false},
		{"orders_?", "orders_7", true, true},
		{"orders_?", "orders_17", false, false},
		{"orders_?", "orders_", false, false},
		{"orders_??", "orders_17", true, true},
		{"*_orders", "eu_orders", true, true},
		{"*_orders", "eu_orders_x", false, false},
		{"*", "", true, true},
		{"*", "anything", true, true},
		{"a*b*c", "aXXbYYc", true, true},
		{"a*b*c", "abcbc", true, true},
		{"a*b*c", "acb", false, false},
		{"a*b", "ab_ab_ab", true, true},
		{"shop_[0-9]", "shop_5", true, true},
		{"shop_[0-9]", "shop_a", false, false},
		{"shop_[0-9]*", "shop_31", true, true},
		{"shop_[!0-9]", "shop_a", true, true},
		{"shop_[^0-9]", "shop_5", false, false},
		{"shop_[a-c]", "shop_B", false, true},
		{"shop_[abc]", "shop_c", true, true},
		{`a\*b`, "a*b", true, true},
		{`a\*b`, "axb", false, false},
		{`a\?`, "a?", true, true},
		{`[\]]`, "]", true, true},
		{`[\-]`, "-", true, true},
		{`a\\b`, `a\b`, true, true},
		{"Mixed", "Mixed", true, false}, // Fold wants the pattern lowered (Case.Key)
		{"mixed", "Mixed", false, true},
		{"mixed", "mixed", true, true},
		{"商品_*", "商品_1", true, true},
		{"商品_?", "商品_品", true, true},
		{"ä*", "Ä1", false, true},
		{"[ä-ö]", "Ö", false, true},
		{"a?c", "a\xffc", true, true}, // not UTF-8: one byte is one character
		{"a\xffc", "a\xffc", true, true},
		{"a\xffc", "a\xfec", false, false},
		{"a/*", "a/b/c", true, true}, // unlike path.Match, * matches /
	} {
		if got := Match(tc.pattern, tc.name, Exact); got != tc.exact {
			t.Errorf("Match(%q, %q, Exact) = %v, want %v", tc.pattern, tc.name, got, tc.exact)
		}
		if got := Match(tc.pattern, tc.name, Fold); got != tc.fold {
			t.Errorf("Match(%q, %q, Fold) = %v, want %v", tc.pattern, tc.name, got, tc.fold)
		}
		// Where path.Match has a say (no '/', UTF-8), it agrees.
		if !strings.Contains(tc.pattern+tc.name, "/") && !strings.Contains(tc.pattern+tc.name, "\xff") && !strings.Contains(tc.pattern, "[!") {
			if m, err := path.Match(tc.pattern, tc.name); err != nil || m != tc.exact {
				t.Errorf("path.Match(%q, %q) = %v, %v; Match says %v", tc.pattern, tc.name, m, err, tc.exact)
			}
		}
	}
}

func TestCheck(t *testing.T) {
	good := []string{"orders", "orders_*", "?", "[a-z]", "[!a]", "[^a]", `\*`, `[\]]`, `[a\-z]`, "a]b"[:1], "[ä-ö]*"}
	for _, p := range good {
		if err := Check(p); err != nil {
			t.Errorf("Check(%q) = %v, want nil", p, err)
		}
	}
	bad := map[string]string{
		"orders_[0-9":   "[ without its ]",
		"orders_[]":     "empty set",
		"orders_[!]":    "empty set",
		`orders_\`:      `ends in \`,
		`orders_[a\`:    `a set ends in \`,
		"orders_]":      "] without its [",
		"orders_[a-]":   "- in a set",
		"orders_[z-a]":  "runs backwards",
		"orders_[a-\\":  `a set ends in \`,
		"orders_[9-0]*": "[9-0]",
	}
	for p, want := range bad {
		err := Check(p)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check(%q) = %v, want an error saying %q", p, err, want)
		}
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		text    string
		c       Case
		db, tbl string
		matches [][2]string
		not     [][2]string
	}{
		{"orders", Exact, "", "orders", [][2]string{{"a", "orders"}, {"", "orders"}}, [][2]string{{"a", "Orders"}}},
		{"shop.Orders", Exact, "shop", "Orders", [][2]string{{"shop", "Orders"}}, [][2]string{{"shop", "orders"}, {"Shop", "Orders"}, {"", "Orders"}}},
		{"shop.Orders", Fold, "shop", "orders", [][2]string{{"SHOP", "orders"}, {"shop", "ORDERS"}}, [][2]string{{"shop2", "orders"}}},
		{"shop_*.orders_*", Exact, "shop_*", "orders_*", [][2]string{{"shop_0", "orders_0"}, {"shop_31", "orders_1023"}},
			[][2]string{{"shop", "orders_1"}, {"shop_1", "orders"}, {"", "orders_1"}, {"SHOP_1", "orders_1"}}},
		{"shop_*.orders_*", Fold, "shop_*", "orders_*", [][2]string{{"SHOP_1", "Orders_1"}}, nil},
		{"shop_*.orders", Exact, "shop_*", "orders", [][2]string{{"shop_1", "orders"}}, [][2]string{{"shop_1", "orders_1"}}},
		{"Orders_?", Fold, "", "orders_?", [][2]string{{"x", "ORDERS_1"}}, [][2]string{{"x", "orders_12"}}},
	} {
		n, err := Parse(tc.text, tc.c)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.text, err)
		}
		if n.DB != tc.db || n.Table != tc.tbl {
			t.Errorf("Parse(%q, %v) = %q . %q, want %q . %q", tc.text, tc.c, n.DB, n.Table, tc.db, tc.tbl)
		}
		for _, m := range tc.matches {
			if !n.Match(m[0], m[1]) {
				t.Errorf("%q (%v) does not match %s.%s", tc.text, tc.c, m[0], m[1])
			}
		}
		for _, m := range tc.not {
			if n.Match(m[0], m[1]) {
				t.Errorf("%q (%v) matches %s.%s", tc.text, tc.c, m[0], m[1])
			}
		}
	}
	bad := map[string]string{
		"":                  "must be table or db.table",
		"a.b.c":             "must be table or db.table",
		"shop.":             "must be table or db.table",
		"shop_[0-9.orders":  `the database part "shop_[0-9" is not a valid pattern: [ without its ]`,
		"shop_*.orders_[]":  `the table part "orders_[]" is not a valid pattern: an empty set`,
		`orders_\`:          `the table part "orders_\\" is not a valid pattern`,
		"shop.orders_[z-a]": "runs backwards",
	}
	for text, want := range bad {
		_, err := Parse(text, Exact)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error saying %q", text, err, want)
		}
	}
}

// TestNameFold: what the quick checks of a pattern's literal ends must not
// reject when case is folded, where a character's lower case may be
// longer or shorter in bytes.
func TestNameFold(t *testing.T) {
	for _, tc := range []struct{ text, table string }{
		{"ⱥ*", "Ⱥx"}, // U+023A is 2 bytes, its lower case 3
		{"*ⱥ", "xȺ"},
		{"ⱥ*", "Ⱥ"},
		{"x*k", "x\u212a"}, // the Kelvin sign lowers to k
		{"k*", "\u212ax"},
		{"ORDERS_*_X", "orders_1_x"},
	} {
		n, err := Parse(tc.text, Fold)
		if err != nil {
			t.Fatal(err)
		}
		if !n.MatchTable(tc.table) {
			t.Errorf("%q (Fold) does not match %q", tc.text, tc.table)
		}
	}
}

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		name, db, table string
		ok              bool
	}{
		{"orders", "", "orders", true},
		{"shop.orders", "shop", "orders", true},
		{"shop_*.orders_*", "shop_*", "orders_*", true},
		{"", "", "", false},
		{"shop.", "", "", false},
		{".orders", "", "", false},
		{"a.b.c", "", "", false},
	} {
		db, table, ok := Split(tc.name)
		if ok != tc.ok || ok && (db != tc.db || table != tc.table) {
			t.Errorf("Split(%q) = %q, %q, %v", tc.name, db, table, ok)
		}
	}
}

func TestLike(t *testing.T) {
	for _, tc := range []struct{ text, db, table string }{
		{"orders", "", "orders"},
		{"shop.orders", "shop", "orders"},
		{"shop_*.orders_?", "shop_%", "orders_%"},
		{"*.orders_[0-9]", "", "orders_%"},
		{"100%.a!b", "100_", "a!b"},
		{`a\*b`, "", "a%"},
		{`x\y.a%b`, "x%", "a_b"}, // the \ makes x\y a pattern
	} {
		n, err := Parse(tc.text, Exact)
		if err != nil {
			t.Fatal(err)
		}
		if db, table := n.Like(); db != tc.db || table != tc.table {
			t.Errorf("Like(%q) = %q, %q; want %q, %q", tc.text, db, table, tc.db, tc.table)
		}
	}
}

// TestFilterLike: the conditions FilterLike appends are Like's, in the
// order and words the information_schema queries of allocator and service
// sent before it was shared.
func TestFilterLike(t *testing.T) {
	for _, tc := range []struct {
		text, q string
		args    []any
	}{
		{"orders", "W AND TABLE_NAME LIKE ?", []any{"x", "orders"}},
		{"shop.orders", "W AND TABLE_SCHEMA LIKE ? AND TABLE_NAME LIKE ?", []any{"x", "shop", "orders"}},
		{"*.*", "W", []any{"x"}},
		{"shop_*.*", "W AND TABLE_SCHEMA LIKE ?", []any{"x", "shop_%"}},
	} {
		n, err := Parse(tc.text, Exact)
		if err != nil {
			t.Fatal(err)
		}
		q, args := n.FilterLike("W", []any{"x"})
		if q != tc.q || fmt.Sprint(args) != fmt.Sprint(tc.args) {
			t.Errorf("FilterLike(%q) = %q %v; want %q %v", tc.text, q, args, tc.q, tc.args)
		}
	}
}

func TestMatchAllocates(t *testing.T) {
	n, _ := Parse("shop_*.orders_[0-9]*", Fold)
	if a := testing.AllocsPerRun(100, func() {
		_ = n.Match("SHOP_12", "ORDERS_1023") && !n.Match("shop_1", "orders") && Match("ä*", "ÄÖÜ", Fold)
	}); a != 0 {
		t.Errorf("%v allocations per match", a)
	}
}

func BenchmarkMatch(b *testing.B) {
	for _, bc := range []struct{ name, pattern, s string }{
		{"hit", "orders_*", "orders_1023"},
		{"miss-prefix", "orders_*", "audit_log"},
		{"class", "orders_[0-9]*", "orders_1023"},
		{"leading-star", "*_orders", "customer_addresses"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Match(bc.pattern, bc.s, Exact)
			}
		})
	}
}
