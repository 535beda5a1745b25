package proxy

import (
	"bytes"
	"context"
	"database/sql"
	"strings"
	"testing"
)

// Server-side prepared statements are the backend's own: re-executed with
// new values, NULLs and long data (go-sql-driver sends arguments larger than
// maxAllowedPacket/(params+1) with COM_STMT_SEND_LONG_DATA).
func TestPreparedStatements(t *testing.T) {
	ensureDB(t, sharedDB(t), "prep")
	e := startProxy(t, sharedDB(t).Addr, nil)
	db := e.open(t, "prep", "maxAllowedPacket=4096")
	mustExec(t, db, "DROP TABLE IF EXISTS p")
	mustExec(t, db, "CREATE TABLE p (id INT PRIMARY KEY, s VARCHAR(20), n DOUBLE, b LONGBLOB)")
	ctx := context.Background()
	conn, err := db.Conn(ctx) // one session: the statement stays prepared
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ins, err := conn.PrepareContext(ctx, "INSERT INTO p VALUES (?, ?, ?, ?)")
	if err != nil {
		t.Fatal(err)
	}
	long := bytes.Repeat([]byte("0123456789\\'\"\x00"), 1000) // 14 KB: long data
	want := map[int][3]any{}
	for i := 1; i <= 20; i++ {
		var s, n, b any
		if i%3 != 0 {
			s = strings.Repeat("x", i)
		}
		if i%4 != 0 {
			n = float64(i) / 4
		}
		if i%5 == 0 {
			b = long
		} else if i%2 == 0 {
			b = []byte{byte(i)}
		}
		if _, err := ins.ExecContext(ctx, i, s, n, b); err != nil {
			t.Fatalf("execute %d: %v", i, err)
		}
		want[i] = [3]any{s, n, b}
	}
	ins.Close()
	sel, err := conn.PrepareContext(ctx, "SELECT s, n, b FROM p WHERE id = ?")
	if err != nil {
		t.Fatal(err)
	}
	defer sel.Close()
	for i := 1; i <= 20; i++ {
		var s sql.NullString
		var n sql.NullFloat64
		var b []byte
		if err := sel.QueryRowContext(ctx, i).Scan(&s, &n, &b); err != nil {
			t.Fatalf("select %d: %v", i, err)
		}
		w := want[i]
		if (w[0] == nil) == s.Valid || (w[0] != nil && s.String != w[0].(string)) {
			t.Fatalf("row %d s = %v, want %v", i, s, w[0])
		}
		if (w[1] == nil) == n.Valid || (w[1] != nil && n.Float64 != w[1].(float64)) {
			t.Fatalf("row %d n = %v, want %v", i, n, w[1])
		}
		if (w[2] == nil) != (b == nil) || (w[2] != nil && !bytes.Equal(b, w[2].([]byte))) {
			t.Fatalf("row %d b has %d bytes, want %v", i, len(b), w[2] != nil)
		}
	}
}

// Packets of 16 MB and more, both directions, in text and binary protocol.
func TestLargePackets(t *testing.T) {
	ensureDB(t, sharedDB(t), "big")
	e := startProxy(t, sharedDB(t).Addr, nil)
	for _, params := range []string{"interpolateParams=true", ""} {
		db := e.open(t, "big", params)
		mustExec(t, db, "DROP TABLE IF EXISTS big")
		mustExec(t, db, "CREATE TABLE big (id INT PRIMARY KEY, b LONGBLOB)")
		blob := bytes.Repeat([]byte{'a', '\\', 0, 0xFF, '\''}, (1<<24+1000)/5) // > 16 MB
		mustExec(t, db, "INSERT INTO big VALUES (1, ?)", blob)
		var got []byte
		if err := db.QueryRow("SELECT b FROM big WHERE id = ?", 1).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, blob) {
			t.Fatalf("%q: read back %d bytes, want %d identical", params, len(got), len(blob))
		}
		var n int
		if err := db.QueryRow("SELECT LENGTH(b) FROM big").Scan(&n); err != nil || n != len(blob) {
			t.Fatalf("LENGTH = %d (%v)", n, err)
		}
	}
}
