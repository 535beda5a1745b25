package integration

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
)

// Prepared statements with generated keys bind the keys as extra
// parameters of the backend statement (one command per EXECUTE). Through
// go-sql-driver without interpolation (real COM_STMT_PREPARE / EXECUTE):
// every execute gets fresh keys, LastInsertId is the stored key, a bound
// key wins, NULL and 0 take a generated one (0 is kept under
// NO_AUTO_VALUE_ON_ZERO), NULL bitmaps across bytes and long data
// (COM_STMT_SEND_LONG_DATA) reach the right columns.
func TestKeyfillPreparedParams(t *testing.T) {
	backend := testdb.Start(t)
	backend.Open(t, "app")
	backend.Exec(t,
		"CREATE TABLE app.docs (id BIGINT PRIMARY KEY, v VARCHAR(64), n INT, body MEDIUMTEXT, UNIQUE KEY (v))",
		"CREATE TABLE app.evts (id BIGINT PRIMARY KEY, doc BIGINT, v VARCHAR(64))",
	)
	cfg := leafConfig(t, backend, nil)
	cfg.Sequences.Tags = map[string]config.Tag{"doc": {Generator: "segment", Step: 1000}, "evt": {Generator: "snowflake"}}
	cfg.Snowflake.WorkerID = "5"
	cfg.Tables = []config.Table{{Table: "docs", Column: "id", Tag: "doc"}, {Table: "evts", Column: "id", Tag: "evt"}}
	lf := startLeaf(t, cfg)
	direct := backend.Open(t, "app")
	ctx := context.Background()

	// maxAllowedPacket makes go-sql-driver send parameters above
	// 120000/(params+1) bytes as long data.
	db := lf.open(t, "app", map[string]string{"maxAllowedPacket": "120000"})
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stored := func(v string) (id int64, n sql.NullInt64, body sql.NullString) {
		t.Helper()
		if err := direct.QueryRow("SELECT id, n, body FROM docs WHERE v = ?", v).Scan(&id, &n, &body); err != nil {
			t.Fatalf("row %q: %v", v, err)
		}
		return
	}

	// One statement executed many times: fresh, ascending keys; LastInsertId = stored.
	st, err := conn.PrepareContext(ctx, "INSERT INTO docs (v, n) VALUES (?, ?)")
	if err != nil {
		t.Fatal(err)
	}
	var prev int64
	for i := range 300 {
		v := fmt.Sprintf("many%d", i)
		var n any = i
		if i%3 == 0 {
			n = nil
		}
		res, err := st.ExecContext(ctx, v, n)
		if err != nil {
			t.Fatalf("execute %d: %v", i, err)
		}
		last, _ := res.LastInsertId()
		id, gotN, _ := stored(v)
		if last != id || id <= prev {
			t.Fatalf("execute %d: LastInsertId %d, stored %d, previous %d", i, last, id, prev)
		}
		if gotN.Valid != (n != nil) || (n != nil && gotN.Int64 != int64(i)) {
			t.Fatalf("execute %d: n stored as %v, want %v", i, gotN, n)
		}
		prev = id
	}
	st.Close()

	// Five rows, ten client parameters and five generated ones: NULLs on
	// both sides of the bitmap's byte boundaries.
	st, err = conn.PrepareContext(ctx, "INSERT INTO docs (v, n) VALUES (?, ?), (?, ?), (?, ?), (?, ?), (?, ?)")
	if err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		args := make([]any, 0, 10)
		for r := range 5 {
			var n any = r * 10
			if (r+round)%2 == 1 {
				n = nil
			}
			args = append(args, fmt.Sprintf("wide%d_%d", round, r), n)
		}
		res, err := st.ExecContext(ctx, args...)
		if err != nil {
			t.Fatal(err)
		}
		last, _ := res.LastInsertId()
		firstID, _, _ := stored(fmt.Sprintf("wide%d_0", round))
		if last != firstID {
			t.Errorf("round %d: LastInsertId %d, first row's key %d", round, last, firstID)
		}
		for r := range 5 {
			id, n, _ := stored(fmt.Sprintf("wide%d_%d", round, r))
			want := args[2*r+1]
			if id != firstID+int64(r) || n.Valid != (want != nil) || (want != nil && n.Int64 != int64(want.(int))) {
				t.Errorf("round %d row %d: id %d (first %d), n %v, want n %v", round, r, id, firstID, n, want)
			}
		}
	}
	st.Close()

	// Long data: a body above the long-data threshold goes in
	// COM_STMT_SEND_LONG_DATA, with the parameter index remapped, and has no
	// value in the execute packet.
	st, err = conn.PrepareContext(ctx, "INSERT INTO docs (v, body, n) VALUES (?, ?, ?)")
	if err != nil {
		t.Fatal(err)
	}
	for i, size := range []int{10, 50000, 200000, 0, 70000} {
		v := fmt.Sprintf("long%d", i)
		body := strings.Repeat(string(rune('a'+i)), size)
		res, err := st.ExecContext(ctx, v, body, i)
		if err != nil {
			t.Fatalf("body of %d bytes: %v", size, err)
		}
		last, _ := res.LastInsertId()
		id, n, got := stored(v)
		if last != id || got.String != body || n.Int64 != int64(i) {
			t.Fatalf("body of %d bytes: LastInsertId %d, stored id %d, n %v, body of %d bytes (equal: %v)", size, last, id, n, len(got.String), got.String == body)
		}
	}
	st.Close()
	var name string
	var longData int
	if err := direct.QueryRow("SHOW GLOBAL STATUS LIKE 'Com_stmt_send_long_data'").Scan(&name, &longData); err != nil || longData < 3 {
		t.Fatalf("the server saw %d COM_STMT_SEND_LONG_DATA (%v): the test did not test long data", longData, err)
	}

	// The key as a placeholder: NULL and 0 take a generated key (reported),
	// a bound value wins and, as with AUTO_INCREMENT, moves the tag past
	// it and is the insert id.
	st, err = conn.PrepareContext(ctx, "INSERT INTO docs (n, id, v) VALUES (?, ?, ?)")
	if err != nil {
		t.Fatal(err)
	}
	for i, key := range []any{nil, 0, 900000 + 1, nil} {
		v := fmt.Sprintf("ph%d", i)
		res, err := st.ExecContext(ctx, i, key, v)
		if err != nil {
			t.Fatal(err)
		}
		last, _ := res.LastInsertId()
		id, _, _ := stored(v)
		switch k, _ := key.(int); {
		case k != 0:
			if id != int64(k) || last != id {
				t.Errorf("bound key %d: stored %d, LastInsertId %d", k, id, last)
			}
		case i == 3:
			if id != 900002 || last != id {
				t.Errorf("key %v after the bound 900001: stored %d, LastInsertId %d; want 900002 reported", key, id, last)
			}
		default:
			if id <= 0 || id >= 900000 || last != id {
				t.Errorf("key %v: stored %d, LastInsertId %d; want a generated key reported", key, id, last)
			}
		}
	}
	st.Close()

	// NO_AUTO_VALUE_ON_ZERO: a bound 0 is a value.
	if _, err := conn.ExecContext(ctx, "SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_AUTO_VALUE_ON_ZERO')"); err != nil {
		t.Fatal(err)
	}
	st, err = conn.PrepareContext(ctx, "INSERT INTO docs (id, v) VALUES (?, ?)")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ExecContext(ctx, 0, "zero"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ExecContext(ctx, nil, "null-under-zero"); err != nil {
		t.Fatal(err)
	}
	if id, _, _ := stored("zero"); id != 0 {
		t.Errorf("NO_AUTO_VALUE_ON_ZERO: bound 0 stored as %d", id)
	}
	if id, _, _ := stored("null-under-zero"); id <= 0 {
		t.Errorf("NO_AUTO_VALUE_ON_ZERO: bound NULL stored as %d, want a generated key", id)
	}
	st.Close()

	// Two tags and a NEXTVAL in one statement; the statement without any
	// client parameter.
	st, err = conn.PrepareContext(ctx, "INSERT INTO evts (doc, v) VALUES (NEXTVAL(doc), 'nv')")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for range 5 {
		res, err := st.ExecContext(ctx)
		if err != nil {
			t.Fatal(err)
		}
		last, _ := res.LastInsertId()
		if seen[last] || last <= 0 {
			t.Fatalf("snowflake key %d repeated or missing", last)
		}
		seen[last] = true
		var doc int64
		if err := direct.QueryRow("SELECT doc FROM evts WHERE id = ?", last).Scan(&doc); err != nil || doc <= 0 {
			t.Fatalf("evts row %d: doc %d, %v", last, doc, err)
		}
	}
	st.Close()

	var rows, distinct int
	direct.QueryRow("SELECT COUNT(*), COUNT(DISTINCT id) FROM docs").Scan(&rows, &distinct)
	if rows != distinct || rows < 300 {
		t.Fatalf("docs: %d rows, %d distinct keys", rows, distinct)
	}
}
