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

// Fidelity of filled statements: the proxy splices the key into the
// original text and nothing else may change. Each case runs the same
// INSERT twice, in identical sessions: directly on MariaDB into the twin
// table fd (explicit keys, fd is not a rule table) and through the proxy
// into fp (a rule table, key omitted / NULL / DEFAULT so the proxy fills
// it). The non-key columns must then be byte-for-byte equal (HEX()).
//
// Statement templates: @T is the table; @K is "id, " for the direct run and
// the fill's column prefix for the proxy run (inside a column list); @V is
// the key value and a comma for each row ("7, " direct, "" / "NULL, " /
// "DEFAULT, " through the proxy); @S is "id = 7, " or "" / "id = NULL, " in
// INSERT ... SET.

const fidelityTable = `(id BIGINT PRIMARY KEY,
	c VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
	b VARBINARY(200) NULL,
	l VARCHAR(200) CHARACTER SET latin1 NULL)`

type fidelityCase struct {
	name  string
	setup []string // run first in both sessions (SET sql_mode ...)
	warm  bool     // the proxy session reads the sql_mode before setup
	sql   string   // template, see above
	args  []any    // non-nil: a prepared statement with these arguments
}

var fidelityCases = []fidelityCase{
	{name: "backslashes", sql: `INSERT INTO @T (@Kc, b) VALUES (@V'a\\b \\\\ c\\', 'd\'q\' \n\t\r\Z\0 \%\_ \x')`},
	{name: "quotes", sql: `INSERT INTO @T (@Kc, l) VALUES (@V'it''s "dq" ` + "`bt`" + `', "dq""x 'sq' \"")`},
	{name: "emoji", sql: `INSERT INTO @T (@Kc, b) VALUES (@V'😀 ü 中文 𝄞 ☃', '👍🏽')`},
	{name: "binary literals", sql: "INSERT INTO @T (@Kb, c) VALUES (@V_binary'\xff\x80\xfe raw', _binary 'x\\0y\\\\')"},
	{name: "hex and bit literals", sql: `INSERT INTO @T (@Kb, c, l) VALUES (@VX'DEADBEEF00', 0x4142, b'0110000101100010'), (@Vx'', 0b01000011, B'1000100')`},
	{name: "comments", sql: "INSERT /* c1 */ INTO /* it's ) */ @T -- dash ) '\n (@K/* col ( */ c, # hash '\n b) VALUES /* v */ (@V'x' /* ,'y' */, -- ,\n 'z') # trailing ("},
	{name: "trailing dash comment", sql: "INSERT INTO @T (@Kc) VALUES (@V'end') -- last words"},
	{name: "optimizer hints", sql: `INSERT /*+ SET_VAR(sort_buffer_size = 16M) NO_RANGE_OPTIMIZATION(t1) */ INTO @T (@Kc) VALUES (@V/*+ not a hint */ 'hinted')`},
	{name: "executable comments", sql: `INSERT /*! IGNORE */ INTO @T (@Kc, b /*!40101 , l */) VALUES (@V/*!50000 'exec' */, 'shown' /*!32302 , 'ver' */)`},
	{name: "charset introducers", sql: "INSERT INTO @T (@Kc, l, b) VALUES (@V_utf8mb4'ü€' COLLATE utf8mb4_bin, _latin1'\xfc\xe9 latin1', _utf8mb4 0x41C3BC), (@VN'national', _latin1 X'E9', _binary'\\'')"},
	{name: "insert set", sql: `INSERT INTO @T SET @S c = 'set\\x', b = _binary'\'', l = "q'q"`},
	{name: "multi-row mix", sql: "INSERT INTO @T (@Kc, b, l) VALUES (@V'r1\\\\', X'00', 'a'), /* between */ (@V'r2 😀', _binary'\\0', \"b\"), (@V'r3 -- not a comment', '/* nor this */', '# nor')"},
	{
		name:  "NO_BACKSLASH_ESCAPES",
		setup: []string{"SET sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES')"},
		sql:   `INSERT INTO @T (@Kc, l) VALUES (@V'C:\dir\', 'a\'), (@V'\', '\''x')`,
	},
	{
		name:  "NO_BACKSLASH_ESCAPES after comment",
		setup: []string{"/* pool */ SET sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES')"},
		warm:  true,
		sql:   `INSERT INTO @T (@Kc, l) VALUES (@V'C:\dir\', 'a\'), (@V'\', '\''x')`,
	},
	{
		name:  "ANSI_QUOTES",
		setup: []string{"SET SESSION sql_mode = CONCAT(@@sql_mode, ',ANSI_QUOTES')"},
		sql:   `INSERT INTO "@T" (@K"c", "l") VALUES (@V'it''s', 'say "hi"'), (@V'a\'b', 'x')`,
	},
	{
		name:  "ANSI and NO_BACKSLASH_ESCAPES",
		setup: []string{"SET @@session.sql_mode = 'ANSI,NO_BACKSLASH_ESCAPES'"},
		sql:   `INSERT INTO "@T" (@K"c") VALUES (@V'\'), (@V'"\"')`,
	},
	// Prepared statements with arguments: ? markers among literals and
	// comments that contain ? (not markers).
	{
		name: "prepared args",
		sql:  "INSERT INTO @T (@Kc, b, l) VALUES (@V? /* ? */, ?, CONCAT(?, '?', _latin1'\xe9')) -- ?",
		args: []any{"emoji 😀 \\ back'slash", []byte{0, 0xff, 0x80, '\\', '\''}, "é?"},
	},
	{
		name:  "prepared NO_BACKSLASH_ESCAPES",
		setup: []string{"SET sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES')"},
		sql:   `INSERT INTO @T (@Kc, b) VALUES (@V'\', ?), (@V?, '\?')`,
		args:  []any{[]byte("bin\\"), "two ?"},
	},
}

type fidelityFill struct {
	name string
	k, v string // proxy's @K and @V
	s    string // proxy's @S
}

var fidelityFills = []fidelityFill{
	{"omitted", "", "", ""},
	{"NULL", "id, ", "NULL, ", "id = NULL, "},
	{"DEFAULT", "id, ", "DEFAULT, ", "id = DEFAULT, "},
}

// render fills a template. keys == nil: the proxy's form with fill f.
func (c fidelityCase) render(table string, keys []int64, f fidelityFill) string {
	q := strings.ReplaceAll(c.sql, "@T", table)
	if keys != nil {
		q = strings.ReplaceAll(q, "@K", "id, ")
		q = strings.ReplaceAll(q, "@S", fmt.Sprintf("id = %d, ", keys[0]))
		for _, k := range keys {
			q = strings.Replace(q, "@V", fmt.Sprintf("%d, ", k), 1)
		}
		return q
	}
	q = strings.ReplaceAll(q, "@K", f.k)
	q = strings.ReplaceAll(q, "@S", f.s)
	return strings.ReplaceAll(q, "@V", f.v)
}

func (c fidelityCase) rows() int {
	if n := strings.Count(c.sql, "@V"); n > 0 {
		return n
	}
	return 1
}

type fidelityRow struct {
	id      int64
	c, b, l sql.NullString // HEX() of each column
}

func fidelityRows(t *testing.T, conn *sql.Conn, table string) []fidelityRow {
	t.Helper()
	rows, err := conn.QueryContext(context.Background(), "SELECT id, HEX(c), HEX(b), HEX(l) FROM app."+table+" ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []fidelityRow
	for rows.Next() {
		var r fidelityRow
		if err := rows.Scan(&r.id, &r.c, &r.b, &r.l); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func fidelityEnv(t *testing.T) (*testdb.Server, *leaf) {
	backend := testdb.Start(t)
	backend.Open(t, "app")
	backend.Exec(t, "CREATE TABLE app.fp "+fidelityTable, "CREATE TABLE app.fd "+fidelityTable)
	cfg := leafConfig(t, backend, nil)
	cfg.Sequences.Tags = map[string]config.Tag{"fp": {Generator: "segment"}}
	cfg.Tables = []config.Table{{Table: "fp", Column: "id", Tag: "fp"}}
	return backend, startLeaf(t, cfg)
}

// sessionConn is a fresh single connection (so a case's SET sql_mode does
// not leak into the next), closed at the end of the test.
func sessionConn(t *testing.T, dsn string) *sql.Conn {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// TestKeyfillFidelity: every case, every fill form, in the text protocol
// and (for cases without arguments too) as a server-side prepared
// statement: through the proxy the key is generated (LastInsertId() is the
// first row's stored key, the rows' keys are fresh and ascending), and the
// other columns are stored exactly as by the same statement sent directly.
func TestKeyfillFidelity(t *testing.T) {
	backend, lf := fidelityEnv(t)
	ctx := context.Background()
	admin := backend.Open(t, "app")
	nextDirect := int64(1_000_000_000)
	used := map[int64]bool{}

	for _, c := range fidelityCases {
		protos := []string{"text", "prepared"}
		if c.args != nil {
			protos = []string{"prepared"}
		}
		for _, proto := range protos {
			for _, f := range fidelityFills {
				if f.name != "omitted" && !strings.Contains(c.sql, "@V") && !strings.Contains(c.sql, "@S") {
					continue
				}
				t.Run(c.name+"/"+proto+"/"+f.name, func(t *testing.T) {
					if _, err := admin.Exec("DELETE FROM fp"); err != nil {
						t.Fatal(err)
					}
					if _, err := admin.Exec("DELETE FROM fd"); err != nil {
						t.Fatal(err)
					}
					direct := sessionConn(t, backend.DSN("app"))
					proxied := sessionConn(t, lf.dsn("app", nil))
					if c.warm {
						if _, err := proxied.ExecContext(ctx, "SELECT NEXTVAL(fp)"); err != nil {
							t.Fatal(err)
						}
					}
					for _, conn := range []*sql.Conn{direct, proxied} {
						for _, q := range c.setup {
							if _, err := conn.ExecContext(ctx, q); err != nil {
								t.Fatalf("%s: %v", q, err)
							}
						}
					}
					keys := make([]int64, c.rows())
					for i := range keys {
						keys[i] = nextDirect
						nextDirect++
					}
					exec := func(conn *sql.Conn, q string) (sql.Result, error) {
						if proto == "text" {
							return conn.ExecContext(ctx, q) // no arguments: COM_QUERY
						}
						st, err := conn.PrepareContext(ctx, q)
						if err != nil {
							return nil, err
						}
						defer st.Close()
						return st.ExecContext(ctx, c.args...)
					}
					dq := c.render("fd", keys, f)
					if _, err := exec(direct, dq); err != nil {
						t.Fatalf("direct %q: %v", dq, err)
					}
					pq := c.render("fp", nil, f)
					res, err := exec(proxied, pq)
					if err != nil {
						t.Fatalf("proxy %q: %v", pq, err)
					}
					want := fidelityRows(t, direct, "fd")
					got := fidelityRows(t, direct, "fp")
					if len(want) != c.rows() || len(got) != len(want) {
						t.Fatalf("%d rows direct, %d through the proxy, want %d\ndirect: %s\nproxy:  %s", len(want), len(got), c.rows(), dq, pq)
					}
					first, err := res.LastInsertId()
					if err != nil || first != got[0].id {
						t.Fatalf("LastInsertId %d (%v), first stored key %d", first, err, got[0].id)
					}
					for i := range got {
						if got[i].id <= 0 || got[i].id >= 1_000_000_000 || used[got[i].id] {
							t.Fatalf("row %d: key %d is not a fresh generated key\ndirect %q: %+v\nproxy  %q: %+v", i, got[i].id, dq, want, pq, got)
						}
						used[got[i].id] = true
						w, g := want[i], got[i]
						if w.c != g.c || w.b != g.b || w.l != g.l {
							t.Fatalf("row %d differs\ndirect %q\n  c=%v b=%v l=%v\nproxy  %q\n  c=%v b=%v l=%v",
								i, dq, w.c, w.b, w.l, pq, g.c, g.b, g.l)
						}
					}
				})
			}
		}
	}
}

// keyOf runs q through the proxy session and returns the key stored for
// the row whose c is c (read directly), failing on an error.
func keyOf(t *testing.T, admin *sql.DB, proxied *sql.Conn, q, c string) int64 {
	t.Helper()
	if _, err := proxied.ExecContext(context.Background(), q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	var id int64
	if err := admin.QueryRow("SELECT id FROM fp WHERE c = ?", c).Scan(&id); err != nil {
		t.Fatalf("row %q: %v", c, err)
	}
	return id
}

// TestKeyfillVersionedComment: MariaDB skips /*!NNNNN ... */ with a
// MySQL version from 50700 and /*M!MMmmpp ... */ newer than itself, MySQL
// skips every /*M! ... */; the parser runs them all. On a rule table such
// a comment is error 1235 naming the table, and a row whose value count
// differs from the column count is error 1136 (before, the statement
// passed through unfilled and INSERT IGNORE stored the row with key 0).
// Comments every server runs (/*!, /*!4xxxx) are covered by the fidelity
// cases.
func TestKeyfillVersionedComment(t *testing.T) {
	backend, lf := fidelityEnv(t)
	admin := backend.Open(t, "app")
	proxied := sessionConn(t, lf.dsn("app", nil))
	for _, tt := range []struct {
		q    string
		code uint16
	}{
		{"INSERT IGNORE INTO fp (c, b) VALUES ('v1', /*!99999 'hidden', */ 'x')", 1235},
		{"INSERT IGNORE INTO fp (c, b) VALUES ('v2', /*!50700 'hidden', */ 'x')", 1235},
		{"INSERT INTO fp (c /*M!100100 , b */) VALUES ('m' /*M!100100 , 'mariadb' */)", 1235},
		{"INSERT IGNORE INTO fp (c /*!999999 , b */) VALUES ('v3' /*!999999 , 'x' */)", 1235},
		{"INSERT IGNORE INTO fp (c, b) VALUES ('v4')", 1136},
		{"INSERT IGNORE INTO fp (c) VALUES ('v5'), ('v6', 'x')", 1136},
	} {
		_, err := proxied.ExecContext(context.Background(), tt.q)
		code, _ := myErr(err)
		// 1136 keeps MariaDB's words first, then what the proxy read
		// (internal/errstyle); 1235 is the proxy's own.
		if code != tt.code || !strings.Contains(fmt.Sprint(err), "leafproxy") && !strings.Contains(fmt.Sprint(err), "the proxy reads") {
			t.Errorf("%s: want error %d from the proxy, got %v", tt.q, tt.code, err)
		}
		if tt.code == 1235 && !strings.Contains(fmt.Sprint(err), "fp") {
			t.Errorf("%s: error does not name the table: %v", tt.q, err)
		}
	}
	var n int
	if err := admin.QueryRow("SELECT COUNT(*) FROM fp").Scan(&n); err != nil || n != 0 {
		t.Fatalf("rows stored: %d (%v)", n, err)
	}
	// A versioned comment on a table without a rule passes through.
	if _, err := proxied.ExecContext(context.Background(), "INSERT INTO fd (id, c) VALUES (1, 'd' /*!99999 , 'x' */)"); err != nil {
		t.Fatal(err)
	}
}

// TestKeyfillModeInExecutableComment: the proxy re-reads the session's
// sql_mode after a statement starting with SET, also when it is wrapped
// in an executable comment, as mysqldump writes them
// (/*!40101 SET SQL_MODE='NO_AUTO_VALUE_ON_ZERO' */). With a stale mode,
// NO_BACKSLASH_ESCAPES: a valid INSERT gets error 1235 (mis-lexed);
// NO_AUTO_VALUE_ON_ZERO: an explicit key 0 is replaced by a generated key
// (a dump restored through the proxy changes its data).
func TestKeyfillModeInExecutableComment(t *testing.T) {
	backend, lf := fidelityEnv(t)
	admin := backend.Open(t, "app")
	ctx := context.Background()
	t.Run("NO_AUTO_VALUE_ON_ZERO", func(t *testing.T) {
		proxied := sessionConn(t, lf.dsn("app", nil))
		if id := keyOf(t, admin, proxied, "INSERT INTO fp (c) VALUES ('warm')", "warm"); id <= 0 {
			t.Fatalf("warm-up key %d", id)
		}
		if _, err := proxied.ExecContext(ctx, "/*!40101 SET sql_mode = CONCAT(@@sql_mode, ',NO_AUTO_VALUE_ON_ZERO') */"); err != nil {
			t.Fatal(err)
		}
		if id := keyOf(t, admin, proxied, "INSERT INTO fp (id, c) VALUES (0, 'zero')", "zero"); id != 0 {
			t.Fatalf("under NO_AUTO_VALUE_ON_ZERO the explicit key 0 was stored as %d", id)
		}
	})
	t.Run("NO_BACKSLASH_ESCAPES", func(t *testing.T) {
		proxied := sessionConn(t, lf.dsn("app", nil))
		if id := keyOf(t, admin, proxied, "INSERT INTO fp (c) VALUES ('warm2')", "warm2"); id <= 0 {
			t.Fatalf("warm-up key %d", id)
		}
		if _, err := proxied.ExecContext(ctx, "/*!40101 SET sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES') */"); err != nil {
			t.Fatal(err)
		}
		if id := keyOf(t, admin, proxied, `INSERT INTO fp (c, l) VALUES ('C:\dir\', 'nbe')`, `C:\dir\`); id <= 0 {
			t.Fatalf("key %d", id)
		}
	})
}

// TestKeyfillSetStatementFor: MariaDB's SET STATEMENT var = value FOR
// INSERT ... into a rule table gets its key filled (before: error 1364,
// or with INSERT IGNORE / a non-strict sql_mode a row with key 0);
// SET STATEMENT sql_mode=... FOR is refused (the proxy plans with the
// session's sql_mode).
func TestKeyfillSetStatementFor(t *testing.T) {
	backend, lf := fidelityEnv(t)
	admin := backend.Open(t, "app")
	proxied := sessionConn(t, lf.dsn("app", nil))
	ctx := context.Background()
	for _, q := range []struct{ sql, c string }{
		{"SET STATEMENT max_statement_time = 0 FOR INSERT INTO fp (c) VALUES ('st')", "st"},
		{"SET STATEMENT max_statement_time = 0 FOR INSERT IGNORE INTO fp SET c = 'st2'", "st2"},
		{"/* c */ SET STATEMENT max_statement_time=0, lock_wait_timeout=5 FOR REPLACE INTO fp (id, c) VALUES (NULL, 'st3')", "st3"},
	} {
		res, err := proxied.ExecContext(ctx, q.sql)
		if err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
		var id int64
		if err := admin.QueryRow("SELECT id FROM fp WHERE c = ?", q.c).Scan(&id); err != nil {
			t.Fatalf("row %q: %v", q.c, err)
		}
		if last, _ := res.LastInsertId(); id <= 0 || last != id {
			t.Fatalf("%s: stored key %d, LastInsertId %d", q.sql, id, last)
		}
	}
	q := "SET STATEMENT sql_mode = 'NO_AUTO_VALUE_ON_ZERO' FOR INSERT INTO fp (id, c) VALUES (0, 'z')"
	if _, err := proxied.ExecContext(ctx, q); err == nil {
		t.Fatalf("%s: no error", q)
	} else if code, _ := myErr(err); code != 1235 {
		t.Fatalf("%s: want error 1235, got %v", q, err)
	}
}
