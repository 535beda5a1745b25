package integration

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
)

// selectEnv: rule tables app.orders (segment tag "order") and app.msgs
// (snowflake tag "msg"), their AUTO_INCREMENT twin app.ai, a source table
// app.src of 50 rows (n = 1..50), and app.plain without a rule.
func selectEnv(t *testing.T) (*testdb.Server, *config.Config, *leaf) {
	backend := testdb.Start(t)
	backend.Open(t, "app")
	backend.Exec(t,
		"CREATE TABLE app.orders (id BIGINT PRIMARY KEY, v VARCHAR(64), n INT DEFAULT 0, UNIQUE KEY (v))",
		"CREATE TABLE app.ai (id BIGINT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(64), n INT DEFAULT 0, UNIQUE KEY (v))",
		"CREATE TABLE app.msgs (id BIGINT PRIMARY KEY, v VARCHAR(64))",
		"CREATE TABLE app.src (n INT PRIMARY KEY, v VARCHAR(64), k BIGINT)",
		"INSERT INTO app.src (n, v) SELECT seq, CONCAT('s', seq) FROM app.seq_1_to_50",
		"CREATE TABLE app.plain (id BIGINT AUTO_INCREMENT PRIMARY KEY, k BIGINT, v VARCHAR(64))",
	)
	cfg := leafConfig(t, backend, nil)
	cfg.Sequences.Tags = map[string]config.Tag{
		"order": {Generator: "segment", Step: 1000},
		"msg":   {Generator: "snowflake"},
		"other": {Generator: "segment", Step: 10},
	}
	cfg.Snowflake.WorkerID = "3"
	cfg.Tables = []config.Table{
		{Table: "app.orders", Column: "id", Tag: "order"},
		{Table: "app.msgs", Column: "id", Tag: "msg"},
	}
	return backend, cfg, startLeaf(t, cfg)
}

func scalar[T any](t *testing.T, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, query string, args ...any) T {
	t.Helper()
	var v T
	if err := q.QueryRowContext(context.Background(), query, args...).Scan(&v); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return v
}

// TestInsertSelectFillsKeys: INSERT ... SELECT into a rule table gives
// every row its own key, reports the affected rows and the first key as
// AUTO_INCREMENT does (compared with the same statement on an
// AUTO_INCREMENT twin), keeps the SELECT's ORDER BY as the keys' order,
// fills NULL keys the SELECT gives and moves the tag past explicit ones.
func TestInsertSelectFillsKeys(t *testing.T) {
	backend, _, lf := selectEnv(t)
	direct := backend.Open(t, "app")
	ctx := context.Background()
	db := lf.open(t, "app", map[string]string{"interpolateParams": "true"})
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	// Absent key, all rows; the same statement on the AUTO_INCREMENT twin.
	res, err := conn.ExecContext(ctx, "INSERT INTO orders (v, n) SELECT v, n FROM src WHERE n <= 20")
	if err != nil {
		t.Fatal(err)
	}
	aiRes, err := direct.Exec("INSERT INTO ai (v, n) SELECT v, n FROM src WHERE n <= 20")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := res.RowsAffected()
	want, _ := aiRes.RowsAffected()
	if got != want || got != 20 {
		t.Fatalf("affected rows %d through the proxy, %d with AUTO_INCREMENT", got, want)
	}
	first, _ := res.LastInsertId()
	if min := scalar[int64](t, direct, "SELECT MIN(id) FROM orders"); first != min || first <= 0 {
		t.Fatalf("LastInsertId %d, smallest key %d", first, min)
	}
	if li := scalar[int64](t, conn, "SELECT LAST_INSERT_ID()"); li != first {
		t.Fatalf("LAST_INSERT_ID() %d, OK packet %d", li, first)
	}
	if n := scalar[int](t, direct, "SELECT COUNT(DISTINCT id) FROM orders WHERE id > 0"); n != 20 {
		t.Fatalf("%d distinct keys for 20 rows", n)
	}

	// ORDER BY: keys ascend in the SELECT's order, as AUTO_INCREMENT's.
	if _, err := conn.ExecContext(ctx, "INSERT INTO orders (v, n) SELECT CONCAT('d', v), n FROM src WHERE n > 40 ORDER BY n DESC"); err != nil {
		t.Fatal(err)
	}
	rows, err := direct.Query("SELECT n FROM orders WHERE v LIKE 'd%' ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	prev := 1 << 30
	count := 0
	for rows.Next() {
		var n int
		rows.Scan(&n)
		if n >= prev {
			t.Fatalf("keys do not follow ORDER BY n DESC: n %d after %d", n, prev)
		}
		prev = n
		count++
	}
	rows.Close()
	if count != 10 {
		t.Fatalf("%d rows with ORDER BY", count)
	}

	// The SELECT gives the key: NULL is filled, explicit keys stay and
	// move the tag past the largest (the next generated key is above it).
	if _, err := conn.ExecContext(ctx, "INSERT INTO orders (id, v) SELECT IF(n % 2 = 0, NULL, 5000000 + n), CONCAT('k', v) FROM src WHERE n <= 10"); err != nil {
		t.Fatal(err)
	}
	if n := scalar[int](t, direct, "SELECT COUNT(*) FROM orders WHERE v LIKE 'k%' AND id = 5000000 + CAST(SUBSTRING(v, 3) AS UNSIGNED)"); n != 5 {
		t.Fatalf("%d explicit keys kept, want 5", n)
	}
	if n := scalar[int](t, direct, "SELECT COUNT(DISTINCT id) FROM orders WHERE v LIKE 'k%' AND id > 0"); n != 10 {
		t.Fatalf("%d distinct keys for 10 rows (5 filled)", n)
	}
	res, err = conn.ExecContext(ctx, "INSERT INTO orders (v) VALUES ('after-explicit')")
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := res.LastInsertId(); id <= 5000009 {
		t.Fatalf("key %d after the explicit key 5000009: the tag did not move past it", id)
	}

	// No column list: the table's columns, the key NULL in the SELECT.
	if _, err := conn.ExecContext(ctx, "INSERT INTO orders SELECT NULL, CONCAT('z', v), n FROM src WHERE n <= 3"); err != nil {
		t.Fatal(err)
	}
	if n := scalar[int](t, direct, "SELECT COUNT(*) FROM orders WHERE v LIKE 'z%' AND id > 0"); n != 3 {
		t.Fatalf("%d rows without column list", n)
	}

	// Atomic: a failing row (duplicate v) writes nothing; a rolled-back
	// transaction keeps nothing.
	before := scalar[int](t, direct, "SELECT COUNT(*) FROM orders")
	_, err = conn.ExecContext(ctx, "INSERT INTO orders (v) SELECT IF(n = 30, 's1', CONCAT('x', v)) FROM src ORDER BY n")
	if code, _ := myErr(err); code != 1062 {
		t.Fatalf("duplicate v: err %v, want 1062", err)
	}
	if after := scalar[int](t, direct, "SELECT COUNT(*) FROM orders"); after != before {
		t.Fatalf("failed INSERT ... SELECT left %d rows", after-before)
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("INSERT INTO orders (v) SELECT CONCAT('t', v) FROM src"); err != nil {
		t.Fatal(err)
	}
	if n := scalar[int](t, tx, "SELECT COUNT(*) FROM orders WHERE v LIKE 't%'"); n != 50 {
		t.Fatalf("inside the transaction %d rows", n)
	}
	tx.Rollback()
	if n := scalar[int](t, direct, "SELECT COUNT(*) FROM orders WHERE v LIKE 't%'"); n != 0 {
		t.Fatalf("rolled back, %d rows remain", n)
	}

	// Snowflake keys, RETURNING.
	rs, err := conn.QueryContext(ctx, "INSERT INTO msgs (v) SELECT v FROM src RETURNING id")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for rs.Next() {
		var id int64
		rs.Scan(&id)
		if id <= 0 || id>>12&1023 != 3 || seen[id] {
			t.Fatalf("snowflake key %d (worker %d) repeated or wrong", id, id>>12&1023)
		}
		seen[id] = true
	}
	rs.Close()
	if len(seen) != 50 {
		t.Fatalf("RETURNING gave %d keys", len(seen))
	}
}

// TestNextvalPerRow: NEXTVAL in UPDATE ... SET and in the select list of
// INSERT ... SELECT gives one value per row, as MariaDB's own sequences
// do, and LASTVAL is the last of them.
func TestNextvalPerRow(t *testing.T) {
	backend, _, lf := selectEnv(t)
	direct := backend.Open(t, "app")
	ctx := context.Background()
	db := lf.open(t, "app", map[string]string{"interpolateParams": "true"})
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	res, err := conn.ExecContext(ctx, "UPDATE src SET k = NEXTVAL('other') WHERE n <= 5 ORDER BY n")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 5 {
		t.Fatalf("UPDATE affected %d rows", n)
	}
	if n := scalar[int](t, direct, "SELECT COUNT(DISTINCT k) FROM src WHERE n <= 5"); n != 5 {
		t.Fatalf("5 rows got %d distinct values", n)
	}
	maxK := scalar[int64](t, direct, "SELECT MAX(k) FROM src")
	if last := scalar[int64](t, conn, "SELECT LASTVAL('other')"); last != maxK {
		t.Fatalf("LASTVAL %d, last value given %d", last, maxK)
	}
	if next := scalar[int64](t, conn, "SELECT NEXTVAL('other')"); next <= maxK {
		t.Fatalf("NEXTVAL %d after the UPDATE's %d", next, maxK)
	}

	if _, err := conn.ExecContext(ctx, "INSERT INTO plain (k, v) SELECT NEXTVAL(other), v FROM src"); err != nil {
		t.Fatal(err)
	}
	if n := scalar[int](t, direct, "SELECT COUNT(DISTINCT k) FROM plain"); n != 50 {
		t.Fatalf("INSERT ... SELECT NEXTVAL: %d distinct values for 50 rows", n)
	}
	if n := scalar[int](t, direct, "SELECT COUNT(*) FROM plain p JOIN src s ON p.k = s.k"); n != 0 {
		t.Fatalf("%d values of the INSERT repeat the UPDATE's", n)
	}
}

// TestInsertSelectConcurrentUnique: sessions on two proxies copy rows with
// INSERT ... SELECT (some whose SELECT gives other rows on every run,
// which makes the count fall short and the statement be counted again)
// while others insert single rows; every key is distinct.
func TestInsertSelectConcurrentUnique(t *testing.T) {
	backend, cfg, lf := selectEnv(t)
	cfg2 := leafConfig(t, backend, nil)
	cfg2.Sequences.Tags, cfg2.Tables, cfg2.Snowflake.WorkerID = cfg.Sequences.Tags, cfg.Tables, "4"
	lf2 := startLeaf(t, cfg2)
	backend.Exec(t, "ALTER TABLE app.orders DROP INDEX v")
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 8 {
		p := lf
		if i%2 == 1 {
			p = lf2
		}
		db := p.open(t, "app", map[string]string{"interpolateParams": "true"})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 15 {
				var q string
				switch j % 3 {
				case 0:
					q = "INSERT INTO orders (v) SELECT v FROM src"
				case 1:
					q = "INSERT INTO orders (v) SELECT CONCAT('r', seq) FROM seq_1_to_200 WHERE RAND() < 0.5"
				default:
					q = fmt.Sprintf("INSERT INTO orders (v) VALUES ('single-%d-%d')", i, j)
				}
				if _, err := db.ExecContext(ctx, q); err != nil {
					errs <- fmt.Errorf("%s: %w", q, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	direct := backend.Open(t, "app")
	total := scalar[int](t, direct, "SELECT COUNT(*) FROM orders")
	if distinct := scalar[int](t, direct, "SELECT COUNT(DISTINCT id) FROM orders"); distinct != total || total < 8*5*50 {
		t.Fatalf("%d rows, %d distinct keys", total, distinct)
	}
}

// TestInsertSelectPrepared: the same through the binary protocol: the
// client's parameters reach the count and the statement, a statement
// prepared once is executed many times with fresh keys each time, the
// count statements the proxy prepares beside the client's are closed with
// them (the backend's prepared-statement count does not grow).
func TestInsertSelectPrepared(t *testing.T) {
	backend, _, lf := selectEnv(t)
	direct := backend.Open(t, "app")
	ctx := context.Background()
	db := lf.open(t, "app", nil) // go-sql-driver prepares statements with arguments
	res, err := db.ExecContext(ctx, "INSERT INTO orders (v, n) SELECT v, n FROM src WHERE n <= ? ORDER BY n DESC", 10)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 10 {
		t.Fatalf("affected %d", n)
	}
	first, _ := res.LastInsertId()
	if got := scalar[int](t, direct, "SELECT n FROM orders WHERE id = ?", first); got != 10 {
		t.Fatalf("first key %d holds n=%d, want 10 (ORDER BY n DESC)", first, got)
	}
	stmt, err := db.PrepareContext(ctx, "INSERT INTO orders (id, v, n) SELECT IF(n = ?, ?, NULL), CONCAT(?, v), n FROM src WHERE n > ? AND n <= ?")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		lo := 10 + 10*i
		if _, err := stmt.ExecContext(ctx, lo+1, 9000000+100*i, fmt.Sprintf("p%d-", i), lo, lo+10); err != nil {
			t.Fatalf("execute %d: %v", i, err)
		}
	}
	stmt.Close()
	if n := scalar[int](t, direct, "SELECT COUNT(DISTINCT id) FROM orders WHERE v LIKE 'p%'"); n != 40 {
		t.Fatalf("%d distinct keys for 40 rows", n)
	}
	if n := scalar[int](t, direct, "SELECT COUNT(*) FROM orders WHERE id IN (9000000, 9000100, 9000200, 9000300)"); n != 4 {
		t.Fatalf("%d explicit keys kept, want 4", n)
	}
	if n := scalar[int](t, direct, "SELECT COUNT(*) FROM orders WHERE v LIKE 'p3-%' AND id > 9000300"); n != 9 {
		t.Fatalf("%d generated keys of the last execute above its explicit key, want 9", n)
	}
	_, err = db.ExecContext(ctx, "UPDATE src SET k = NEXTVAL(other) WHERE n > ?", 45)
	if err != nil {
		t.Fatal(err)
	}
	if n := scalar[int](t, direct, "SELECT COUNT(DISTINCT k) FROM src WHERE n > 45"); n != 5 {
		t.Fatalf("prepared UPDATE NEXTVAL: %d distinct values for 5 rows", n)
	}
	prepared := func() int {
		var name string
		var v int
		if err := direct.QueryRow("SHOW GLOBAL STATUS LIKE 'Prepared_stmt_count'").Scan(&name, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	before := prepared()
	for i := range 20 {
		if _, err := conn.ExecContext(ctx, "INSERT INTO orders (v) SELECT CONCAT('c', ?, v) FROM src WHERE n = 1", i); err != nil {
			t.Fatal(err)
		}
	}
	if after := prepared(); after > before+2 {
		t.Fatalf("prepared statements on the backend grew from %d to %d", before, after)
	}
}

// TestInsertSelectRecount: a SELECT that gives more rows each time it runs
// (its bound grows with a session variable) outgrows the proxy's count;
// the attempt fails before anything is written and is counted again with
// more room, until it fits; on a non-transactional (MyISAM) table the
// proxy does not send it again and says why.
func TestInsertSelectRecount(t *testing.T) {
	backend, _, lf := selectEnv(t)
	backend.Exec(t, "CREATE TABLE app.mi (id BIGINT PRIMARY KEY, v VARCHAR(64)) ENGINE=MyISAM")
	direct := backend.Open(t, "app")
	ctx := context.Background()
	db := lf.open(t, "app", map[string]string{"interpolateParams": "true"})
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	before := lf.svc.Engine.Stats().NumberedRetries
	grow := "INSERT INTO orders (v) SELECT CONCAT('g', v) FROM src WHERE n <= (SELECT @grow := IFNULL(@grow, 0) + 5)"
	res, err := conn.ExecContext(ctx, grow)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := res.RowsAffected()
	retries := lf.svc.Engine.Stats().NumberedRetries - before
	if retries < 1 || n < 10 {
		t.Fatalf("%d rows after %d recounts: the SELECT grows between count and insert, want at least one recount", n, retries)
	}
	if got := scalar[int](t, direct, "SELECT COUNT(DISTINCT id) FROM orders WHERE v LIKE 'g%'"); int64(got) != n {
		t.Fatalf("%d rows reported, %d stored with distinct keys (a failed attempt left rows?)", n, got)
	}

	// NEXTVAL under DISTINCT: the count (NEXTVAL read as 0) sees one row,
	// the statement 50 (every NEXTVAL differs, as with MariaDB's own
	// sequences): recounted until the room fits.
	before = lf.svc.Engine.Stats().NumberedRetries
	distinct := "INSERT INTO plain (k, v) SELECT DISTINCT NEXTVAL(other), 'same' FROM src"
	if _, err := conn.ExecContext(ctx, distinct); err != nil {
		t.Fatalf("NEXTVAL under DISTINCT into an InnoDB table: %v", err)
	}
	if n := scalar[int](t, direct, "SELECT COUNT(DISTINCT k) FROM plain WHERE v = 'same'"); n != 50 {
		t.Fatalf("%d distinct values for 50 rows", n)
	}
	if got := lf.svc.Engine.Stats().NumberedRetries - before; got < 2 {
		t.Fatalf("%d recounts, want at least 2 (room 16, 32, then 64 >= 50)", got)
	}
	// Through the proxy: its DDL drops what the proxy knew of the table.
	if _, err := conn.ExecContext(ctx, "ALTER TABLE plain ENGINE=MyISAM"); err != nil {
		t.Fatal(err)
	}
	_, err = conn.ExecContext(ctx, distinct)
	if err == nil || !strings.Contains(err.Error(), "not transactional") {
		t.Fatalf("growing SELECT into a MyISAM table: %v, want an error saying it is not transactional", err)
	}
}
