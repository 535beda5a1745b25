package engine

import (
	"database/sql"
	"strings"
	"testing"

	"github.com/leafproxy/leafproxy/internal/testdb"
	"github.com/leafproxy/leafproxy/rewriter"
)

// ormEngine serves rules in front of a fresh database app on backend.
func ormEngine(t *testing.T, backend *testdb.Server, loops int, rules []rewriter.Rule, ddl ...string) *sql.DB {
	t.Helper()
	backend.Exec(t, append([]string{"DROP DATABASE IF EXISTS app", "CREATE DATABASE app"}, ddl...)...)
	r, err := rewriter.NewRules(rules)
	if err != nil {
		t.Fatal(err)
	}
	db := serveEngine(t, New(&lockedCounter{counter: counter{next: 1000}}, r), backend, loops, "app")
	db.SetMaxOpenConns(1) // one session: a statement sees the cache the one before it filled
	return db
}

func mustExec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s %v: %v", q, args, err)
	}
}

func selectStrings(t *testing.T, db *sql.DB, q string) []string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// A key the client gives is never refused for its type or its spelling
// when nothing is to be generated (issue 39 items 4 and 5): a bound
// VARCHAR key, _binary '...' (with the space the MariaDB Node connector
// writes), _utf8mb4 '...', X'...' and 0x... literals, under an exact rule
// and under a pattern; an integer key written _binary '5' stores 5. On the
// goroutine path and on an event loop.
func TestGivenKeysOfAnyTypeAreKept(t *testing.T) {
	backend := testdb.Start(t)
	for _, loops := range []int{-1, 1} {
		t.Run(map[int]string{-1: "goroutines", 1: "event loop"}[loops], func(t *testing.T) {
			for _, rule := range []string{"exact", "pattern"} {
				t.Run(rule, func(t *testing.T) {
					rules := []rewriter.Rule{{Table: "o", Column: "id", Tag: "t"}, {Table: "b", Column: "id", Tag: "t"}, {Table: "n", Column: "id", Tag: "t"}}
					if rule == "pattern" {
						rules = []rewriter.Rule{{Table: "app.*", Column: "id", Tag: "t"}}
					}
					db := ormEngine(t, backend, loops, rules,
						"CREATE TABLE app.o (id VARCHAR(191) PRIMARY KEY, v INT)",
						"CREATE TABLE app.b (id BINARY(4) PRIMARY KEY, v INT)",
						"CREATE TABLE app.n (id BIGINT PRIMARY KEY, v INT)")
					mustExec(t, db, "INSERT INTO o (id, v) VALUES (?, ?)", "p", 1)
					mustExec(t, db, "INSERT INTO o (id, v) VALUES (?, ?), (?, ?)", "q", 2, "0", 3)
					mustExec(t, db, "INSERT INTO o (id, v) VALUES (_utf8mb4 'r', 4), (_utf8mb4'abc', 5), ('zz', 6), (X'7878', 7), (0x7979, 8)")
					mustExec(t, db, "INSERT INTO o (id, v) VALUES (CONCAT('c', 'd'), 9)")
					if got := strings.Join(selectStrings(t, db, "SELECT id FROM o ORDER BY v"), ","); got != "p,q,0,r,abc,zz,xx,yy,cd" {
						t.Errorf("VARCHAR keys stored %s; want p,q,0,r,abc,zz,xx,yy,cd", got)
					}
					mustExec(t, db, "INSERT INTO b (id, v) VALUES (_binary 'abcd', 1), (_binary 0x30313233, 2), (X'61626365', 3)")
					mustExec(t, db, "INSERT INTO b (id, v) VALUES (?, ?)", []byte("abcf"), 4)
					if got := strings.Join(selectStrings(t, db, "SELECT HEX(id) FROM b ORDER BY v"), ","); got != "61626364,30313233,61626365,61626366" {
						t.Errorf("BINARY keys stored %s", got)
					}
					mustExec(t, db, "INSERT INTO n (id, v) VALUES (_binary '5', 1), (_utf8mb4 '6', 2)")
					mustExec(t, db, "INSERT INTO n (v) VALUES (3)")
					ids := selectStrings(t, db, "SELECT id FROM n ORDER BY v")
					if len(ids) != 3 || ids[0] != "5" || ids[1] != "6" || ids[2] <= "1000" {
						t.Errorf("integer keys %v; want 5, 6 and a generated one", ids)
					}
				})
			}
		})
	}
}
