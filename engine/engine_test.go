package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/internal/nonblock"
	"github.com/leafproxy/leafproxy/proxy"
)

func TestKeyTypeProblem(t *testing.T) {
	for _, tc := range []struct {
		t   colType
		gen string
		ok  bool
	}{
		{colType{dataType: "bigint"}, "snowflake", true},
		{colType{dataType: "bigint"}, "segment", true},
		{colType{dataType: "int"}, "segment", true},
		{colType{dataType: "int"}, "snowflake", false},
		{colType{dataType: "smallint"}, "snowflake", false},
		{colType{dataType: "decimal", precision: 20}, "snowflake", true},
		{colType{dataType: "decimal", precision: 10}, "snowflake", false},
		{colType{dataType: "decimal", precision: 20, scale: 2}, "segment", false},
		{colType{dataType: "varchar"}, "segment", false},
		{colType{dataType: "char"}, "snowflake", false},
		{colType{dataType: "double"}, "segment", false},
	} {
		if got := keyTypeProblem(tc.t, tc.gen) == ""; got != tc.ok {
			t.Errorf("%+v with %s: ok=%v, want %v", tc.t, tc.gen, got, tc.ok)
		}
	}
}

func TestIsDDL(t *testing.T) {
	for q, want := range map[string]bool{
		"ALTER TABLE t ADD c INT":             true,
		"  /* x */ drop table t":              true,
		"create table t (id int)":             true,
		"RENAME TABLE a TO b":                 true,
		"truncate t":                          true,
		"SELECT 1":                            false,
		"INSERT INTO alter_log ...":           false,
		"/* unterminated":                     false,
		"":                                    false,
		"-- c\nALTER TABLE t ADD c INT":       true,
		"# c\nDROP TABLE t":                   true,
		"/*!40101 ALTER TABLE t ADD c INT */": true,
		"((CREATE":                            true,
		"--c\nALTER TABLE t":                  false, // minus minus c ALTER: not a statement start
		"ALTERNATIVE":                         false,
		"SELECT 1 -- \nALTER":                 false,
	} {
		if got := isDDL(q); got != want {
			t.Errorf("isDDL(%q) = %v, want %v", q, got, want)
		}
	}
}

func TestQuoteIsSafeInAnySQLMode(t *testing.T) {
	for in, want := range map[string]string{
		"shop":   "'shop'",
		"o'neil": "'o''neil'",
		`a\b`:    "X'615c62'",
	} {
		if got := quote(in); got != want {
			t.Errorf("quote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestHasDDLLooksAtEveryStatement(t *testing.T) {
	for q, want := range map[string]bool{
		"INSERT INTO t VALUES (1); ALTER TABLE t ADD c INT":    true,
		"SELECT 1;\n  DROP TABLE x":                            true,
		"SELECT 'a;b'":                                         false,
		"INSERT INTO t VALUES (1); INSERT INTO t VALUES (2)":   false,
		"-- c\nALTER TABLE t ADD c INT":                        true,
		"SELECT 1; -- c\n# d\n/* e */ ALTER TABLE t ADD c INT": true,
		"SELECT 1;/*!40101 DROP TABLE t */":                    true,
	} {
		if got := hasDDL(q); got != want {
			t.Errorf("hasDDL(%q) = %v, want %v", q, got, want)
		}
	}
}

// An expired column-cache entry is re-read by one session; the others
// keep using the old entry meanwhile instead of all querying
// information_schema at once. A failed re-read lets the next one try.
func TestColumnCacheOneRefreshAtATime(t *testing.T) {
	c := newColumnCache(time.Hour)
	s := &fakeSession{columns: map[string][][2]string{"orders": {{"id", "bigint"}}}}
	ctx := context.Background()
	if _, err := c.entry(ctx, s, "shop", "orders"); err != nil || len(s.backend) != 1 {
		t.Fatalf("first read: %v, %d queries", err, len(s.backend))
	}
	key := colKey{"shop", "orders"}
	e := c.m[key]
	e.at = time.Now().Add(-2 * time.Hour) // expired
	e.refreshing = true                   // another session is re-reading it
	c.m[key] = e
	if got, err := c.entry(ctx, s, "shop", "orders"); err != nil || len(got.cols) != 1 || len(s.backend) != 1 {
		t.Fatalf("expired entry being refreshed elsewhere: %v, %d cols, %d queries (want the old entry, no query)", err, len(got.cols), len(s.backend))
	}
	e.refreshing = false
	c.m[key] = e
	if _, err := c.entry(ctx, s, "shop", "orders"); err != nil || len(s.backend) != 2 {
		t.Fatalf("expired entry: %v, %d queries, want a re-read", err, len(s.backend))
	}
	if c.m[key].refreshing || time.Since(c.m[key].at) > time.Minute {
		t.Fatalf("after the re-read: %+v", c.m[key])
	}
}

// On an event loop (a context marked nonblock) the engine hands back, before
// doing anything, what must run where it may wait: SETVAL (a store write)
// and DDL (the column cache is dropped after the server ran it).
func TestEngineHandsBackWhatWaits(t *testing.T) {
	e := fakeEngine(t)
	s := &fakeSession{db: "shop", columns: map[string][][2]string{"orders": {{"id", "bigint"}}}}
	nb := nonblock.Context(context.Background())
	for _, q := range []string{"SELECT NEXTVAL('order'), SETVAL('order', 5000)", "ALTER TABLE orders ADD note TEXT"} {
		handled, err := e.query(nb, s, []byte(q))
		if !errors.Is(err, proxy.ErrWouldBlock) || handled {
			t.Fatalf("%s on a loop: handled=%v err=%v, want ErrWouldBlock", q, handled, err)
		}
	}
	if len(s.relayed) != 0 || len(s.wrote) != 0 {
		t.Fatalf("wrote %v, relayed %q before handing back", s.wrote, s.relayed)
	}
	if st, ok := s.Value().(*state); ok && len(st.last) != 0 {
		t.Fatalf("an ID was drawn before handing back: LASTVAL %v", st.last)
	}
	// Everything else runs on the loop.
	if handled, err := e.query(nb, s, []byte("SELECT NEXTVAL('order')")); err != nil || !handled {
		t.Fatalf("NEXTVAL on a loop: handled=%v err=%v", handled, err)
	}
}
