package integration

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/leafproc"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
)

// The many-row INSERT into a rule table (issue 29): one 6 MB statement of
// 1,000,000 ('y') rows grew the proxy's RSS by 352 MB, four at once by
// 2.2 GB, charged to no budget; then, sized at once and charged 160 bytes
// a row, +122-124 MiB and +166-168 MiB. Now such a statement (longer than
// rewriter.LargeRows, its key column absent from the list) is planned as
// its rows' offsets alone, its IDs are the one batch drawn, and its text
// is written into the backend connection in pieces, never whole: it is
// charged rewriter.RowCost (16 bytes) a row to limits.plan_memory, other
// many-row INSERTs rewriter.EditRowCost (160), before they are planned
// and until their text was sent: statements beyond the budget wait for it
// (1041 after 10 s), one larger than all of it gets 1041 at once.

func rowsEnv(t *testing.T, planMemory int64) *sql.DB {
	backend := testdb.Start(t)
	backend.Exec(t, "CREATE DATABASE IF NOT EXISTS app",
		"CREATE TABLE app.orders (id BIGINT PRIMARY KEY, v VARCHAR(4))")
	cfg := leafConfig(t, backend, nil)
	cfg.Tables = []config.Table{{Table: "orders", Column: "id", Tag: "order"}}
	cfg.Limits.PlanMemory = config.ByteSize(planMemory)
	lf := startLeaf(t, cfg)
	db := lf.open(t, "app", nil)
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	return db
}

func manyRows(n int) string {
	return "INSERT INTO orders (v) VALUES ('y')" + strings.Repeat(",('y')", n-1)
}

// The proxy runs as a process of its own (cmd/leafproxy), so that its
// RSS is its own: the test's clients and their copies of the statements
// are not counted. Each round starts a fresh proxy.
func TestManyRowInsertMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("a million rows")
	}
	backend := testdb.Start(t)
	backend.Exec(t, "CREATE DATABASE IF NOT EXISTS app",
		"CREATE TABLE app.orders (id BIGINT PRIMARY KEY, v VARCHAR(4))")
	ctx := context.Background()
	text := manyRows(1_000_000)
	for _, n := range []int{1, 4} {
		backend.Exec(t, "TRUNCATE TABLE app.orders")
		proc := leafproc.Start(t, `backend:
  addr: `+backend.Addr+`
  user: root
users:
  - name: app
    password: secret
sequences:
  wait_timeout: 5s
  tags:
    order: {generator: segment}
tables:
  - table: app.orders
    column: id
    tag: order
shutdown:
  grace: 1s
log:
  level: warn
`)
		db := (&leaf{addr: proc.Addr}).open(t, "app", nil)
		db.SetMaxOpenConns(8)
		db.SetMaxIdleConns(8)
		// A first filled INSERT: the session, the tag's first segment,
		// the column cache are not the statement's cost.
		if _, err := db.ExecContext(ctx, "INSERT INTO orders (v) VALUES ('w')"); err != nil {
			t.Fatal(err)
		}
		rss := proc.Measure(t)
		errs := concurrently(t, db, n, func(c *sql.Conn) error {
			_, err := c.ExecContext(ctx, text)
			return err
		})
		grew := rss.Growth(t)
		t.Logf("%d x %.1f MB statement(s) of 1,000,000 rows at once: the proxy's peak RSS grew %.0f MiB (%.1fx one statement)",
			n, float64(len(text))/1e6, float64(grew)/(1<<20), float64(grew)/float64(len(text)))
		for i, err := range errs {
			if err != nil {
				t.Fatalf("session %d: %v", i, err)
			}
		}
		var rows, keys int
		if err := db.QueryRow("SELECT COUNT(*), COUNT(DISTINCT id) FROM orders").Scan(&rows, &keys); err != nil || rows != 1+n*1_000_000 || keys != rows {
			t.Fatalf("%d rows, %d distinct keys, %v; want %d", rows, keys, err, 1+n*1_000_000)
		}
		// The bounds: 4x the statement for one (the statement
		// itself, 4 bytes of offset and 8 of ID a row, the collector's
		// headroom), 128 MB for four at once (charged 16 MB each, they
		// are planned together).
		bound := 4 * int64(len(text))
		if n > 1 {
			bound = 128_000_000
		}
		if grew > bound {
			t.Errorf("the proxy's RSS grew %.1f MB, bound %.1f MB", float64(grew)/1e6, float64(bound)/1e6)
		}
		db.Close()
		proc.Stop()
	}
}

// A statement whose rows need more than all of limits.plan_memory gets
// 1041 at once, planned Large (RowCost a row) or not (EditRowCost), and
// the session goes on.
func TestManyRowInsertOverBudget(t *testing.T) {
	db := rowsEnv(t, 1<<20)
	ctx := context.Background()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, text := range []string{
		manyRows(120_000), // Large: 120,000 x 16 bytes > 1 MiB
		"INSERT INTO orders (id, v) VALUES (NULL, 'y')" + strings.Repeat(",(NULL,'y')", 20_000-1), // 20,000 x 160 bytes
		"INSERT INTO orders VALUES (NULL, 'y')" + strings.Repeat(",(NULL,'y')", 20_000-1),         // the parser's
	} {
		_, err = c.ExecContext(ctx, text)
		if code, state := myErr(err); code != 1041 || state != "HY000" || !strings.Contains(err.Error(), "raise limits.plan_memory") {
			t.Fatalf("%.40s...: %v, want 1041 naming limits.plan_memory", text, err)
		}
	}
	if _, err := c.ExecContext(ctx, manyRows(50_000)); err != nil { // Large, 800 KB charged
		t.Fatal(err)
	}
	if _, err := c.ExecContext(ctx, "INSERT INTO orders (id, v) VALUES (NULL, 'y')"+strings.Repeat(",(NULL,'y')", 5_000-1)); err != nil { // 800 KB
		t.Fatal(err)
	}
	var rows int
	if err := c.QueryRowContext(ctx, "SELECT COUNT(*) FROM orders").Scan(&rows); err != nil || rows != 55_000 {
		t.Fatalf("%d rows, %v", rows, err)
	}
}

// A Large INSERT (rows as offsets, written in pieces) reports its first
// row's key as insert id and LAST_INSERT_ID(), as AUTO_INCREMENT does, and
// the next INSERT's keys come after its.
func TestLargeInsertKeys(t *testing.T) {
	db := rowsEnv(t, 0)
	ctx := context.Background()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const rows = 60_000 // 360 KB: more than rewriter.LargeRows
	res, err := c.ExecContext(ctx, manyRows(rows))
	if err != nil {
		t.Fatal(err)
	}
	first, err := res.LastInsertId()
	if err != nil {
		t.Fatal(err)
	}
	if n, err := res.RowsAffected(); err != nil || n != rows {
		t.Fatalf("%d rows affected, %v", n, err)
	}
	var lastID, lo, hi, count, distinct int64
	if err := c.QueryRowContext(ctx, "SELECT LAST_INSERT_ID()").Scan(&lastID); err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRowContext(ctx, "SELECT MIN(id), MAX(id), COUNT(*), COUNT(DISTINCT id) FROM orders").Scan(&lo, &hi, &count, &distinct); err != nil {
		t.Fatal(err)
	}
	if first != lo || lastID != lo || count != rows || distinct != rows || hi-lo+1 < rows {
		t.Fatalf("insert id %d, LAST_INSERT_ID() %d; keys %d..%d, %d rows, %d distinct", first, lastID, lo, hi, count, distinct)
	}
	res, err = c.ExecContext(ctx, "INSERT INTO orders (v) VALUES ('z')")
	if err != nil {
		t.Fatal(err)
	}
	if next, _ := res.LastInsertId(); next <= hi {
		t.Fatalf("the next INSERT's key %d is not past the large one's %d", next, hi)
	}
}
