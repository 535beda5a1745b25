package integration

import (
	"context"
	"database/sql"
	"encoding/json"
	"net"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
)

// The proxy runs no statement of its own inside a client's session unless
// a rule table or a sequence call needs the session's sql_mode or current
// database: a session's Questions (read from performance_schema on the
// backend) are the same through the proxy as directly, with no rule
// tables, and with rules for statements on other tables. (The proxy used
// to read SELECT @@SESSION.sql_mode at the first INSERT and after every
// SET of sql_mode, SELECT DATABASE() after multi-statement texts.)
func TestBackendSeesOnlyClientStatements(t *testing.T) {
	b := testdb.StartWith(t, "--performance-schema=ON")
	b.Exec(t, "CREATE DATABASE qs", "CREATE DATABASE qs2",
		"CREATE TABLE qs.t (id INT PRIMARY KEY AUTO_INCREMENT, v INT)", "CREATE TABLE qs2.t (id INT PRIMARY KEY AUTO_INCREMENT, v INT)",
		"CREATE TABLE qs.orders (id BIGINT PRIMARY KEY, v INT)")
	root := rootDB(t, b)
	stmts := []string{
		"INSERT INTO t (v) VALUES (1)",
		"INSERT INTO t (v) VALUES (2), (3)",
		"REPLACE INTO t (id, v) VALUES (1, 5)",
		"SET sql_mode = CONCAT(@@sql_mode, ',NO_AUTO_VALUE_ON_ZERO')",
		"INSERT INTO t (v) VALUES (4)",
		"INSERT INTO qs2.t (v) SELECT v FROM t",
		"USE qs2",
		"INSERT INTO t (v) VALUES (5)",
		"SET STATEMENT max_statement_time=10 FOR INSERT INTO t (v) VALUES (6)",
		"SELECT COUNT(*) FROM t",
	}
	// goRun runs stmts and a prepared INSERT (COM_STMT_PREPARE) on one
	// go-sql-driver connection and returns its Questions.
	goRun := func(dsn string) int {
		db, err := sql.Open("mysql", dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		c, id := conn(t, db)
		defer c.Close()
		ctx := context.Background()
		for _, q := range stmts {
			if _, err := c.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		st, err := c.PrepareContext(ctx, "INSERT INTO t (v) VALUES (?)")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Exec(7); err != nil {
			t.Fatal(err)
		}
		st.Close()
		return questions(t, root, id)
	}
	needPyMySQL(t)
	script := writeScript(t, "backend_sees.py", pyBackendSees)
	list, _ := json.Marshal(stmts)
	pyRun := func(addr, user, pass string) int {
		host, port, _ := net.SplitHostPort(addr)
		py := startInteractive(t, 60*time.Second, "", nil, systemPython, script, "questions", host, port, user, pass, "qs", string(list))
		var hello struct{ Tid int64 }
		py.next(&hello)
		n := questions(t, root, hello.Tid)
		py.send("done")
		var done struct{ Done bool }
		py.next(&done)
		py.wait()
		return n
	}
	directGo, directPy := goRun(b.DSN("qs")), pyRun(b.Addr, "root", "")
	for _, rules := range []struct {
		what   string
		tables []config.Table
	}{
		{"no rule tables", nil},
		{"a rule for qs.orders", []config.Table{{Table: "orders", Column: "id", Tag: "order"}}},
	} {
		cfg := leafConfig(t, b, nil)
		cfg.Tables = rules.tables
		lf := startLeaf(t, cfg)
		if through := goRun(lf.dsn("qs", nil)); through != directGo {
			t.Errorf("%s, go-sql-driver: the session asked %d questions through the proxy, %d directly", rules.what, through, directGo)
		}
		if through := pyRun(lf.addr, "app", "secret"); through != directPy {
			t.Errorf("%s, PyMySQL: the session asked %d questions through the proxy, %d directly", rules.what, through, directPy)
		}
	}
}
