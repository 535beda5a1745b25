package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/proxy"
	"github.com/leafproxy/leafproxy/rewriter"
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

// An expired column-cache entry is re-read by one session; the others
// keep using the old entry meanwhile instead of all querying
// information_schema at once. A failed re-read lets the next one try.
func TestColumnCacheOneRefreshAtATime(t *testing.T) {
	c := newColumnCache(time.Hour)
	s := &fakeSession{columns: map[string][][2]string{"orders": {{"id", "bigint"}}}}
	ctx := context.Background()
	if _, err := c.entry(ctx, s, nil, "shop", "orders"); err != nil || len(s.backend) != 1 {
		t.Fatalf("first read: %v, %d queries", err, len(s.backend))
	}
	key := colKey{"shop", "orders"}
	e := c.entries[key]
	e.loadedAt = time.Now().Add(-2 * time.Hour) // expired
	e.refreshing = true                         // another session is re-reading it
	c.entries[key] = e
	if got, err := c.entry(ctx, s, nil, "shop", "orders"); err != nil || len(got.cols) != 1 || len(s.backend) != 1 {
		t.Fatalf("expired entry being refreshed elsewhere: %v, %d cols, %d queries (want the old entry, no query)", err, len(got.cols), len(s.backend))
	}
	e.refreshing = false
	c.entries[key] = e
	if _, err := c.entry(ctx, s, nil, "shop", "orders"); err != nil || len(s.backend) != 2 {
		t.Fatalf("expired entry: %v, %d queries, want a re-read", err, len(s.backend))
	}
	if c.entries[key].refreshing || time.Since(c.entries[key].loadedAt) > time.Minute {
		t.Fatalf("after the re-read: %+v", c.entries[key])
	}
}

// A session's memo of its last table answers while the cache is
// unchanged and the entry fresh; a change to the cache (DDL seen here drops
// it) or expiry sends the session back to the cache, which re-reads.
func TestColumnMemo(t *testing.T) {
	c := newColumnCache(time.Hour)
	s := &fakeSession{columns: map[string][][2]string{"orders": {{"id", "bigint"}}}}
	ctx := context.Background()
	var memo colMemo
	read := func(want int) colEntry {
		t.Helper()
		e, err := c.entry(ctx, s, &memo, "shop", "orders")
		if err != nil || len(s.backend) != want {
			t.Fatalf("entry: %v, %d queries, want %d", err, len(s.backend), want)
		}
		return e
	}
	read(1) // a miss: information_schema, no memo yet
	read(1) // a cache hit: fills the memo
	if memo.table != "orders" || memo.generation != c.generation.Load() {
		t.Fatalf("memo after a hit: %+v", memo)
	}
	c.mu.Lock()
	delete(c.entries, colKey{"shop", "orders"}) // the map emptied without gen: only the memo still knows the table
	c.mu.Unlock()
	read(1) // from the memo: no query although the map has no entry
	s.columns["orders"] = [][2]string{{"id", "bigint"}, {"note", "text"}}
	c.invalidate() // DDL seen here
	if got := read(2); len(got.cols) != 2 {
		t.Fatalf("after invalidate: %v, want the new columns", got.cols)
	}
	read(2) // hit again, memo refilled
	memo.entry.loadedAt = time.Now().Add(-2 * time.Hour)
	c.mu.Lock()
	e := c.entries[colKey{"shop", "orders"}]
	e.loadedAt = memo.entry.loadedAt
	c.entries[colKey{"shop", "orders"}] = e
	c.mu.Unlock()
	read(3) // both expired: re-read
	if _, err := c.entry(ctx, s, &memo, "shop", "customers"); err != nil || len(s.backend) != 4 {
		t.Fatalf("another table: %v, %d queries (the memo is for orders only)", err, len(s.backend))
	}
}

// On an event loop (a context marked nonblock) the engine hands back, before
// doing anything, what must run where it may wait: SETVAL (a store write)
// and DDL (the column cache is dropped after the server ran it).
func TestEngineHandsBackWhatWaits(t *testing.T) {
	e := fakeEngine(t)
	s := &fakeSession{db: "shop", columns: map[string][][2]string{"orders": {{"id", "bigint"}}}}
	for _, q := range []string{"SELECT NEXTVAL('order'), SETVAL('order', 5000)", "ALTER TABLE orders ADD note TEXT"} {
		handled, err := onLoop(t, s, nil, false, func(ctx context.Context) (bool, error) { return e.queryText(ctx, s, []byte(q)) })
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
	if handled, err := onLoop(t, s, nil, false, func(ctx context.Context) (bool, error) {
		return e.queryText(ctx, s, []byte("SELECT NEXTVAL('order')"))
	}); err != nil || !handled {
		t.Fatalf("NEXTVAL on a loop: handled=%v err=%v", handled, err)
	}
}

// forget drops the entries its refs name (any database for an unqualified
// name, every table for a database, names in any case) and moves the
// generation only when it drops one.
func TestColumnCacheForget(t *testing.T) {
	c := newColumnCache(time.Hour)
	keys := []colKey{{"shop", "orders"}, {"shop", "notes"}, {"crm", "orders"}, {"crm", "users"}, {"Logs", "Events"}}
	fill := func() {
		for _, k := range keys {
			c.entries[k] = colEntry{cols: []string{"id"}, loadedAt: time.Now()}
		}
	}
	for _, tc := range []struct {
		refs []rewriter.SchemaRef
		left []colKey
	}{
		{nil, keys},
		{[]rewriter.SchemaRef{{Table: "orders"}}, []colKey{{"shop", "notes"}, {"crm", "users"}, {"Logs", "Events"}}},
		{[]rewriter.SchemaRef{{DB: "shop", Table: "orders"}}, []colKey{{"shop", "notes"}, {"crm", "orders"}, {"crm", "users"}, {"Logs", "Events"}}},
		{[]rewriter.SchemaRef{{DB: "crm"}}, []colKey{{"shop", "orders"}, {"shop", "notes"}, {"Logs", "Events"}}},
		{[]rewriter.SchemaRef{{DB: "logs", Table: "EVENTS"}, {Table: "NOTES"}}, []colKey{{"shop", "orders"}, {"crm", "orders"}, {"crm", "users"}}},
		{[]rewriter.SchemaRef{{Table: "missing"}}, keys},
	} {
		clear(c.entries)
		fill()
		gen := c.generation.Load()
		c.forget(tc.refs)
		if len(c.entries) != len(tc.left) {
			t.Errorf("forget(%v) left %v, want %v", tc.refs, c.entries, tc.left)
		}
		for _, k := range tc.left {
			if _, ok := c.entries[k]; !ok {
				t.Errorf("forget(%v) dropped %v", tc.refs, k)
			}
		}
		if moved := c.generation.Load() != gen; moved != (len(tc.left) != len(keys)) {
			t.Errorf("forget(%v): generation moved %v", tc.refs, moved)
		}
	}
}
