package proxy

import (
	"context"
	"database/sql"
	"strings"
	"testing"
)

// A client that compresses its leg gets a compressed backend session: the
// server reports Compression ON to it, OFF to a plain client, and data of
// every shape crosses both compressed legs intact.
func TestCompressionReachesBackend(t *testing.T) {
	needsMariaDB(t, "compression to the backend, seen in its Compression status variable")
	t.Parallel()
	ensureDB(t, sharedDB(t), "compbe")
	sharedDB(t).Exec(t, "DROP TABLE IF EXISTS compbe.t", "CREATE TABLE compbe.t (id INT PRIMARY KEY, s LONGTEXT)")
	e := startProxy(t, sharedDB(t).Addr, nil)
	status := func(params string) string {
		t.Helper()
		var name, v string
		if err := e.open(t, "compbe", params).QueryRow("SHOW SESSION STATUS LIKE 'Compression'").Scan(&name, &v); err != nil {
			t.Fatalf("%s: %v", params, err)
		}
		return v
	}
	if v := status("compress=true"); v != "ON" {
		t.Errorf("compressed client: Compression %s, want ON", v)
	}
	if v := status(""); v != "OFF" {
		t.Errorf("plain client: Compression %s, want OFF", v)
	}

	db := e.open(t, "compbe", "compress=true&multiStatements=true")
	ctx := context.Background()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	big := strings.Repeat("0123456789abcdef", 1<<17) // 2 MiB: several frames each way
	if _, err := c.ExecContext(ctx, "INSERT INTO t VALUES (1, ?)", big); err != nil {
		t.Fatalf("prepared insert: %v", err)
	}
	if _, err := c.ExecContext(ctx, "INSERT INTO t VALUES (2, '"+big+"')"); err != nil {
		t.Fatalf("text insert: %v", err)
	}
	var s string
	for id := 1; id <= 2; id++ {
		if err := c.QueryRowContext(ctx, "SELECT s FROM t WHERE id = ?", id).Scan(&s); err != nil || s != big {
			t.Fatalf("row %d read back: %v (len %d)", id, err, len(s))
		}
	}
	// Many small responses in a row (each command restarts the frame
	// sequence), several result sets in one response, and statements the
	// proxy runs on the backend leg itself (a KILL's expression).
	for i := range 200 {
		var v int
		if err := c.QueryRowContext(ctx, "SELECT ?", i).Scan(&v); err != nil || v != i {
			t.Fatalf("small query %d: %d, %v", i, v, err)
		}
	}
	rows, err := c.QueryContext(ctx, "SELECT 1; SELECT 2, 3")
	if err != nil {
		t.Fatal(err)
	}
	sets := 0
	for more := true; more; more = rows.NextResultSet() {
		for rows.Next() {
		}
		sets++
	}
	rows.Close()
	if sets != 2 {
		t.Errorf("multi-statement: %d result sets, want 2", sets)
	}
	if code, msg := killAnswer(t, c, "KILL 4294967295 + 1", false); code != 1094 || msg != "Unknown thread id: 4294967296" {
		t.Errorf("KILL by expression over compressed legs: %d %s", code, msg)
	}
	var n int
	if err := c.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.COLUMNS").Scan(&n); err != nil || n == 0 {
		t.Fatalf("large result: %d, %v", n, err)
	}
}

// In backend-account mode too (the backend logs the client in, on a leg
// that then compresses), also for an admin, whose confirmation query is
// the compressed leg's first command.
func TestCompressionReachesBackendAccounts(t *testing.T) {
	b := passThroughBackend(t)
	e := startProxy(t, b.Addr, func(c *testConfig) {
		c.Users = nil
		c.Admins = []string{"root"}
	})
	for _, a := range []struct{ user, pass string }{{"root", ""}, {"ptu2", "x"}} {
		for params, want := range map[string]string{"compress=true": "ON", "": "OFF"} {
			db, err := sql.Open("mysql", e.dsn(a.user, a.pass, "", params))
			if err != nil {
				t.Fatal(err)
			}
			var name, v, cur string
			if err := db.QueryRow("SHOW SESSION STATUS LIKE 'Compression'").Scan(&name, &v); err != nil {
				t.Fatalf("%s %q: %v", a.user, params, err)
			}
			if v != want {
				t.Errorf("%s %q: Compression %s, want %s", a.user, params, v, want)
			}
			big := strings.Repeat("x", 1<<20)
			if err := db.QueryRow("SELECT CONCAT(CURRENT_USER(), LENGTH(?))", big).Scan(&cur); err != nil || !strings.HasPrefix(cur, a.user+"@") || !strings.HasSuffix(cur, "1048576") {
				t.Errorf("%s %q: %q, %v", a.user, params, cur, err)
			}
			db.Close()
		}
	}
}
