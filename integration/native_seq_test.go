package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
)

// TestNativeSequencesRelayed: an application that already uses MariaDB's
// own sequences keeps working through the proxy. A name written as an
// identifier that is no proxy tag but a native SEQUENCE of the session's
// database (or the qualified one) goes to the backend, which answers;
// a proxy tag of the same name wins; a string is always the proxy's; one
// statement cannot mix both.
func TestNativeSequencesRelayed(t *testing.T) {
	backend := testdb.Start(t)
	backend.Open(t, "app")
	backend.Exec(t,
		"CREATE SEQUENCE app.nseq",
		"CREATE SEQUENCE app.`order` START WITH 500",
		"CREATE TABLE app.t (id BIGINT PRIMARY KEY, k BIGINT)",
		"INSERT INTO app.t (id) VALUES (1), (2), (3)",
	)
	cfg := leafConfig(t, backend, nil)
	cfg.Sequences.Tags = map[string]config.Tag{"order": {Generator: "segment", Step: 100}}
	lf := startLeaf(t, cfg)
	ctx := context.Background()
	for _, params := range []map[string]string{{"interpolateParams": "true"}, nil} {
		db := lf.open(t, "app", params)
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		prepared := params == nil
		q := func(sql string) int64 {
			t.Helper()
			var args []any
			if prepared {
				sql += " + ?"
				args = append(args, 0)
			}
			var v int64
			if err := conn.QueryRowContext(ctx, sql, args...).Scan(&v); err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
			return v
		}
		a := q("SELECT NEXTVAL(nseq)")
		if b := q("SELECT NEXT VALUE FOR app.nseq"); b != a+1 {
			t.Fatalf("native sequence gave %d then %d", a, b)
		}
		if l := q("SELECT LASTVAL(nseq)"); l != a+1 {
			t.Fatalf("native LASTVAL %d, want %d", l, a+1)
		}
		if v := q("SELECT NEXTVAL(order)"); v >= 500 {
			t.Fatalf("NEXTVAL(order) = %d: the native sequence answered, not the proxy's tag", v)
		}
		if prepared {
			conn.Close()
			continue
		}
		if _, err := conn.ExecContext(ctx, "UPDATE t SET k = NEXTVAL(nseq)"); err != nil {
			t.Fatal(err)
		}
		if n := scalar[int](t, conn, "SELECT COUNT(DISTINCT k) FROM t"); n != 3 {
			t.Fatalf("native NEXTVAL in UPDATE: %d distinct values for 3 rows", n)
		}
		if v := scalar[int64](t, conn, "SELECT SETVAL(nseq, 1000)"); v != 1000 {
			t.Fatalf("native SETVAL returned %d", v)
		}
		if v := q("SELECT NEXTVAL(nseq)"); v != 1001 {
			t.Fatalf("after SETVAL(nseq, 1000): %d", v)
		}
		_, err = conn.ExecContext(ctx, "SELECT NEXTVAL(nseq), NEXTVAL('order')")
		if code, _ := myErr(err); code != 1235 || !strings.Contains(err.Error(), "nseq") {
			t.Fatalf("mixed: %v, want 1235 naming nseq", err)
		}
		_, err = conn.ExecContext(ctx, "SELECT NEXTVAL(nosuch)")
		if code, _ := myErr(err); code != 4091 {
			t.Fatalf("unknown name: %v, want 4091", err)
		}
		// DDL naming a native sequence in a DEFAULT, prepared.
		stmt, err := conn.PrepareContext(ctx, "CREATE TABLE t2 (i BIGINT DEFAULT NEXTVAL(nseq), j INT)")
		if err != nil {
			t.Fatalf("prepare DDL with DEFAULT NEXTVAL: %v", err)
		}
		if _, err := stmt.ExecContext(ctx); err != nil {
			t.Fatal(err)
		}
		stmt.Close()
		conn.Close()
	}
}
