package integration

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// go-sql-driver/mysql through the proxy, text (interpolateParams=true) and
// binary (server-side prepared statements) protocol.
func TestProxyDriver(t *testing.T) {
	b := newBackend(t)
	b.Open(t, "app").Close()
	p := startProxy(t, proxyConfig(b))
	modes := map[string]string{
		"interpolate": "interpolateParams=true&multiStatements=true&parseTime=true",
		"prepared":    "multiStatements=true&parseTime=true",
	}
	for name, params := range modes {
		t.Run(name, func(t *testing.T) {
			db := p.open(t, "app", "app", params)
			direct, err := sql.Open("mysql", directDSN(b, "app", params))
			if err != nil {
				t.Fatal(err)
			}
			defer direct.Close()
			table := "t_" + name
			t.Run("crud", func(t *testing.T) { testCRUD(t, db, table) })
			t.Run("transactions", func(t *testing.T) { testTransactions(t, db, table) })
			t.Run("multi statements", func(t *testing.T) { testMultiStatements(t, db) })
			t.Run("column types", func(t *testing.T) { testColumnTypes(t, db, direct, "types_"+name) })
			t.Run("bytes identical", func(t *testing.T) { testBytesIdentical(t, db, "bin_"+name) })
			t.Run("errors", func(t *testing.T) { testErrors(t, db, table) })
		})
	}
}

func mustExec(t *testing.T, db *sql.DB, q string, args ...any) sql.Result {
	t.Helper()
	r, err := db.Exec(q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return r
}

func testCRUD(t *testing.T, db *sql.DB, table string) {
	mustExec(t, db, "DROP TABLE IF EXISTS "+table)
	mustExec(t, db, "CREATE TABLE "+table+" (id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(50) NOT NULL, note VARCHAR(50) NULL)")
	r := mustExec(t, db, "INSERT INTO "+table+" (name, note) VALUES (?, ?), (?, ?), (?, ?)", "a", "x", "b", nil, "c", "z")
	if n, _ := r.RowsAffected(); n != 3 {
		t.Fatalf("insert affected %d", n)
	}
	if id, _ := r.LastInsertId(); id != 1 {
		t.Fatalf("insert id %d, want 1", id)
	}
	r = mustExec(t, db, "UPDATE "+table+" SET note = ? WHERE name IN (?, ?)", "u", "a", "c")
	if n, _ := r.RowsAffected(); n != 2 {
		t.Fatalf("update affected %d", n)
	}
	r = mustExec(t, db, "DELETE FROM "+table+" WHERE name = ?", "c")
	if n, _ := r.RowsAffected(); n != 1 {
		t.Fatalf("delete affected %d", n)
	}
	rows, err := db.Query("SELECT id, name, note FROM "+table+" WHERE id > ? ORDER BY id", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var id int
		var name string
		var note sql.NullString
		if err := rows.Scan(&id, &name, &note); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%d:%s:%v:%s", id, name, note.Valid, note.String))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := []string{"1:a:true:u", "2:b:false:"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
}

func testTransactions(t *testing.T, db *sql.DB, table string) {
	ctx := context.Background()
	count := func() int {
		var n int
		if err := db.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := count()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("INSERT INTO "+table+" (name) VALUES (?)", "rolled back"); err != nil {
		t.Fatal(err)
	}
	var inTx int
	if err := tx.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&inTx); err != nil || inTx != before+1 {
		t.Fatalf("inside transaction count %d (%v)", inTx, err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != before {
		t.Fatalf("after rollback %d rows, want %d", n, before)
	}
	tx, err = db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("INSERT INTO "+table+" (name) VALUES (?)", "committed"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != before+1 {
		t.Fatalf("after commit %d rows, want %d", n, before+1)
	}
}

func testMultiStatements(t *testing.T, db *sql.DB) {
	rows, err := db.Query("SELECT 1 AS a; SELECT 'two' AS b, NULL AS c; DO 0; SELECT 3")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var sets [][]string
	for {
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]sql.NullString, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			var row []string
			for _, v := range vals {
				row = append(row, fmt.Sprintf("%v/%s", v.Valid, v.String))
			}
			sets = append(sets, row)
		}
		if !rows.NextResultSet() {
			break
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"true/1"}, {"true/two", "false/"}, {"true/3"}}
	if !reflect.DeepEqual(sets, want) {
		t.Fatalf("multi-statement results %v, want %v", sets, want)
	}
	// An error in the middle stops the batch; the session stays usable.
	if _, err := db.Exec("DO 1; SELECT * FROM no_such_table; DO 2"); err == nil {
		t.Fatal("error in a multi-statement batch was lost")
	}
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
}

// Every common column type reads back through the proxy exactly as it does
// straight from MariaDB.
func testColumnTypes(t *testing.T, db, direct *sql.DB, table string) {
	mustExec(t, db, "DROP TABLE IF EXISTS "+table)
	mustExec(t, db, `CREATE TABLE `+table+` (
		id INT PRIMARY KEY, ti TINYINT, si SMALLINT, mi MEDIUMINT, i INT, bi BIGINT, ub BIGINT UNSIGNED,
		de DECIMAL(20,6), f FLOAT, d DOUBLE, dt DATE, dtm DATETIME(6), ts TIMESTAMP(3) NULL, tm TIME(3), y YEAR,
		c CHAR(5), vc VARCHAR(100), tx TEXT, bn BINARY(4), vb VARBINARY(10), bl BLOB, e ENUM('a','b'), st SET('x','y'),
		bt BIT(10), js JSON, u VARCHAR(20) CHARACTER SET utf8mb4)`)
	mustExec(t, db, `INSERT INTO `+table+` VALUES (1, -128, -32768, -8388608, -2147483648, -9223372036854775808, 18446744073709551615,
		-12345678901234.123456, 1.5, -2.25e-300, '2024-02-29', '2024-02-29 23:59:59.123456', '2024-01-01 00:00:00.125', '-838:59:59.000', 2155,
		'ab', 'variable', 'long text', x'00010203', x'ff00', x'deadbeef', 'b', 'x,y', b'1010101010', '{"k": [1, 2]}', 'héllo ✓ 🙂')`)
	mustExec(t, db, "INSERT INTO "+table+" (id) VALUES (?)", 2) // all NULL
	mustExec(t, db, `INSERT INTO `+table+` (id, ti, bi, ub, d, dt, vc, bl) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		3, 127, int64(9223372036854775807), uint64(1), 3.141592653589793, "1000-01-01", "", []byte{})
	q := "SELECT * FROM " + table + " WHERE id >= ? ORDER BY id"
	viaProxy := scanAll(t, db, q, 1)
	viaDirect := scanAll(t, direct, q, 1)
	if len(viaProxy) != 3 {
		t.Fatalf("%d rows", len(viaProxy))
	}
	if !reflect.DeepEqual(viaProxy, viaDirect) {
		t.Fatalf("rows through proxy differ from direct:\nproxy  %v\ndirect %v", viaProxy, viaDirect)
	}
	var ub uint64
	var u string
	if err := db.QueryRow("SELECT ub, u FROM "+table+" WHERE id = ?", 1).Scan(&ub, &u); err != nil || ub != 18446744073709551615 || u != "héllo ✓ 🙂" {
		t.Fatalf("ub=%d u=%q (%v)", ub, u, err)
	}
}

func scanAll(t *testing.T, db *sql.DB, q string, args ...any) [][]string {
	t.Helper()
	rows, err := db.Query(q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out [][]string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := make([]string, len(cols))
		for i, v := range vals {
			row[i] = fmt.Sprintf("%T:%v", v, v)
			if b, ok := v.([]byte); ok {
				row[i] = fmt.Sprintf("bytes:%x", b)
			}
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Binary data and strings with backslashes, quotes and NULs come back byte
// for byte.
func testBytesIdentical(t *testing.T, db *sql.DB, table string) {
	mustExec(t, db, "DROP TABLE IF EXISTS "+table)
	mustExec(t, db, "CREATE TABLE "+table+" (id INT PRIMARY KEY, s VARCHAR(255), b VARBINARY(300))")
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	strs := []string{`a\b`, `a\\b`, `it's`, `"quoted"`, `\'; DROP TABLE x; --`, "\\0\\n\\Z", "tab\there\nnew", `%_\%\_`}
	for i, s := range strs {
		mustExec(t, db, "INSERT INTO "+table+" VALUES (?, ?, ?)", i, s, append([]byte(s), all...))
	}
	for i, s := range strs {
		var gs string
		var gb []byte
		if err := db.QueryRow("SELECT s, b FROM "+table+" WHERE id = ?", i).Scan(&gs, &gb); err != nil {
			t.Fatal(err)
		}
		if gs != s || !bytes.Equal(gb, append([]byte(s), all...)) {
			t.Fatalf("row %d: %q / %x, want %q", i, gs, gb, s)
		}
		var n int
		if err := db.QueryRow("SELECT COUNT(*) FROM "+table+" WHERE s = ?", s).Scan(&n); err != nil || n != 1 {
			t.Fatalf("lookup by %q found %d (%v)", s, n, err)
		}
	}
}

func testErrors(t *testing.T, db *sql.DB, table string) {
	for _, tc := range []struct {
		q     string
		code  uint16
		state string
	}{
		{"INSERT INTO " + table + " (id, name) VALUES (1, 'dup')", 1062, "23000"},
		{"SELECT * FROM no_such_table", 1146, "42S02"},
		{"SELEC 1", 1064, "42000"},
	} {
		_, err := db.Exec(tc.q)
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != tc.code || string(me.SQLState[:]) != tc.state {
			t.Fatalf("%s: %v, want %d (%s)", tc.q, err, tc.code, tc.state)
		}
		if me.Message == "" {
			t.Fatalf("%s: empty message", tc.q)
		}
	}
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
}
