package admin

import (
	"github.com/leafproxy/leafproxy/internal/sqltext"
	"strings"
	"testing"
)

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
		{"CREATE LEAFPROXY SEQUENCE x START WITH 1000 STEP 10", true, stmt{kind: createSequence, tag: "x", step: 10, start: 1000}, false},
		{"create leafproxy sequence x step 10 start 7", true, stmt{kind: createSequence, tag: "x", step: 10, start: 7}, false},
		{"CREATE LEAFPROXY SEQUENCE x START WITH 0", true, stmt{}, true},
		{"CREATE LEAFPROXY SEQUENCE x START WITH", true, stmt{}, true},
		{"CREATE LEAFPROXY SEQUENCE x STEP 1 STEP 2", true, stmt{}, true},
		{"CREATE LEAFPROXY SEQUENCE x MAXVALUE 100", true, stmt{kind: createSequence, tag: "x", maxValue: 100, setMax: true}, false},
		{"CREATE LEAFPROXY SEQUENCE x START WITH 5 MAXVALUE 100 STEP 2", true, stmt{kind: createSequence, tag: "x", start: 5, maxValue: 100, setMax: true, step: 2}, false},
		{"CREATE LEAFPROXY SEQUENCE x MAXVALUE", true, stmt{}, true},
		{"CREATE LEAFPROXY SEQUENCE x MAXVALUE 1 MAXVALUE 2", true, stmt{}, true},
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
		// The rest of the lifecycle: ALTER, CREATE, DROP.
		{"ALTER LEAFPROXY SEQUENCE orders STEP 5000", true, stmt{kind: alterSequence, tag: "orders", step: 5000}, false},
		{"alter leafproxy sequence `a b` step 1;", true, stmt{kind: alterSequence, tag: "a b", step: 1}, false},
		{"ALTER LEAFPROXY SEQUENCE orders", true, stmt{}, true},
		{"ALTER LEAFPROXY SEQUENCE orders MAXVALUE 99", true, stmt{kind: alterSequence, tag: "orders", maxValue: 99, setMax: true}, false},
		{"ALTER LEAFPROXY SEQUENCE orders STEP 5 NOMAXVALUE", true, stmt{kind: alterSequence, tag: "orders", step: 5, setMax: true}, false},
		{"ALTER LEAFPROXY SEQUENCE orders NOMAXVALUE", true, stmt{kind: alterSequence, tag: "orders", setMax: true}, false},
		{"alter leafproxy sequence orders no maxvalue", true, stmt{kind: alterSequence, tag: "orders", setMax: true}, false},
		{"ALTER LEAFPROXY SEQUENCE orders NOMAXVALUE MAXVALUE 3", true, stmt{}, true},
		{"ALTER LEAFPROXY SEQUENCE orders CYCLE 3", true, stmt{}, true},
		{"ALTER LEAFPROXY SEQUENCE orders STEP many", true, stmt{}, true},
		{"ALTER TABLE leafproxy ADD x INT", false, stmt{}, false},
		{"DROP LEAFPROXY SEQUENCE orders", true, stmt{kind: dropSequence, tag: "orders"}, false},
		{"DROP LEAFPROXY SEQUENCE IF EXISTS '订单'", true, stmt{kind: dropSequence, tag: "订单", ifExists: true}, false},
		{"DROP LEAFPROXY SEQUENCE IF EXISTS", true, stmt{}, true},
		{"DROP LEAFPROXY SEQUENCE a b", true, stmt{}, true},
		{"DROP TABLE leafproxy", false, stmt{}, false},
		{"CREATE LEAFPROXY SEQUENCE web SNOWFLAKE", true, stmt{kind: createSequence, tag: "web", snowflake: true}, false},
		{"CREATE LEAFPROXY SEQUENCE IF NOT EXISTS web SNOWFLAKE LAYOUT js_safe", true,
			stmt{kind: createSequence, tag: "web", snowflake: true, layout: "js_safe", ifNotExists: true}, false},
		{"create leafproxy sequence web snowflake layout (41, 8, 14) epoch '2024-01-01T00:00:00Z'", true,
			stmt{kind: createSequence, tag: "web", snowflake: true, bits: [3]int{41, 8, 14}, hasBits: true, epoch: "2024-01-01T00:00:00Z"}, false},
		{"CREATE LEAFPROXY SEQUENCE web SNOWFLAKE LAYOUT(41,5,7)", true,
			stmt{kind: createSequence, tag: "web", snowflake: true, bits: [3]int{41, 5, 7}, hasBits: true}, false},
		{"CREATE LEAFPROXY SEQUENCE web SNOWFLAKE LAYOUT (41, 5)", true, stmt{}, true},
		{"CREATE LEAFPROXY SEQUENCE web SNOWFLAKE LAYOUT", true, stmt{}, true},
		{"CREATE LEAFPROXY SEQUENCE web SNOWFLAKE STEP 10", true, stmt{}, true},
		{"CREATE LEAFPROXY SEQUENCE web SEGMENT", true, stmt{}, true},
		{"CREATE LEAFPROXY SEQUENCE (x)", true, stmt{}, true},
		// Comments before and between the words (internal/sqltext's rules).
		{"/* app */ SHOW LEAFPROXY SEQUENCES", true, stmt{kind: showSequences}, false},
		{"-- x\nSHOW LEAFPROXY SEQUENCES", true, stmt{kind: showSequences}, false},
		{"# x\nshow leafproxy sessions", true, stmt{kind: showSessions}, false},
		{"/* a */ -- b\n# c\n\fSHOW LEAFPROXY SEQUENCES -- trailing\n", true, stmt{kind: showSequences}, false},
		{"SHOW/* x */LEAFPROXY/* y */SEQUENCES;/* z */", true, stmt{kind: showSequences}, false},
		{"CREATE /* c */ LEAFPROXY SEQUENCE /* d */ orders # e\n STEP 10", true, stmt{kind: createSequence, tag: "orders", step: 10}, false},
		{"DROP LEAFPROXY SEQUENCE `a/*b*/c`", true, stmt{kind: dropSequence, tag: "a/*b*/c"}, false},
		{"/* unterminated SHOW LEAFPROXY SEQUENCES", false, stmt{}, false},
		{"--x\nSHOW LEAFPROXY SEQUENCES", false, stmt{}, false},          // minus minus x: no comment
		{"/*!SHOW LEAFPROXY SEQUENCES */", false, stmt{}, false},         // code for the server
		{"SHOW LEAFPROXY SEQUENCES /*!99999 x */", false, stmt{}, false}, // so is this
		{"SHOW LEAFPROXY SEQUENCES; -- c\n", true, stmt{kind: showSequences}, false},
		{"SHOW LEAFPROXY SEQUENCES; /* c */ SELECT 1", false, stmt{}, false},
		{"DROP LEAFPROXY SEQUENCE 'unclosed", false, stmt{}, false},
	} {
		got, ok := parseText([]byte(tc.sql))
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

// TestParseBadArguments: values out of range are 1210 (bad argument), not
// 1064 (syntax).
func TestParseBadArguments(t *testing.T) {
	if st, _ := parseText([]byte("CREATE LEAFPROXY SEQUENCE x START WITH -5")); !st.badArg {
		t.Errorf("START WITH -5: %+v, want a bad argument", st)
	}
	if st, _ := parseText([]byte("CREATE LEAFPROXY SEQUENCE x START 1 NOMAXVALUE")); !st.unsupported || !strings.Contains(st.err, "takes no NOMAXVALUE") {
		t.Errorf("NOMAXVALUE: %+v, want unsupported", st)
	}
	for _, q := range []string{"CREATE LEAFPROXY SEQUENCE x MAXVALUE 0", "ALTER LEAFPROXY SEQUENCE x MAXVALUE -1",
		"CREATE LEAFPROXY SEQUENCE x MAXVALUE 9223372036854775807"} {
		if st, _ := parseText([]byte(q)); !st.badArg || !strings.Contains(st.err, "MAXVALUE") {
			t.Errorf("%q: %+v, want a bad argument", q, st)
		}
	}
	for _, q := range []string{"CREATE LEAFPROXY SEQUENCE x STEP 0", "ALTER LEAFPROXY SEQUENCE x STEP -3",
		"ALTER LEAFPROXY SEQUENCE x STEP 2147483648", "CREATE LEAFPROXY SEQUENCE x STEP 99999999999999999999"} {
		st, ok := parseText([]byte(q))
		if !ok || !st.badArg || !strings.Contains(st.err, "Incorrect arguments to") || !strings.Contains(st.err, "1 to 2147483647") {
			t.Errorf("%q: %+v", q, st)
		}
	}
	if st, _ := parseText([]byte("ALTER LEAFPROXY SEQUENCE x STEP many")); st.badArg || st.err == "" {
		t.Errorf("STEP many: %+v", st)
	}
}

// BenchmarkParseNotAdmin is the cost every SELECT and SHOW pays on its way
// to the engine (a pass-through SELECT 1 pays it), given the command's
// class.
func BenchmarkParseNotAdmin(b *testing.B) {
	for _, q := range []string{"SELECT 1", "SELECT id, v FROM orders WHERE id = 42", "SHOW TABLES"} {
		sql := []byte(q)
		c := sqltext.Classify(sql) // the proxy's, made once per command
		b.Run(q, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := parse(sql, c); ok {
					b.Fatal("parsed as admin")
				}
			}
		})
	}
}

// parseText classifies sql as the proxy does (once per command) before
// parse sees it.
func parseText(sql []byte) (stmt, bool) { return parse(sql, sqltext.Classify(sql)) }
