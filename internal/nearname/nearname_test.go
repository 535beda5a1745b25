package nearname

import "testing"

func TestSuggest(t *testing.T) {
	names := []string{"listen", "backend", "tables", "tls", "users", "log", "limits", "order_events"}
	for _, tc := range []struct{ in, want string }{
		{"tabels", "tables"}, {"tables", "tables"}, {"lisen", "listen"}, {"backedn", "backend"},
		{"tsl", "tls"}, {"user", "users"}, {"xyz", ""}, {"colour", ""}, {"limit", "limits"},
		{"Listen", "listen"}, {"ordr_evnets", "order_events"}, {"orders", ""},
	} {
		if got := Suggest(tc.in, names); got != tc.want {
			t.Errorf("Suggest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"ab", "ba", 1}, {"kitten", "sitting", 3}, {"标签", "标", 1},
	} {
		if got := EditDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("EditDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
