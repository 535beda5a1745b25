package demo

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
	"github.com/leafproxy/leafproxy/service"
)

func backend(t *testing.T, serial bool) *sql.DB {
	t.Helper()
	b, err := startBackend("127.0.0.1:0", serial)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return open(t, "root:@tcp("+b.Addr()+")/")
}

// segmentFetches runs the allocation store's transaction (UPDATE max_id =
// max_id + step, then SELECT, in one transaction) from 8 connections on two
// rows and returns how many segments were handed out twice and the final
// max_ids (2000 each when no update is lost).
func segmentFetches(t *testing.T, db *sql.DB) (dups int, x, y int64) {
	for _, q := range []string{"CREATE DATABASE s", "CREATE TABLE s.a (tag VARCHAR(10) PRIMARY KEY, max_id BIGINT NOT NULL)", "INSERT INTO s.a VALUES ('x', 0), ('y', 0)"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	seen := map[string]map[int64]bool{"x": {}, "y": {}}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tag := []string{"x", "y"}[g%2]
			for range 50 {
				tx, err := db.Begin()
				if err != nil {
					t.Error(err)
					return
				}
				var v int64
				_, err = tx.Exec("UPDATE s.a SET max_id = max_id + 10 WHERE tag = ?", tag)
				if err == nil {
					err = tx.QueryRow("SELECT max_id FROM s.a WHERE tag = ?", tag).Scan(&v)
				}
				if err == nil {
					err = tx.Commit()
				}
				if err != nil {
					tx.Rollback()
					t.Error(err)
					return
				}
				mu.Lock()
				if seen[tag][v] {
					dups++
				}
				seen[tag][v] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	db.QueryRow("SELECT max_id FROM s.a WHERE tag = 'x'").Scan(&x)
	db.QueryRow("SELECT max_id FROM s.a WHERE tag = 'y'").Scan(&y)
	return dups, x, y
}

// TestBackendTransactionsAreSerial: go-mysql-server's memory storage
// loses concurrent transactions' updates (logged, as the reason for the
// wrapper); through the demo's wrapper no segment is handed out twice.
func TestBackendTransactionsAreSerial(t *testing.T) {
	dups, x, y := segmentFetches(t, backend(t, false))
	t.Logf("go-mysql-server alone: %d segments handed out twice, max_id %d and %d of 2000", dups, x, y)
	dups, x, y = segmentFetches(t, backend(t, true))
	if dups != 0 || x != 2000 || y != 2000 {
		t.Fatalf("with the wrapper: %d segments handed out twice, max_id %d and %d, want 0, 2000, 2000", dups, x, y)
	}
}

// TestBackendInsertID: LAST_INSERT_ID(expr) inside an INSERT (what the
// proxy splices) reaches the OK packet's insert id, text and prepared;
// an INSERT that sets no id reports 0, as MySQL does.
func TestBackendInsertID(t *testing.T) {
	db := backend(t, true)
	for _, q := range []string{"CREATE DATABASE shop", "CREATE TABLE shop.t (id BIGINT PRIMARY KEY, v VARCHAR(10))"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, tc := range []struct {
		q    string
		args []any
		want int64
	}{
		{"INSERT INTO shop.t (id, v) VALUES (LAST_INSERT_ID(1001), 'a')", nil, 1001},
		{"INSERT INTO shop.t (id, v) VALUES (5, 'b')", nil, 0},
		{"INSERT INTO shop.t (id, v) VALUES (LAST_INSERT_ID(?), ?)", []any{2002, "c"}, 2002},
	} {
		var res sql.Result
		if tc.args == nil {
			res, err = conn.ExecContext(ctx, tc.q)
		} else {
			stmt, perr := conn.PrepareContext(ctx, tc.q)
			if perr != nil {
				t.Fatal(perr)
			}
			res, err = stmt.ExecContext(ctx, tc.args...)
			stmt.Close()
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.q, err)
		}
		if id, _ := res.LastInsertId(); id != tc.want {
			t.Errorf("%s: insert id %d, want %d", tc.q, id, tc.want)
		}
	}
}

// TestBackendMaxOfEmptyTable: MAX of an empty table's primary key is one
// NULL row (the proxy reads rule tables' largest keys so); go-mysql-server
// with native primary-key indexes returns no row, hence the demo's storage
// without them.
func TestBackendMaxOfEmptyTable(t *testing.T) {
	db := backend(t, true)
	for _, q := range []string{"CREATE DATABASE x", "CREATE TABLE x.t (id BIGINT PRIMARY KEY, v INT)"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	var v sql.NullInt64
	if err := db.QueryRow("SELECT MAX(`id`) FROM `x`.`t`").Scan(&v); err != nil || v.Valid {
		t.Fatalf("MAX(id) of an empty table: %v, %v; want one NULL", v, err)
	}
	if _, err := db.Exec("INSERT INTO x.t VALUES (1, 1)"); err != nil {
		t.Fatal(err)
	}
	var me *mysql.MySQLError
	if _, err := db.Exec("INSERT INTO x.t VALUES (1, 2)"); !errors.As(err, &me) || me.Number != 1062 {
		t.Fatalf("duplicate key: %v, want 1062", err)
	}
}

// TestBackendLockWait: a statement waits for another connection's open
// transaction, and fails with 1205 after LockWaitTimeout; the wait ends
// when the transaction does.
func TestBackendLockWait(t *testing.T) {
	old := LockWaitTimeout
	LockWaitTimeout = 300 * time.Millisecond
	defer func() { LockWaitTimeout = old }()
	b, err := startBackend("127.0.0.1:0", true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	db := open(t, "root:@tcp("+b.Addr()+")/")
	for _, q := range []string{"CREATE DATABASE x", "CREATE TABLE x.t (id BIGINT PRIMARY KEY)"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("INSERT INTO x.t VALUES (0)"); err != nil {
		t.Fatal(err)
	}
	var me *mysql.MySQLError
	start := time.Now()
	if _, err := db.Exec("SELECT 1"); !errors.As(err, &me) || me.Number != 1205 || time.Since(start) < 250*time.Millisecond {
		t.Fatalf("statement during another's transaction: %v after %v, want 1205 after 300ms", err, time.Since(start))
	}
	// The transaction goes on meanwhile (its own statements do not wait).
	if _, err := tx.Exec("INSERT INTO x.t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := db.Exec("INSERT INTO x.t VALUES (2)"); done <- err }()
	// Commit once the INSERT waits for the transaction, so that it is the
	// commit that lets it through.
	testwait.For(t, "the INSERT to wait for the transaction", func() bool {
		select {
		case err := <-done:
			t.Fatalf("INSERT during another's transaction did not wait: %v", err)
		default:
		}
		return b.serial.waiting.Load() == 1
	})
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("statement after the commit: %v", err)
	}
	var n int
	db.QueryRow("SELECT COUNT(*) FROM x.t").Scan(&n)
	if n != 3 {
		t.Fatalf("%d rows, want 3", n)
	}
}

// TestBackendLoginWithPassword: the proxy logs in to go-mysql-server with
// a password-checked mysql_native_password account (the demo's own
// backend has no user table and accepts any login), serves NEXTVAL and
// fills keys; a wrong backend password is refused (1045).
func TestBackendLoginWithPassword(t *testing.T) {
	b, err := StartBackend("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	mdb := b.engine.Analyzer.Catalog.MySQLDb
	ed := mdb.Editor()
	mdb.AddSuperUser(ed, "leaf", "%", "pw")
	ed.Close()
	if err := createSchema(context.Background(), "leaf:pw@tcp("+b.Addr()+")/"); err != nil {
		t.Fatal(err)
	}
	var me *mysql.MySQLError
	if err := open(t, "leaf:wrong@tcp("+b.Addr()+")/").Ping(); !errors.As(err, &me) || me.Number != 1045 {
		t.Fatalf("wrong password directly: %v, want 1045", err)
	}
	for _, tc := range []struct {
		password string
		ok       bool
	}{{"pw", true}, {"wrong", false}} {
		cfg := Config("127.0.0.1:0", b.Addr())
		cfg.Backend.User, cfg.Backend.Password = "leaf", tc.password
		svc, err := service.New(context.Background(), cfg, nil)
		if err != nil {
			if tc.ok {
				t.Fatal(err)
			}
			continue // refused at start: the store cannot be reached either
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			svc.Close()
			t.Fatal(err)
		}
		go svc.Serve(context.Background(), l)
		db := open(t, User+":"+Password+"@tcp("+l.Addr().String()+")/shop")
		res, err := db.Exec("INSERT INTO orders (item) VALUES ('x')")
		if tc.ok {
			if err != nil {
				t.Fatalf("backend account leaf/pw: %v", err)
			}
			if id, _ := res.LastInsertId(); id < 1 {
				t.Fatalf("insert id %d", id)
			}
		} else if !errors.As(err, &me) || me.Number != 1045 {
			t.Fatalf("wrong backend password: %v, want the backend's 1045", err)
		}
		db.Close()
		if err := svc.Close(); err != nil { // waits for Serve
			t.Errorf("Close: %v", err)
		}
	}
}
