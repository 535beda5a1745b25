package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
)

// explicitEnv: rule table app.orders filled from segment tag "order"
// (step 100), behind a proxy with event loops on (loops true) or off.
func explicitEnv(t *testing.T, loops bool) (*testdb.Server, *leaf) {
	backend := testdb.Start(t)
	backend.Open(t, "app")
	backend.Exec(t, "CREATE TABLE app.orders (id BIGINT PRIMARY KEY, v VARCHAR(64))")
	cfg := leafConfig(t, backend, nil)
	cfg.Sequences.Tags = map[string]config.Tag{"order": {Generator: "segment", Step: 100}}
	cfg.Tables = []config.Table{{Table: "app.orders", Column: "id", Tag: "order"}}
	if !loops {
		cfg.EventLoops = -1
	}
	return backend, startLeaf(t, cfg)
}

// TestExplicitKeyMovesTag: a key written explicitly through the proxy moves
// the tag past it, as it moves AUTO_INCREMENT's counter: the next generated
// key does not collide with it, inside the buffered segment and far beyond
// it (where the store itself is raised).
func TestExplicitKeyMovesTag(t *testing.T) {
	for _, loops := range []bool{true, false} {
		t.Run(fmt.Sprintf("loops=%v", loops), func(t *testing.T) {
			backend, lf := explicitEnv(t, loops)
			db := lf.open(t, "app", map[string]string{"interpolateParams": "true"})
			ctx := context.Background()
			insert := func(q string) int64 {
				t.Helper()
				res, err := db.ExecContext(ctx, q)
				if err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				id, _ := res.LastInsertId()
				return id
			}
			first := insert("INSERT INTO orders (v) VALUES ('a')")
			insert(fmt.Sprintf("INSERT INTO orders (id, v) VALUES (%d, 'explicit-near')", first+5))
			if id := insert("INSERT INTO orders (v) VALUES ('b')"); id <= first+5 {
				t.Fatalf("generated %d after the explicit key %d", id, first+5)
			}
			insert("INSERT INTO orders (id, v) VALUES ('7000000', 'explicit-far')")
			if id := insert("INSERT INTO orders (v) VALUES ('c')"); id <= 7000000 {
				t.Fatalf("generated %d after the explicit key 7000000", id)
			}
			direct := backend.Open(t, "app")
			if n := scalar[int](t, direct, "SELECT COUNT(*) FROM orders"); n != 5 {
				t.Fatalf("%d rows, want 5", n)
			}
		})
	}
}

// TestDuplicateGeneratedKeyRetried: keys written around the proxy (a bulk
// import straight to the database) collide with the tag's next keys; the
// proxy moves the tag past the table's largest key and sends the INSERT
// again, once, instead of failing with 1062; inside a transaction too.
func TestDuplicateGeneratedKeyRetried(t *testing.T) {
	for _, loops := range []bool{true, false} {
		t.Run(fmt.Sprintf("loops=%v", loops), func(t *testing.T) {
			backend, lf := explicitEnv(t, loops)
			db := lf.open(t, "app", map[string]string{"interpolateParams": "true"})
			ctx := context.Background()
			res, err := db.ExecContext(ctx, "INSERT INTO orders (v) VALUES ('first')")
			if err != nil {
				t.Fatal(err)
			}
			first, _ := res.LastInsertId()
			// The import: the next 3,000 keys, written around the proxy.
			backend.Exec(t, fmt.Sprintf("INSERT INTO app.orders (id, v) SELECT %d + seq, CONCAT('import', seq) FROM app.seq_1_to_3000", first))
			before := lf.svc.Engine.Stats().DuplicateKeyRetries

			res, err = db.ExecContext(ctx, "INSERT INTO orders (v) VALUES ('after-import'), ('after-import-2')")
			if err != nil {
				t.Fatalf("INSERT after the import: %v", err)
			}
			if id, _ := res.LastInsertId(); id <= first+3000 {
				t.Fatalf("generated %d, inside the imported keys", id)
			}
			if got := lf.svc.Engine.Stats().DuplicateKeyRetries - before; got != 1 {
				t.Fatalf("%d retries counted, want 1", got)
			}

			// In a transaction: the failed statement is rolled back by the
			// server, the transaction goes on and commits both rows.
			last := scalar[int64](t, backend.Open(t, "app"), "SELECT MAX(id) FROM orders")
			backend.Exec(t, fmt.Sprintf("INSERT INTO app.orders (id, v) SELECT %d + seq, CONCAT('import2-', seq) FROM app.seq_1_to_500", last))
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec("INSERT INTO orders (v) VALUES ('in-tx-1')"); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec("INSERT INTO orders (v) VALUES ('in-tx-2')"); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			direct := backend.Open(t, "app")
			if n := scalar[int](t, direct, "SELECT COUNT(*) FROM orders WHERE v LIKE 'in-tx-%'"); n != 2 {
				t.Fatalf("%d rows of the transaction, want 2", n)
			}
			if n := scalar[int](t, direct, "SELECT COUNT(*) - COUNT(DISTINCT id) FROM orders"); n != 0 {
				t.Fatalf("%d duplicate keys", n)
			}

			// Several statements in one text are not retried: the 1062 is
			// the client's.
			last = scalar[int64](t, direct, "SELECT MAX(id) FROM orders")
			backend.Exec(t, fmt.Sprintf("INSERT INTO app.orders (id, v) SELECT %d + seq, CONCAT('import3-', seq) FROM app.seq_1_to_500", last))
			multi := lf.open(t, "app", map[string]string{"interpolateParams": "true", "multiStatements": "true"})
			_, err = multi.ExecContext(ctx, "INSERT INTO orders (v) VALUES ('m1'); INSERT INTO orders (v) VALUES ('m2')")
			if code, _ := myErr(err); code != 1062 {
				t.Fatalf("multi-statement text: err %v, want the server's 1062", err)
			}
		})
	}
}

// TestOtherErrorsRelayed: a filled INSERT that fails on something else
// (a duplicate in another unique column, an unknown column) gets the
// server's error as it is, not retried, and the session goes on; on the
// event loop and off it.
func TestOtherErrorsRelayed(t *testing.T) {
	for _, loops := range []bool{true, false} {
		t.Run(fmt.Sprintf("loops=%v", loops), func(t *testing.T) {
			backend, lf := explicitEnv(t, loops)
			backend.Exec(t, "ALTER TABLE app.orders ADD UNIQUE KEY (v)")
			db := lf.open(t, "app", map[string]string{"interpolateParams": "true"})
			conn, err := db.Conn(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			ctx := context.Background()
			before := lf.svc.Engine.Stats().DuplicateKeyRetries
			for i := range 3 {
				if _, err := conn.ExecContext(ctx, "INSERT INTO orders (v) VALUES ('same')"); i > 0 {
					if code, _ := myErr(err); code != 1062 || !strings.Contains(err.Error(), "'same'") {
						t.Fatalf("duplicate v: %v, want the server's 1062 on 'same'", err)
					}
				} else if err != nil {
					t.Fatal(err)
				}
			}
			if _, err := conn.ExecContext(ctx, "INSERT INTO orders (nope) VALUES (1)"); err == nil {
				t.Fatal("unknown column: no error")
			}
			if got := lf.svc.Engine.Stats().DuplicateKeyRetries - before; got != 0 {
				t.Fatalf("%d retries for errors on other columns", got)
			}
			if n := scalar[int](t, conn, "SELECT COUNT(*) FROM orders"); n != 1 {
				t.Fatalf("%d rows, want 1", n)
			}
		})
	}
}

// TestDuplicateGeneratedKeyRetriedPrepared: as TestDuplicateGeneratedKeyRetried,
// for a server-side prepared INSERT (issue 28, item 9): the EXECUTE whose
// generated key collides with keys written around the proxy is executed
// once more with fresh keys, on the event loop and off it; a bound key
// that collides is the client's 1062.
func TestDuplicateGeneratedKeyRetriedPrepared(t *testing.T) {
	for _, loops := range []bool{true, false} {
		t.Run(fmt.Sprintf("loops=%v", loops), func(t *testing.T) {
			backend, lf := explicitEnv(t, loops)
			db := lf.open(t, "app", nil) // prepared statements: interpolateParams off
			ctx := context.Background()
			stmt, err := db.PrepareContext(ctx, "INSERT INTO orders (id, v) VALUES (?, ?)")
			if err != nil {
				t.Fatal(err)
			}
			defer stmt.Close()
			res, err := stmt.ExecContext(ctx, nil, "first")
			if err != nil {
				t.Fatal(err)
			}
			first, _ := res.LastInsertId()
			backend.Exec(t, fmt.Sprintf("INSERT INTO app.orders (id, v) SELECT %d + seq, CONCAT('import', seq) FROM app.seq_1_to_3000", first))
			before := lf.svc.Engine.Stats().DuplicateKeyRetries
			res, err = stmt.ExecContext(ctx, nil, "after-import")
			if err != nil {
				t.Fatalf("EXECUTE after the import: %v", err)
			}
			if id, _ := res.LastInsertId(); id <= first+3000 {
				t.Fatalf("generated %d, inside the imported keys", id)
			}
			if got := lf.svc.Engine.Stats().DuplicateKeyRetries - before; got != 1 {
				t.Fatalf("%d retries counted, want 1", got)
			}
			if _, err := stmt.ExecContext(ctx, first+10, "bound-dup"); func() uint16 { c, _ := myErr(err); return c }() != 1062 {
				t.Fatalf("a bound key that collides: %v, want 1062", err)
			}
			direct := backend.Open(t, "app")
			if n := scalar[int](t, direct, "SELECT COUNT(*) FROM orders"); n != 3002 {
				t.Fatalf("%d rows, want 3002", n)
			}
		})
	}
}
