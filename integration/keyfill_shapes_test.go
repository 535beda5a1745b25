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

// keyfillEnv: one backend with database app and rule tables orders
// (segment tag "order") and msgs (snowflake tag "msg"); plain is a table
// without a rule.
func keyfillEnv(t *testing.T) (*testdb.Server, *leaf) {
	backend := testdb.Start(t)
	backend.Open(t, "app")
	backend.Exec(t,
		"CREATE TABLE app.orders (id BIGINT PRIMARY KEY, v VARCHAR(64), n INT DEFAULT 0, UNIQUE KEY (v))",
		"CREATE TABLE app.msgs (id BIGINT PRIMARY KEY, v VARCHAR(64))",
		"CREATE TABLE app.plain (id BIGINT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(64))",
	)
	cfg := leafConfig(t, backend, nil)
	cfg.Sequences.Tags = map[string]config.Tag{
		"order": {Generator: "segment", Step: 1000},
		"msg":   {Generator: "snowflake"},
	}
	cfg.Snowflake.WorkerID = "3"
	cfg.Tables = []config.Table{
		{Table: "orders", Column: "id", Tag: "order"},
		{Table: "app.msgs", Column: "id", Tag: "msg"},
	}
	return backend, startLeaf(t, cfg)
}

// idOf reads the stored key of the row with v directly from the backend.
func idOf(t *testing.T, direct *sql.DB, table, v string) int64 {
	t.Helper()
	var id int64
	if err := direct.QueryRow("SELECT id FROM "+table+" WHERE v = ?", v).Scan(&id); err != nil {
		t.Fatalf("row %q in %s: %v", v, table, err)
	}
	return id
}

var protocols = []struct {
	name   string
	params map[string]string
}{
	{"text", map[string]string{"interpolateParams": "true", "multiStatements": "true"}},
	{"prepared", map[string]string{"multiStatements": "true"}},
}

// TestKeyfillShapes: every INSERT shape gets its key filled; the client
// reads the first generated key back as LastInsertId and from
// SELECT LAST_INSERT_ID(), and it equals the stored key.
func TestKeyfillShapes(t *testing.T) {
	backend, lf := keyfillEnv(t)
	direct := backend.Open(t, "app")
	for _, proto := range protocols {
		t.Run(proto.name, func(t *testing.T) {
			db := lf.open(t, "app", proto.params)
			conn, err := db.Conn(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			p := proto.name + "-"
			exec := func(q string, args ...any) sql.Result {
				t.Helper()
				res, err := conn.ExecContext(context.Background(), q, args...)
				if err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				return res
			}
			lastID := func() int64 {
				var v int64
				if err := conn.QueryRowContext(context.Background(), "SELECT LAST_INSERT_ID()").Scan(&v); err != nil {
					t.Fatal(err)
				}
				return v
			}
			// checkFirst: LastInsertId, LAST_INSERT_ID() and the stored key of
			// the statement's first row agree, and the rows after it ascend.
			checkFirst := func(res sql.Result, table string, vs ...string) {
				t.Helper()
				got, err := res.LastInsertId()
				if err != nil {
					t.Fatal(err)
				}
				want := idOf(t, direct, table, vs[0])
				if got != want || want <= 0 {
					t.Errorf("%s: LastInsertId %d, stored key %d", vs[0], got, want)
				}
				if l := lastID(); l != want {
					t.Errorf("%s: LAST_INSERT_ID() %d, stored key %d", vs[0], l, want)
				}
				prev := want
				for _, v := range vs[1:] {
					id := idOf(t, direct, table, v)
					if id <= prev {
						t.Errorf("%s: key %d not above the previous row's %d", v, id, prev)
					}
					prev = id
				}
			}

			checkFirst(exec("INSERT INTO orders (v) VALUES (?)", p+"single"), "orders", p+"single")
			checkFirst(exec("INSERT INTO orders (v, n) VALUES (?, 1), (?, 2), (?, 3)", p+"m1", p+"m2", p+"m3"), "orders", p+"m1", p+"m2", p+"m3")
			checkFirst(exec("INSERT INTO orders VALUE (NULL, ?, 5)", p+"nocols-null"), "orders", p+"nocols-null")
			checkFirst(exec("INSERT INTO orders (id, v) VALUES (NULL, ?), (DEFAULT, ?), (0, ?)", p+"null", p+"default", p+"zero"), "orders", p+"null", p+"default", p+"zero")
			checkFirst(exec("INSERT INTO orders SET v = ?, n = 7", p+"set"), "orders", p+"set")
			checkFirst(exec("INSERT IGNORE INTO orders (v) VALUES (?)", p+"ignore"), "orders", p+"ignore")
			checkFirst(exec("REPLACE INTO orders (v) VALUES (?)", p+"replace"), "orders", p+"replace")
			checkFirst(exec("INSERT INTO orders (v) VALUES (?) ON DUPLICATE KEY UPDATE n = n + 1", p+"odku"), "orders", p+"odku")
			checkFirst(exec("INSERT INTO app.msgs (v) VALUES (?), (?)", p+"snow1", p+"snow2"), "msgs", p+"snow1", p+"snow2")
			checkFirst(exec("INSERT INTO `app`.`orders` (`v`) VALUES (?)", p+"quoted"), "orders", p+"quoted")

			// An ON DUPLICATE KEY UPDATE that hits the existing row updates it.
			before := idOf(t, direct, "orders", p+"odku")
			exec("INSERT INTO orders (v) VALUES (?) ON DUPLICATE KEY UPDATE n = n + 1", p+"odku")
			if after := idOf(t, direct, "orders", p+"odku"); after != before {
				t.Errorf("ODKU changed the existing row's key %d -> %d", before, after)
			}

			// Explicit keys are kept and reported as MySQL reports them.
			// Apart per protocol: an explicit key moves the tag past it, as
			// AUTO_INCREMENT's counter, so the next protocol's generated keys
			// follow it.
			exec("INSERT INTO orders (id, v) VALUES (?, ?)", 424242+1_000_000*len(p), p+"explicit")
			if id := idOf(t, direct, "orders", p+"explicit"); id != int64(424242+1_000_000*len(p)) {
				t.Errorf("explicit key stored as %d", id)
			}

			// Each execute of one prepared statement gets fresh keys.
			st, err := conn.PrepareContext(context.Background(), "INSERT INTO orders (v) VALUES (?), (?)")
			if err != nil {
				t.Fatal(err)
			}
			var prevID int64
			for i := range 3 {
				a, b := fmt.Sprintf("%sstmt%da", p, i), fmt.Sprintf("%sstmt%db", p, i)
				res, err := st.Exec(a, b)
				if err != nil {
					t.Fatal(err)
				}
				checkFirst(res, "orders", a, b)
				id, _ := res.LastInsertId()
				if id <= prevID {
					t.Errorf("execute %d: key %d not above %d", i, id, prevID)
				}
				prevID = id
			}
			st.Close()
			// A prepared statement with the key as a placeholder: NULL and 0
			// take a generated key, a value is kept.
			st, err = conn.PrepareContext(context.Background(), "INSERT INTO orders (id, v) VALUES (?, ?)")
			if err != nil {
				t.Fatal(err)
			}
			for i, key := range []any{nil, 0, 777000 + len(p)} {
				v := fmt.Sprintf("%sph%d", p, i)
				if _, err := st.Exec(key, v); err != nil {
					t.Fatal(err)
				}
				id := idOf(t, direct, "orders", v)
				if k, ok := key.(int); ok && k != 0 && id != int64(k) {
					t.Errorf("explicit placeholder key %d stored as %d", k, id)
				} else if (!ok || k == 0) && (id <= 0 || id == int64(777000+len(p))) {
					t.Errorf("placeholder key %v: stored %d, want a generated key", key, id)
				}
			}
			st.Close()

			// Several INSERTs in one multi-statement query.
			if proto.name == "text" {
				exec(fmt.Sprintf("INSERT INTO orders (v) VALUES ('%smulti1'); INSERT INTO app.msgs (v) VALUES ('%smulti2'); INSERT INTO plain (v) VALUES ('x')", p, p))
				if idOf(t, direct, "orders", p+"multi1") <= 0 || idOf(t, direct, "msgs", p+"multi2") <= 0 {
					t.Error("multi-statement rows not filled")
				}
			}
		})
	}

	// No key stored twice across everything above.
	var n, d int
	direct.QueryRow("SELECT COUNT(*), COUNT(DISTINCT id) FROM orders").Scan(&n, &d)
	if n == 0 || n != d {
		t.Fatalf("orders: %d rows, %d distinct keys", n, d)
	}
}

// TestKeyfillReturning: MariaDB's INSERT / REPLACE ... RETURNING on rule
// tables, text and prepared: the keys are filled before RETURNING, and the
// server returns the stored keys itself, one row per inserted row, in row
// order; LAST_INSERT_ID() is still the first row's key.
func TestKeyfillReturning(t *testing.T) {
	backend, lf := keyfillEnv(t)
	direct := backend.Open(t, "app")
	for _, proto := range protocols {
		t.Run(proto.name, func(t *testing.T) {
			db := lf.open(t, "app", proto.params)
			ctx := context.Background()
			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			p := proto.name + "-ret-"
			// returning runs q (through st when given) and checks that it
			// returns (id, v) rows for vs in order, with the stored keys.
			returning := func(st *sql.Stmt, table, q string, vs ...string) []int64 {
				t.Helper()
				args := make([]any, len(vs))
				for i, v := range vs {
					args[i] = v
				}
				var rows *sql.Rows
				if st != nil {
					rows, err = st.QueryContext(ctx, args...)
				} else {
					rows, err = conn.QueryContext(ctx, q, args...)
				}
				if err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				var ids []int64
				for i := 0; rows.Next(); i++ {
					var id int64
					var v string
					if err := rows.Scan(&id, &v); err != nil {
						t.Fatal(err)
					}
					if i >= len(vs) || v != vs[i] {
						t.Fatalf("%s: row %d is %q, want %q", q, i, v, vs)
					}
					if want := idOf(t, direct, table, v); id != want || id <= 0 {
						t.Errorf("%s: RETURNING gave id %d for %q, stored key %d", q, id, v, want)
					}
					if i > 0 && id <= ids[i-1] {
						t.Errorf("%s: key %d not above the previous row's %d", q, id, ids[i-1])
					}
					ids = append(ids, id)
				}
				if err := rows.Err(); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				rows.Close()
				if len(ids) != len(vs) {
					t.Fatalf("%s: %d rows returned, want %d", q, len(ids), len(vs))
				}
				var last int64
				if err := conn.QueryRowContext(ctx, "SELECT LAST_INSERT_ID()").Scan(&last); err != nil || last != ids[0] {
					t.Errorf("%s: LAST_INSERT_ID() %d (%v), first returned key %d", q, last, err, ids[0])
				}
				return ids
			}

			returning(nil, "orders", "INSERT INTO orders (v) VALUES (?) RETURNING id, v", p+"one")
			returning(nil, "orders", "INSERT INTO orders (v) VALUES (?), (?), (?) RETURNING id, v", p+"m1", p+"m2", p+"m3")
			returning(nil, "orders", "INSERT INTO orders (id, v) VALUES (NULL, ?), (0, ?) RETURNING id, v", p+"null", p+"zero")
			returning(nil, "orders", "INSERT INTO orders SET v = ? RETURNING id, v", p+"set")
			returning(nil, "orders", "REPLACE INTO orders (v) VALUES (?) RETURNING `id`, `v`", p+"replace")
			returning(nil, "orders", "INSERT INTO orders (v) VALUES (?) ON DUPLICATE KEY UPDATE n = n + 1 RETURNING id, v", p+"odku")
			returning(nil, "msgs", "INSERT INTO app.msgs (v) VALUES (?), (?) RETURNING id, v", p+"snow1", p+"snow2")

			// One prepared statement executed again: fresh keys each time.
			st, err := conn.PrepareContext(ctx, "INSERT INTO orders (v) VALUES (?), (?) RETURNING id, v")
			if err != nil {
				t.Fatal(err)
			}
			seen := map[int64]bool{}
			for i := range 3 {
				for _, id := range returning(st, "orders", "prepared RETURNING", fmt.Sprintf("%sst%da", p, i), fmt.Sprintf("%sst%db", p, i)) {
					if seen[id] {
						t.Errorf("key %d returned twice", id)
					}
					seen[id] = true
				}
			}
			st.Close()

			// An explicit key is kept and returned.
			var id int64
			if err := conn.QueryRowContext(ctx, "INSERT INTO orders (id, v) VALUES (?, ?) RETURNING id", 515000+1_000_000*len(p), p+"explicit").Scan(&id); err != nil || id != int64(515000+1_000_000*len(p)) {
				t.Errorf("explicit key: RETURNING %d (%v), want %d", id, err, 515000+1_000_000*len(p))
			}
		})
	}
}

// TestKeyfillZeroAndColumnOrder: NO_AUTO_VALUE_ON_ZERO keeps a 0 key; an
// INSERT without a column list follows the table's column order, also after
// DDL moves the key column.
func TestKeyfillZeroAndColumnOrder(t *testing.T) {
	backend, lf := keyfillEnv(t)
	direct := backend.Open(t, "app")
	db := lf.open(t, "app", map[string]string{"interpolateParams": "true"})
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := context.Background()
	mustExec := func(q string) {
		t.Helper()
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	mustExec("SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_AUTO_VALUE_ON_ZERO')")
	mustExec("INSERT INTO orders (id, v) VALUES (0, 'zero-kept')")
	if id := idOf(t, direct, "orders", "zero-kept"); id != 0 {
		t.Errorf("NO_AUTO_VALUE_ON_ZERO: 0 stored as %d", id)
	}
	mustExec("INSERT INTO orders (id, v) VALUES (NULL, 'null-filled')")
	if id := idOf(t, direct, "orders", "null-filled"); id <= 0 {
		t.Errorf("NULL under NO_AUTO_VALUE_ON_ZERO stored as %d", id)
	}
	mustExec("SET SESSION sql_mode = DEFAULT")

	mustExec("INSERT INTO orders VALUES (NULL, 'order-before', 1)")
	// The key moves to the last position: the cached column order must be dropped.
	mustExec("ALTER TABLE orders MODIFY id BIGINT NOT NULL AFTER n")
	mustExec("INSERT INTO orders VALUES ('order-after', 2, NULL)")
	var n int
	if err := direct.QueryRow("SELECT n FROM orders WHERE v = 'order-after'").Scan(&n); err != nil || n != 2 {
		t.Fatalf("after DDL: n = %d (%v)", n, err)
	}
	if id := idOf(t, direct, "orders", "order-after"); id <= idOf(t, direct, "orders", "order-before") {
		t.Errorf("after DDL: key %d", id)
	}
	// DDL is relayed as written: MariaDB's own sequences in column
	// defaults are not NEXTVALs for the proxy to evaluate.
	mustExec("CREATE SEQUENCE native_seq")
	mustExec("CREATE TABLE native_keyed (id BIGINT NOT NULL DEFAULT NEXTVAL(native_seq) PRIMARY KEY, v INT)")
	mustExec("ALTER TABLE native_keyed MODIFY id BIGINT NOT NULL DEFAULT (NEXT VALUE FOR native_seq)")
	mustExec("INSERT INTO native_keyed (v) VALUES (1)")
	if err := direct.QueryRow("SELECT id FROM native_keyed").Scan(&n); err != nil || n != 1 {
		t.Errorf("native sequence default: id %d, err %v", n, err)
	}
}

// TestKeyfillRefusals: what cannot be filled correctly is refused with a
// clear error naming the table, and nothing reaches the backend; the same
// statements on tables without rules pass through untouched.
func TestKeyfillRefusals(t *testing.T) {
	backend, lf := keyfillEnv(t)
	direct := backend.Open(t, "app")
	db := lf.open(t, "app", nil)
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := context.Background()
	for _, tc := range []struct{ q, want string }{
		{"INSERT INTO orders (v) SELECT v FROM plain WHERE v = NEXTVAL(order)", "NEXTVAL(order)"},
		{"INSERT INTO orders (v) VALUES ('ret') RETURNING id, NEXTVAL(order)", "RETURNING"},
		// MySQL's row alias: MariaDB's own syntax error, as directly (the
		// server prepares what the proxy's parser cannot read).
		{"INSERT INTO orders (v) VALUES ('ret') AS new ON DUPLICATE KEY UPDATE n = new.n", "near 'AS new"},
	} {
		_, err := conn.ExecContext(ctx, tc.q)
		code, _ := myErr(err)
		if err == nil || code == 0 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want a MySQL error naming %q", tc.q, err, tc.want)
		}
	}
	var n int
	direct.QueryRow("SELECT COUNT(*) FROM orders").Scan(&n)
	if n != 0 {
		t.Errorf("%d rows reached orders from refused statements", n)
	}
	// Key columns that cannot hold the generator's IDs are refused, naming
	// the table and the type, before any ID is drawn or any row written.
	backend.Exec(t, "CREATE TABLE app.uuid_keyed (id VARCHAR(36) PRIMARY KEY, v VARCHAR(64))",
		"CREATE TABLE app.narrow (id INT PRIMARY KEY, v VARCHAR(64))")
	lf2cfg := leafConfig(t, backend, nil)
	lf2cfg.Sequences.Tags = map[string]config.Tag{"msg": {Generator: "snowflake"}}
	lf2cfg.Snowflake.WorkerID = "4"
	lf2cfg.Tables = []config.Table{{Table: "uuid_keyed", Column: "id", Tag: "order"}, {Table: "narrow", Column: "id", Tag: "msg"}}
	db2 := startLeaf(t, lf2cfg).open(t, "app", nil)
	for _, tc := range []struct{ q, want string }{
		{"INSERT INTO uuid_keyed (v) VALUES ('a')", "app.uuid_keyed.id"},
		{"INSERT INTO narrow (v) VALUES ('a')", "too narrow"},
	} {
		_, err := db2.Exec(tc.q)
		if code, _ := myErr(err); code != 1235 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want 1235 mentioning %q", tc.q, err, tc.want)
		}
	}
	direct.QueryRow("SELECT (SELECT COUNT(*) FROM uuid_keyed) + (SELECT COUNT(*) FROM narrow)").Scan(&n)
	if n != 0 {
		t.Errorf("%d rows written into tables whose key cannot hold generated IDs", n)
	}

	// Without a rule, MariaDB's RETURNING passes through and works.
	var id int64
	if err := conn.QueryRowContext(ctx, "INSERT INTO plain (v) VALUES ('r') RETURNING id").Scan(&id); err != nil || id <= 0 {
		t.Errorf("RETURNING on a table without a rule: id %d, err %v", id, err)
	}
	// A 70,000-row statement (more IDs than the engine keeps scratch space
	// for between statements) is filled row by row with distinct keys.
	var sb strings.Builder
	sb.WriteString("INSERT INTO orders (v) VALUES ")
	const bigRows = 70000
	for i := range bigRows {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, "('big%d')", i)
	}
	res, err := conn.ExecContext(ctx, sb.String())
	if err != nil {
		t.Fatal(err)
	}
	if rows, _ := res.RowsAffected(); rows != bigRows {
		t.Fatalf("affected %d", rows)
	}
	var cnt, dist int
	var minID int64
	direct.QueryRow("SELECT COUNT(*), COUNT(DISTINCT id), MIN(id) FROM orders WHERE v LIKE 'big%'").Scan(&cnt, &dist, &minID)
	first, _ := res.LastInsertId()
	if cnt != bigRows || dist != bigRows || first != minID {
		t.Fatalf("%d rows: %d stored, %d distinct, first key %d, LastInsertId %d", bigRows, cnt, dist, minID, first)
	}
}
