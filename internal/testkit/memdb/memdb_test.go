package memdb

import (
	"database/sql"
	"errors"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// A server answers root's login, keeps what it is given, and names a
// duplicate key's class as MySQL does (1062, SQLSTATE 23000).
func TestServer(t *testing.T) {
	s := Start(t)
	db, err := sql.Open("mysql", s.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{"CREATE DATABASE IF NOT EXISTS m", "CREATE TABLE m.t (id INT PRIMARY KEY)", "INSERT INTO m.t VALUES (1)"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM m.t").Scan(&n); err != nil || n != 1 {
		t.Fatalf("count: %d, %v; want 1", n, err)
	}
	_, err = db.Exec("INSERT INTO m.t VALUES (1)")
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1062 || string(me.SQLState[:]) != "23000" {
		t.Fatalf("duplicate key: %v, want 1062/23000", err)
	}
}
