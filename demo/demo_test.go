package demo

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// startDemo runs the demo on free loopback ports until the test ends and
// returns it with its intro text.
func startDemo(t *testing.T) (*Demo, string) {
	t.Helper()
	d, err := Start(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- d.Serve(context.Background()) }()
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := <-done; err != nil { // Close returns after Serve
			t.Errorf("Serve: %v", err)
		}
	})
	var intro bytes.Buffer
	d.Intro(&intro, "test")
	return d, intro.String()
}

func open(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

var connectLine = regexp.MustCompile(`(?m)^\s*(mariadb -h(\S+) -P(\d+) -u(\S+) -p(\S+) shop)\s*$`)

// TestDemoThroughProxy: the demo started in-process on free ports answers
// a go-sql-driver client through the proxy: NEXTVAL values increase and
// are distinct, an INSERT without the key gets a generated one that
// LastInsertId reports, and the printed command line names the proxy's
// port, not the backend's.
func TestDemoThroughProxy(t *testing.T) {
	d, intro := startDemo(t)
	m := connectLine.FindStringSubmatch(intro)
	if m == nil {
		t.Fatalf("no mariadb command line in the intro:\n%s", intro)
	}
	_, port, _ := net.SplitHostPort(d.Addr())
	_, bport, _ := net.SplitHostPort(d.Backend.Addr())
	if m[2] != "127.0.0.1" || m[3] != port || m[4] != User || m[5] != Password || port == bport {
		t.Fatalf("connect line %q: want host 127.0.0.1, port %s (the proxy; backend %s), -u%s -p%s", m[1], port, bport, User, Password)
	}
	for _, want := range []string{"SELECT NEXTVAL('order')", "INSERT INTO orders (item)", "SELECT LAST_INSERT_ID()", "SELECT * FROM orders", d.DSN()} {
		if !strings.Contains(intro, want) {
			t.Errorf("intro lacks %q:\n%s", want, intro)
		}
	}
	db := open(t, User+":"+Password+"@tcp(127.0.0.1:"+m[3]+")/shop")

	var last int64
	seen := map[int64]bool{}
	for i := range 250 { // more than two segments of step 100
		var v int64
		if err := db.QueryRow("SELECT NEXTVAL('order')").Scan(&v); err != nil {
			t.Fatalf("NEXTVAL #%d: %v", i, err)
		}
		if v <= last || seen[v] {
			t.Fatalf("NEXTVAL #%d = %d after %d", i, v, last)
		}
		seen[v], last = true, v
	}

	res, err := db.Exec("INSERT INTO orders (item) VALUES ('book')")
	if err != nil {
		t.Fatal(err)
	}
	id, _ := res.LastInsertId()
	var stored int64
	if err := db.QueryRow("SELECT id FROM orders WHERE item = 'book'").Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if id != stored || id <= last {
		t.Fatalf("LastInsertId %d, stored key %d (want equal, above the last NEXTVAL %d)", id, stored, last)
	}

	// Multi-row, LAST_INSERT_ID() on the same session, a prepared INSERT.
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	res, err = conn.ExecContext(ctx, "INSERT INTO orders (item, qty) VALUES ('pen', 2), ('ink', 3)")
	if err != nil {
		t.Fatal(err)
	}
	first, _ := res.LastInsertId()
	var lii int64
	conn.QueryRowContext(ctx, "SELECT LAST_INSERT_ID()").Scan(&lii)
	var pen, ink int64
	conn.QueryRowContext(ctx, "SELECT id FROM orders WHERE item = 'pen'").Scan(&pen)
	conn.QueryRowContext(ctx, "SELECT id FROM orders WHERE item = 'ink'").Scan(&ink)
	if first != pen || lii != pen || ink != pen+1 {
		t.Fatalf("two rows: LastInsertId %d, LAST_INSERT_ID() %d, keys pen %d ink %d", first, lii, pen, ink)
	}
	stmt, err := conn.PrepareContext(ctx, "INSERT INTO orders (item) VALUES (?)")
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	var prev int64
	for _, item := range []string{"p1", "p2"} {
		res, err := stmt.ExecContext(ctx, item)
		if err != nil {
			t.Fatalf("prepared INSERT: %v", err)
		}
		id, _ := res.LastInsertId()
		var k int64
		conn.QueryRowContext(ctx, "SELECT id FROM orders WHERE item = ?", item).Scan(&k)
		if id != k || id <= prev {
			t.Fatalf("prepared INSERT %s: LastInsertId %d, stored %d, previous %d", item, id, k, prev)
		}
		prev = id
	}

	// go-mysql-server resolves names case-insensitively (and now says so
	// in lower_case_table_names): the rule for orders fills ORDERS.
	res, err = db.Exec("INSERT INTO ORDERS (item) VALUES ('upper')")
	if err != nil {
		t.Fatalf("INSERT INTO ORDERS through the proxy: %v", err)
	}
	if id, _ := res.LastInsertId(); id <= prev {
		t.Fatalf("INSERT INTO ORDERS: key %d, want one from the tag (above %d)", id, prev)
	}

	// customers holds id 1 before the proxy starts: its tag starts above it.
	res, err = db.Exec("INSERT INTO customers (name) VALUES ('ann')")
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := res.LastInsertId(); id <= 1 {
		t.Fatalf("customers key %d, want above the existing 1", id)
	}
	// Other shapes the rewriter fills, over TLS (the proxy's own certificate).
	tlsDB := open(t, d.DSN()+"?tls=skip-verify")
	for _, q := range []string{
		"INSERT INTO customers SET name = 'bob'",
		"INSERT INTO customers VALUES (NULL, 'carl')",
		"REPLACE INTO customers (name) VALUES ('dora')",
		"INSERT INTO customers (name) VALUES ('eve') ON DUPLICATE KEY UPDATE name = 'x'",
	} {
		res, err := tlsDB.Exec(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		id, _ := res.LastInsertId()
		var name string
		if err := tlsDB.QueryRow("SELECT name FROM customers WHERE id = ?", id).Scan(&name); err != nil || id <= 1 {
			t.Fatalf("%s: insert id %d, row %q %v", q, id, name, err)
		}
	}
}

// TestDemoExamples: every statement the intro suggests works through the
// proxy, and so do the admin statements.
func TestDemoExamples(t *testing.T) {
	d, _ := startDemo(t)
	db := open(t, d.DSN())
	for _, e := range Examples {
		rows, err := db.Query(strings.TrimSuffix(e.SQL, ";"))
		if err != nil {
			t.Errorf("%s: %v", e.SQL, err)
			continue
		}
		for rows.Next() {
		}
		if err := rows.Err(); err != nil {
			t.Errorf("%s: %v", e.SQL, err)
		}
		rows.Close()
	}
	var tags []string
	rows, err := db.Query("SHOW LEAFPROXY SEQUENCES")
	if err != nil {
		t.Fatal(err)
	}
	cols, _ := rows.Columns()
	for rows.Next() {
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		rows.Scan(ptrs...)
		tags = append(tags, string(vals[0]))
	}
	rows.Close()
	if strings.Join(tags, ",") != "customer,order" {
		t.Errorf("SHOW LEAFPROXY SEQUENCES tags %v", tags)
	}
	var sessions int
	if rows, err := db.Query("SHOW LEAFPROXY SESSIONS"); err != nil {
		t.Fatal(err)
	} else {
		for rows.Next() {
			sessions++
		}
		rows.Close()
	}
	if sessions < 1 {
		t.Error("SHOW LEAFPROXY SESSIONS: no session")
	}
	if _, err := db.Exec("CREATE LEAFPROXY SEQUENCE invoice STEP 50"); err != nil {
		t.Fatal(err)
	}
	var v, set int64
	if err := db.QueryRow("SELECT SETVAL('invoice', 5000)").Scan(&set); err != nil || set != 5000 {
		t.Fatalf("SETVAL: %d, %v", set, err)
	}
	if err := db.QueryRow("SELECT NEXTVAL('invoice')").Scan(&v); err != nil || v != 5001 {
		t.Fatalf("NEXTVAL after SETVAL 5000: %d, %v", v, err)
	}
	var me *mysql.MySQLError
	if err := db.QueryRow("SELECT NEXTVAL('nope')").Scan(&v); !errors.As(err, &me) || me.Number != 4091 {
		t.Fatalf("unknown tag: %v, want 4091", err)
	}
}

// TestDemoConcurrentClients: clients inserting at once through the proxy
// while it fetches segments get distinct keys and lose no row.
func TestDemoConcurrentClients(t *testing.T) {
	d, _ := startDemo(t)
	db := open(t, d.DSN())
	const clients, each = 6, 40
	var mu sync.Mutex
	ids := map[int64]bool{}
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				res, err := db.Exec("INSERT INTO orders (item) VALUES (?)", fmt.Sprintf("c%d-%d", c, i))
				if err != nil {
					t.Error(err)
					return
				}
				id, _ := res.LastInsertId()
				var n int64
				db.QueryRow("SELECT NEXTVAL('customer')").Scan(&n)
				mu.Lock()
				if ids[id] || id == 0 {
					t.Errorf("key %d twice (or 0)", id)
				}
				ids[id] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	var n, distinct int
	db.QueryRow("SELECT COUNT(*), COUNT(DISTINCT id) FROM orders").Scan(&n, &distinct)
	if n != clients*each || distinct != n || len(ids) != n {
		t.Fatalf("%d rows, %d distinct keys, %d keys reported; want %d", n, distinct, len(ids), clients*each)
	}
}

// TestDemoMariaDBCLI drives the printed command line with -e, when the
// mariadb client is installed (the demo itself needs no MariaDB).
func TestDemoMariaDBCLI(t *testing.T) {
	bin, err := exec.LookPath("mariadb")
	if err != nil {
		t.Skip("mariadb client not installed (apt-get install mariadb-client): the printed command line is not driven")
	}
	_, intro := startDemo(t)
	m := connectLine.FindStringSubmatch(intro)
	if m == nil {
		t.Fatalf("no command line in the intro:\n%s", intro)
	}
	args := append(strings.Fields(m[1])[1:], "--batch", "--skip-column-names", "-e",
		"SELECT NEXTVAL('order'); INSERT INTO orders (item) VALUES ('book'), ('pen'); SELECT LAST_INSERT_ID(); SELECT id, item FROM orders ORDER BY id; SHOW LEAFPROXY SEQUENCES")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 5 {
		t.Fatalf("output:\n%s", out)
	}
	var nv, lii int64
	fmt.Sscan(lines[0], &nv)
	fmt.Sscan(lines[1], &lii)
	want := []string{fmt.Sprintf("%d\tbook", lii), fmt.Sprintf("%d\tpen", lii+1)}
	if nv < 1 || lii <= nv || lines[2] != want[0] || lines[3] != want[1] || !strings.HasPrefix(lines[4], "customer\tsegment") {
		t.Fatalf("NEXTVAL %d, LAST_INSERT_ID %d; output:\n%s\nwant rows %q", nv, lii, out, want)
	}
}
