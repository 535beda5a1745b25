package engine

import (
	"database/sql"
	"strings"
	"testing"

	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
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

// A pattern fills only the tables that have its column as their key,
// without a server default of their own; every other table it matches is
// the server's, untouched, as directly (issue 39 items 1 and 6): a join
// table, a composite key, a key with another name, a non-key id,
// DEFAULT NEXTVAL(s) (the native sequence advances), DEFAULT 7, a
// VARCHAR(36) DEFAULT (UUID()) key. A table left out by name is untouched
// too. On a table the pattern fills whose key has no AUTO_INCREMENT an
// explicit 0 is kept (item 3); with AUTO_INCREMENT, and under an exact
// rule, 0 is filled as AUTO_INCREMENT does; zero: keep / fill override it.
func TestPatternFillsOnlyKeyTables(t *testing.T) {
	backend := testdb.Start(t)
	for _, loops := range []int{-1, 1} {
		t.Run(map[int]string{-1: "goroutines", 1: "event loop"}[loops], func(t *testing.T) {
			db := ormEngine(t, backend, loops, []rewriter.Rule{
				{Table: "app.exact0", Column: "id", Tag: "x"},
				{Table: "app.keep0", Column: "id", Tag: "x", Zero: rewriter.ZeroKeep},
				{Table: "app.fill*", Column: "id", Tag: "t", Zero: rewriter.ZeroFill},
				{Table: "app.*", Column: "id", Tag: "t", Exclude: []string{"skipped", "app.other_*"}},
			},
				"CREATE SEQUENCE app.s",
				"CREATE TABLE app.j (a INT, b INT)",
				"CREATE TABLE app.comp (id INT, b INT, v INT, PRIMARY KEY (id, b))",
				"CREATE TABLE app.named (pk INT PRIMARY KEY, v INT)",
				"CREATE TABLE app.nonkey (id INT, v INT)",
				"CREATE TABLE app.d (id INT PRIMARY KEY DEFAULT NEXTVAL(app.s), v INT)",
				"CREATE TABLE app.c (id INT PRIMARY KEY DEFAULT 7, v INT)",
				"CREATE TABLE app.u (id VARCHAR(36) PRIMARY KEY DEFAULT (UUID()), v INT)",
				"CREATE TABLE app.skipped (id INT PRIMARY KEY, v INT)",
				"CREATE TABLE app.other_1 (id INT PRIMARY KEY, v INT)",
				"CREATE TABLE app.books (id INT PRIMARY KEY, v INT)",
				"CREATE TABLE app.ai (id BIGINT AUTO_INCREMENT PRIMARY KEY, v INT)",
				"CREATE TABLE app.exact0 (id BIGINT PRIMARY KEY, v INT)",
				"CREATE TABLE app.keep0 (id BIGINT PRIMARY KEY, v INT)",
				"CREATE TABLE app.fill0 (id BIGINT PRIMARY KEY, v INT)")
			mustExec(t, db, "INSERT INTO j (a, b) VALUES (1, 2)")
			mustExec(t, db, "INSERT INTO j VALUES (3, 4)")
			mustExec(t, db, "INSERT INTO comp (id, b, v) VALUES (1, 1, 1)")
			mustExec(t, db, "INSERT INTO named (pk, v) VALUES (5, 1)")
			mustExec(t, db, "INSERT INTO nonkey (v) VALUES (1)")
			mustExec(t, db, "INSERT INTO d (v) VALUES (1), (2)")
			mustExec(t, db, "INSERT INTO c (v) VALUES (1)")
			mustExec(t, db, "INSERT INTO u (v) VALUES (1)")
			mustExec(t, db, "INSERT INTO skipped (id, v) VALUES (0, 1)")
			mustExec(t, db, "INSERT INTO other_1 (id, v) VALUES (0, 1)")
			check := func(q, want string) {
				t.Helper()
				if got := strings.Join(selectStrings(t, db, q), ","); got != want {
					t.Errorf("%s: %s; want %s (as directly)", q, got, want)
				}
			}
			check("SELECT CONCAT(a, b) FROM j ORDER BY a", "12,34")
			check("SELECT id FROM comp", "1")
			check("SELECT COALESCE(id, 'NULL') FROM nonkey", "NULL")
			check("SELECT id FROM d ORDER BY v", "1,2")
			var next string
			if err := backend.Open(t, "app").QueryRow("SELECT NEXTVAL(app.s)").Scan(&next); err != nil || next != "3" {
				t.Errorf("the native sequence's next value: %s, %v; want 3: it advanced for each row", next, err)
			}
			check("SELECT id FROM c", "7")
			check("SELECT LENGTH(id) FROM u", "36")
			check("SELECT id FROM skipped", "0")
			check("SELECT id FROM other_1", "0")

			// Filled: absent, NULL and DEFAULT get keys; 0 is kept where
			// the key never had AUTO_INCREMENT.
			mustExec(t, db, "INSERT INTO books (id, v) VALUES (0, 1), (NULL, 2), (DEFAULT, 3)")
			mustExec(t, db, "INSERT INTO books (v) VALUES (4)")
			ids := selectStrings(t, db, "SELECT id FROM books ORDER BY v")
			if len(ids) != 4 || ids[0] != "0" || ids[1] <= "1000" || ids[2] <= "1000" || ids[3] <= "1000" {
				t.Errorf("books: %v; want 0 and three generated keys", ids)
			}
			mustExec(t, db, "DELETE FROM books WHERE id = 0")
			mustExec(t, db, "INSERT INTO books (id, v) VALUES (?, ?)", 0, 5)
			check("SELECT id FROM books WHERE v = 5", "0")
			// 0 generates on an AUTO_INCREMENT key (a table moved off it),
			// under an exact rule, and with zero: fill; zero: keep keeps it.
			for _, table := range []string{"ai", "exact0", "fill0", "keep0"} {
				mustExec(t, db, "INSERT INTO "+table+" (id, v) VALUES (0, 1)")
				if _, err := db.Exec("INSERT INTO "+table+" (id, v) VALUES (?, 2)", 0); table == "keep0" && (err == nil || !strings.Contains(err.Error(), "1062")) {
					t.Errorf("keep0 (zero: keep): a second bound 0: %v; want 1062, the 0 kept", err)
				} else if table != "keep0" && err != nil {
					t.Fatal(err)
				}
				got := selectStrings(t, db, "SELECT id FROM "+table+" ORDER BY v")
				if table == "keep0" {
					if len(got) != 1 || got[0] != "0" {
						t.Errorf("%s (zero: keep): %v; want 0 kept", table, got)
					}
					continue
				}
				if len(got) != 2 || got[0] <= "1000" || got[1] <= "1000" {
					t.Errorf("%s: %v; want two generated keys for 0", table, got)
				}
			}
		})
	}
}

// Statements on tables outside every rule cost the backend exactly what
// they cost directly (issue 39 item 7): a text PREPARE of a literal, its
// EXECUTEs and an EXECUTE IMMEDIATE, with rules configured, add no
// statement of the proxy's own (Questions as directly).
func TestUnruledStatementsCostWhatTheyCostDirectly(t *testing.T) {
	backend := testdb.Start(t)
	run := func(db *sql.DB) int {
		t.Helper()
		conn, err := db.Conn(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		questions := func() int {
			var name string
			var n int
			if err := conn.QueryRowContext(t.Context(), "SHOW SESSION STATUS LIKE 'Questions'").Scan(&name, &n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		before := questions()
		for _, q := range []string{"PREPARE s FROM 'INSERT INTO t1 VALUES (1)'", "EXECUTE s", "EXECUTE s", "DEALLOCATE PREPARE s",
			"EXECUTE IMMEDIATE 'INSERT INTO t1 VALUES (2)'", "INSERT INTO t1 VALUES (3)", "SELECT 1"} {
			if _, err := conn.ExecContext(t.Context(), q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		return questions() - before
	}
	for _, loops := range []int{-1, 1} {
		db := ormEngine(t, backend, loops, []rewriter.Rule{{Table: "orders", Column: "id", Tag: "t"}, {Table: "app.o_*", Column: "id", Tag: "t"}},
			"CREATE TABLE app.t1 (a INT)")
		direct := run(backend.Open(t, "app"))
		if through := run(db); through != direct {
			t.Errorf("loops %d: %d Questions through the proxy, %d directly", loops, through, direct)
		}
	}
}
