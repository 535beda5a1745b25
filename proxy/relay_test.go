package proxy

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/go-sql-driver/mysql"
)

func TestRelayBasics(t *testing.T) {
	ensureDB(t, sharedDB(t), "relay")
	e := startProxy(t, sharedDB(t).Addr, nil)
	for _, params := range []string{"interpolateParams=true&multiStatements=true", "multiStatements=true"} {
		t.Run(params, func(t *testing.T) {
			db := e.open(t, "relay", params)
			ctx := context.Background()
			mustExec(t, db, "DROP TABLE IF EXISTS t")
			mustExec(t, db, "CREATE TABLE t (id BIGINT PRIMARY KEY AUTO_INCREMENT, name VARCHAR(64), data BLOB)")
			blob := []byte{0, 1, 2, '\\', '\'', '"', 0xFF, 0xFE}
			res, err := db.ExecContext(ctx, "INSERT INTO t (name, data) VALUES (?, ?), (?, NULL)", "a\\b'c", blob, nil)
			if err != nil {
				t.Fatal(err)
			}
			if n, _ := res.RowsAffected(); n != 2 {
				t.Fatalf("affected %d, want 2", n)
			}
			if id, _ := res.LastInsertId(); id != 1 {
				t.Fatalf("insert id %d, want 1", id)
			}
			var name sql.NullString
			var data []byte
			if err := db.QueryRowContext(ctx, "SELECT name, data FROM t WHERE id = ?", 1).Scan(&name, &data); err != nil {
				t.Fatal(err)
			}
			if name.String != "a\\b'c" || !bytes.Equal(data, blob) {
				t.Fatalf("read back %q %x", name.String, data)
			}
			if err := db.QueryRowContext(ctx, "SELECT name FROM t WHERE id = ?", 2).Scan(&name); err != nil || name.Valid {
				t.Fatalf("NULL read back as %v (err %v)", name, err)
			}
			// multi-statements with several result sets
			rows, err := db.QueryContext(ctx, "SELECT 1; SELECT 2, 3; UPDATE t SET name='x' WHERE id=2")
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for {
				for rows.Next() {
					cols, _ := rows.Columns()
					vals := make([]any, len(cols))
					ptrs := make([]any, len(cols))
					for i := range vals {
						ptrs[i] = &vals[i]
					}
					if err := rows.Scan(ptrs...); err != nil {
						t.Fatal(err)
					}
					got = append(got, len(cols))
				}
				if !rows.NextResultSet() {
					break
				}
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			rows.Close()
			if len(got) != 2 || got[0] != 1 || got[1] != 2 {
				t.Fatalf("result sets columns %v, want [1 2]", got)
			}
			// backend errors arrive unchanged
			_, err = db.ExecContext(ctx, "INSERT INTO t (id, name) VALUES (1, 'dup')")
			var me *mysql.MySQLError
			if !errors.As(err, &me) || me.Number != 1062 || string(me.SQLState[:]) != "23000" {
				t.Fatalf("duplicate key: %v, want 1062/23000", err)
			}
			if err := db.PingContext(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func mustExec(t testing.TB, db *sql.DB, q string, args ...any) sql.Result {
	t.Helper()
	r, err := db.Exec(q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return r
}
