package admin

import "testing"

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		ok   bool
		want stmt
		err  bool
	}{
		{"SELECT 1", false, stmt{}, false},
		{"SHOW TABLES", false, stmt{}, false},
		{"show leafproxy sequences", true, stmt{kind: showSequences}, false},
		{"  SHOW LEAFPROXY SESSIONS;", true, stmt{kind: showSessions}, false},
		{"SHOW LEAFPROXY processlist", true, stmt{kind: showSessions}, false},
		{"SHOW LEAFPROXY TAGS", true, stmt{}, true},
		{"CREATE LEAFPROXY SEQUENCE orders", true, stmt{kind: createSequence, tag: "orders"}, false},
		{"CREATE LEAFPROXY SEQUENCE IF NOT EXISTS `a``b` STEP 500", true, stmt{kind: createSequence, tag: "a`b", step: 500, ifNotExists: true}, false},
		{"create leafproxy sequence '订单' step 10", true, stmt{kind: createSequence, tag: "订单", step: 10}, false},
		{"CREATE LEAFPROXY SEQUENCE x STEP 0", true, stmt{}, true},
		{"CREATE LEAFPROXY SEQUENCE x STEP", true, stmt{}, true},
		{"CREATE LEAFPROXY SEQUENCE", true, stmt{}, true},
		{"CREATE TABLE leafproxy (id INT)", false, stmt{}, false},
		{"SHOW LEAFPROXY SEQUENCES; SELECT 1", false, stmt{}, false},
		{"", false, stmt{}, false},
		{"SHOW\t\r\nleafPROXY sequences", true, stmt{kind: showSequences}, false},
		{"SHOW LEAFPROXY", true, stmt{}, true},
		{"SHOW LEAFPROXY;", true, stmt{}, true},
		{"SHOW LEAFPROXYX SEQUENCES", false, stmt{}, false},
		{"SHOW LEAFPROX", false, stmt{}, false},
		{"SHOW `LEAFPROXY` SEQUENCES", false, stmt{}, false},
		{"SHOW LEAFPROXY_ SEQUENCES", false, stmt{}, false},
		{"SHOWX LEAFPROXY SEQUENCES", false, stmt{}, false},
		{"SELECT leafproxy", false, stmt{}, false},
		{"SHOW; LEAFPROXY SEQUENCES", false, stmt{}, false},
	} {
		got, ok := parse([]byte(tc.sql))
		if ok != tc.ok {
			t.Errorf("%q: ok=%v, want %v", tc.sql, ok, tc.ok)
			continue
		}
		if tc.err != (got.err != "") {
			t.Errorf("%q: err %q, want error %v", tc.sql, got.err, tc.err)
			continue
		}
		if !tc.err && got != tc.want {
			t.Errorf("%q: %+v, want %+v", tc.sql, got, tc.want)
		}
	}
}

// BenchmarkParseNotAdmin is the cost every SELECT and SHOW pays on its way
// to the engine (issue 11: SELECT 1 through the proxy).
func BenchmarkParseNotAdmin(b *testing.B) {
	for _, q := range []string{"SELECT 1", "SELECT id, v FROM orders WHERE id = 42", "SHOW TABLES"} {
		sql := []byte(q)
		b.Run(q, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := parse(sql); ok {
					b.Fatal("parsed as admin")
				}
			}
		})
	}
}
