package integration

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
)

// The edges of issue 28, each run twice: directly against an
// AUTO_INCREMENT twin (app.t_ai) and through the proxy against a rule
// table (app.t_rule, filled from tag "twin"). Keys are compared relative
// to each side's first generated key F, so {F+3} in a statement is F+3 on
// either side.

// twinSide is one side of a twin run: one session (sql_mode and
// LAST_INSERT_ID() are per session), its table, its first key.
type twinSide struct {
	name  string
	conn  *sql.Conn
	table string
	first int64
}

// twinStep is one statement: text ({T}: the table, {F+n}: a key relative
// to F), args (func of F) for a prepared execute, or nil for text.
type twinStep struct {
	sql  string
	args func(f int64) []any
}

// twinEnv: the backend, a proxy with the rule, and both sessions
// (prepared statements stay prepared: interpolateParams off).
func twinEnv(t *testing.T, keyType string) (direct, proxied *twinSide) {
	t.Helper()
	backend := testdb.Start(t)
	backend.Open(t, "app")
	backend.Exec(t, "CREATE TABLE app.t_ai (id "+keyType+" AUTO_INCREMENT PRIMARY KEY, b VARCHAR(20))")
	backend.Exec(t, "CREATE TABLE app.t_rule (id "+keyType+" PRIMARY KEY, b VARCHAR(20))")
	cfg := leafConfig(t, backend, nil)
	cfg.Sequences.Tags = map[string]config.Tag{"twin": {Generator: "segment", Step: 100000}}
	cfg.Tables = []config.Table{{Table: "app.t_rule", Column: "id", Tag: "twin"}}
	lf := startLeaf(t, cfg)
	ctx := context.Background()
	conn := func(db *sql.DB) *sql.Conn {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	dsn := directDSN(backend, "app", "multiStatements=true&allowAllFiles=true")
	ddb, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ddb.Close() })
	pdb := lf.open(t, "app", map[string]string{"multiStatements": "true", "allowAllFiles": "true"})
	direct = &twinSide{name: "direct", conn: conn(ddb), table: "t_ai"}
	proxied = &twinSide{name: "proxy", conn: conn(pdb), table: "t_rule"}
	for _, s := range []*twinSide{direct, proxied} {
		res, err := s.conn.ExecContext(ctx, "INSERT INTO "+s.table+" (b) VALUES ('first')")
		if err != nil {
			t.Fatalf("%s: first insert: %v", s.name, err)
		}
		s.first, _ = res.LastInsertId()
	}
	return direct, proxied
}

// text renders a step's statement for s.
func (s *twinSide) text(q string) string {
	q = strings.ReplaceAll(q, "{T}", s.table)
	for {
		i := strings.Index(q, "{F+")
		if i < 0 {
			return q
		}
		j := strings.IndexByte(q[i:], '}') + i
		var n int64
		fmt.Sscan(q[i+3:j], &n)
		q = q[:i] + fmt.Sprint(s.first+n) + q[j+1:]
	}
}

// observe runs step and says what the client sees: the error code or the
// affected rows and insert id (relative to F when it is a key), then
// LAST_INSERT_ID() and the table's rows, keys relative to F.
func (s *twinSide) observe(t *testing.T, step twinStep) string {
	t.Helper()
	ctx := context.Background()
	var out strings.Builder
	rel := func(id int64) string {
		if id <= 0 {
			return fmt.Sprint(id) // not a generated key: as it is
		}
		return fmt.Sprintf("F%+d", id-s.first)
	}
	var res sql.Result
	var err error
	if step.args != nil {
		res, err = s.conn.ExecContext(ctx, s.text(step.sql), step.args(s.first)...)
	} else {
		res, err = s.conn.ExecContext(ctx, s.text(step.sql))
	}
	if err != nil {
		code, _ := myErr(err)
		fmt.Fprintf(&out, "error %d", code)
	} else {
		n, _ := res.RowsAffected()
		id, _ := res.LastInsertId()
		fmt.Fprintf(&out, "affected %d, insert id %s", n, rel(id))
	}
	var last int64
	if err := s.conn.QueryRowContext(ctx, "SELECT LAST_INSERT_ID()").Scan(&last); err != nil {
		t.Fatalf("%s: LAST_INSERT_ID(): %v", s.name, err)
	}
	fmt.Fprintf(&out, "; LAST_INSERT_ID() %s; rows", rel(last))
	rows, err := s.conn.QueryContext(ctx, "SELECT id, b FROM "+s.table+" ORDER BY id")
	if err != nil {
		t.Fatalf("%s: %v", s.name, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var b sql.NullString
		if err := rows.Scan(&id, &b); err != nil {
			t.Fatal(err)
		}
		if id <= 0 {
			fmt.Fprintf(&out, " (%d %s)", id, b.String) // a key stored as 0 (or below): as it is
			continue
		}
		fmt.Fprintf(&out, " (%s %s)", rel(id), b.String)
	}
	return out.String()
}

// runTwins runs steps on both sides and fails at the first difference.
func runTwins(t *testing.T, direct, proxied *twinSide, steps ...twinStep) {
	t.Helper()
	for _, st := range steps {
		want, got := direct.observe(t, st), proxied.observe(t, st)
		if got != want {
			t.Fatalf("%s (args %v):\n direct: %s\n  proxy: %s", st.sql, argsOf(st, direct.first), want, got)
		}
	}
}

func argsOf(st twinStep, f int64) []any {
	if st.args == nil {
		return nil
	}
	return st.args(f)
}

func q(sql string) twinStep { return twinStep{sql: sql} }

func prep(sql string, args func(f int64) []any) twinStep { return twinStep{sql: sql, args: args} }

// Item 1: a key bound to ? moves the tag as a literal does, so the rows
// generated after it neither collide (1062), nor vanish (IGNORE), nor
// update it (ODKU).
func TestTwinBoundKeyMovesTag(t *testing.T) {
	direct, proxied := twinEnv(t, "BIGINT")
	runTwins(t, direct, proxied,
		prep("INSERT INTO {T} (id, b) VALUES (?, ?)", func(f int64) []any { return []any{f + 3, "bound"} }),
		q("INSERT INTO {T} (b) VALUES ('g1')"),
		prep("INSERT IGNORE INTO {T} (b) VALUES (?)", func(int64) []any { return []any{"g2"} }),
		prep("INSERT INTO {T} (b) VALUES (?) ON DUPLICATE KEY UPDATE b = 'updated'", func(int64) []any { return []any{"g3"} }),
		prep("INSERT INTO {T} (id, b) VALUES (?, ?)", func(int64) []any { return []any{nil, "null-bound"} }),
		prep("INSERT INTO {T} (id, b) VALUES (?, ?)", func(int64) []any { return []any{0, "zero-bound"} }),
		prep("INSERT INTO {T} (id, b) VALUES (?, ?)", func(int64) []any { return []any{0.4, "0.4-bound"} }),
		prep("INSERT INTO {T} (id, b) VALUES (?, ?)", func(int64) []any { return []any{"00", "'00'-bound"} }),
		prep("INSERT INTO {T} (id, b) VALUES (?, ?)", func(f int64) []any { return []any{fmt.Sprint(f + 20), "str-bound"} }),
		q("INSERT INTO {T} (b) VALUES ('g4')"),
		prep("INSERT INTO {T} (id, b) VALUES (?, ?), (?, ?)", func(f int64) []any { return []any{nil, "r1", f + 40, "r2"} }),
		q("INSERT INTO {T} (b) VALUES ('g5')"),
	)
}

// Item 3: values that convert to 0 are generated as AUTO_INCREMENT
// generates them, in strict and non-strict sql_mode; those the server
// refuses in strict mode are refused through the proxy too.
func TestTwinZeroLikeKeys(t *testing.T) {
	direct, proxied := twinEnv(t, "INT")
	var steps []twinStep
	for _, mode := range []string{"STRICT_TRANS_TABLES", ""} {
		steps = append(steps, q("SET sql_mode = '"+mode+"'"))
		for _, v := range []string{"'00'", "0.4", "'0.4'", "-0", "' 0'", "0x00", "b'0'", "-0.4", "0.5e0", "N'0'", "'abc'", "''", "'0x'", "0.5", "'2.5'", "DEFAULT"} {
			steps = append(steps, q("INSERT INTO {T} (id, b) VALUES ("+v+", 'v')"))
		}
	}
	steps = append(steps, q("SET sql_mode = 'NO_AUTO_VALUE_ON_ZERO'"), q("INSERT INTO {T} (id, b) VALUES (DEFAULT, 'default')"))
	runTwins(t, direct, proxied, steps...)
}

// Item 6: a sql_mode set by dynamic SQL (text EXECUTE IMMEDIATE, EXECUTE
// of a PREPAREd SET, a SET prepared with the binary protocol) is followed.
// (A kept 0 comes last: InnoDB spends an AUTO_INCREMENT value on it, a gap
// the proxy does not leave.)
func TestTwinRuntimeSQLMode(t *testing.T) {
	direct, proxied := twinEnv(t, "BIGINT")
	runTwins(t, direct, proxied,
		q("SET sql_mode = 'NO_AUTO_VALUE_ON_ZERO'"),
		q("PREPARE s FROM 'SET sql_mode = ''STRICT_TRANS_TABLES'''"),
		q("EXECUTE s"),
		q("INSERT INTO {T} (id, b) VALUES (0, 'generated')"),
		q("EXECUTE IMMEDIATE 'SET sql_mode = ''NO_AUTO_VALUE_ON_ZERO'''"),
		q("INSERT INTO {T} (id, b) VALUES (0, 'kept zero')"),
		q("DELETE FROM {T} WHERE id = 0"),
		q("SET sql_mode = ''"),
		prep("SET sql_mode = ?", func(int64) []any { return []any{"NO_AUTO_VALUE_ON_ZERO"} }),
		q("INSERT INTO {T} (id, b) VALUES (0, 'kept zero 2')"),
	)
}

// Item 5: LOAD DATA LOCAL under NO_AUTO_VALUE_ON_ZERO keeps a 0 key field,
// but with a SET clause of its own MariaDB generates for 0 and empty key
// fields: the proxy does the same. (The proxy draws a load's keys in
// doubling batches and may leave unused ones after it: a gap
// AUTO_INCREMENT does not leave, so generated keys after a load are not
// compared here.)
func TestTwinLoadDataNoAutoValueOnZero(t *testing.T) {
	direct, proxied := twinEnv(t, "BIGINT")
	file := filepath.Join(t.TempDir(), "keys.csv")
	if err := os.WriteFile(file, []byte("0,a\n,b\n0,d\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	load := "LOAD DATA LOCAL INFILE '" + file + "' INTO TABLE {T} FIELDS TERMINATED BY ','"
	runTwins(t, direct, proxied,
		q("SET sql_mode = 'NO_AUTO_VALUE_ON_ZERO'"),
		q(load+" (id, b) SET b = UPPER(b)"),
		q("DELETE FROM {T} WHERE id = 0"),
		q(load+" (id, b)"),
	)
}

// Item 7: an explicit key later in the statement (or the text) does not
// lift the generated keys before it.
func TestTwinExplicitKeyOrder(t *testing.T) {
	direct, proxied := twinEnv(t, "BIGINT")
	runTwins(t, direct, proxied,
		q("INSERT INTO {T} (id, b) VALUES (NULL, 'r1'), ({F+1000}, 'x'), (NULL, 'r3')"),
		q("INSERT INTO {T} (id, b) VALUES (NULL, 's1'); INSERT INTO {T} (id, b) VALUES ({F+2000}, 'y'); INSERT INTO {T} (id, b) VALUES (NULL, 's3')"),
		q("INSERT INTO {T} (b) VALUES ('after')"),
	)
}

// Item 2: a key written as an expression is refused before anything is
// written (the proxy cannot tell the key it stores).
func TestExpressionKeyRefused(t *testing.T) {
	_, proxied := twinEnv(t, "BIGINT")
	ctx := context.Background()
	for _, stmt := range []string{
		"INSERT INTO t_rule (id, b) VALUES (@f + 2, 'x')",
		"INSERT INTO t_rule (id, b) VALUES (1000 + 1, 'x')",
		"INSERT INTO t_rule (id, b) VALUES (CAST(0 AS CHAR), 'x')",
		"INSERT INTO t_rule SET id = 1-1, b = 'x'",
	} {
		_, err := proxied.conn.ExecContext(ctx, stmt)
		if code, _ := myErr(err); code != 1235 || !strings.Contains(err.Error(), "expression") {
			t.Errorf("%s: %v, want 1235 naming the expression", stmt, err)
		}
	}
	var n int
	if err := proxied.conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM t_rule").Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d rows (%v), want the first only", n, err)
	}
}

// Item 8: a statement the proxy's parser cannot read gets the server's own
// answer (1064 for a syntax error), as directly, not the proxy's 1235.
func TestTwinSyntaxErrors(t *testing.T) {
	direct, proxied := twinEnv(t, "BIGINT")
	runTwins(t, direct, proxied,
		q("INSERT INTO {T} (b) VALUES ('x'), ('y' 'z' WHERE"),
		q("INSERT INTO {T} (b) VALUES ('x') AS new ON DUPLICATE KEY UPDATE b = new.b"),
		q("SELECT NEXTVAL('twin') FROMM dual"),
		prep("INSERT INTO {T} (b) VALUES (?) ORDER", func(int64) []any { return []any{"p"} }),
		q("INSERT INTO {T} (b) VALUES ('after')"),
	)
}

// A key bound as a DOUBLE 0 (node mysql2 binds every JS number so) is
// generated, and the generated key reaches the column exactly even where
// a DOUBLE could not hold it (above 2^53): the client's value goes as a
// NULL of type NULL, so COALESCE does not make the key a DOUBLE.
func TestBoundDoubleZeroBigKey(t *testing.T) {
	_, proxied := twinEnv(t, "BIGINT")
	ctx := context.Background()
	const base = int64(1)<<60 + 12345
	if _, err := proxied.conn.ExecContext(ctx, fmt.Sprintf("INSERT INTO t_rule (id, b) VALUES (%d, 'explicit')", base)); err != nil {
		t.Fatal(err)
	}
	res, err := proxied.conn.ExecContext(ctx, "INSERT INTO t_rule (id, b) VALUES (?, ?)", float64(0), "double zero")
	if err != nil {
		t.Fatal(err)
	}
	id, _ := res.LastInsertId()
	var stored int64
	if err := proxied.conn.QueryRowContext(ctx, "SELECT id FROM t_rule WHERE b = 'double zero'").Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != base+1 || stored != id {
		t.Fatalf("stored %d, insert id %d; want the key after %d, exactly", stored, id, base)
	}
}

// Item 8: an INSERT whose rows all give their keys reports the last row's
// key as its insert id, as MariaDB does for an AUTO_INCREMENT column, and
// leaves LAST_INSERT_ID() alone; text and prepared, on the event loop
// (the command moves to the session's goroutine for it).
func TestTwinExplicitKeysInsertID(t *testing.T) {
	direct, proxied := twinEnv(t, "BIGINT")
	runTwins(t, direct, proxied,
		q("INSERT INTO {T} (id, b) VALUES ({F+5}, 'x')"),
		q("INSERT INTO {T} (id, b) VALUES ({F+9}, 'a'), ({F+7}, 'b')"),
		q("INSERT IGNORE INTO {T} (id, b) VALUES ({F+20}, 'c'), ({F+5}, 'dup')"),
		q("INSERT IGNORE INTO {T} (id, b) VALUES ({F+5}, 'dup')"),
		q("REPLACE INTO {T} (id, b) VALUES ({F+5}, 'r')"),
		q("INSERT INTO {T} (id, b) VALUES ({F+7}, 'b') ON DUPLICATE KEY UPDATE b = 'u'"),
		prep("INSERT INTO {T} (id, b) VALUES ("+"{F+30}"+", ?)", func(int64) []any { return []any{"p"} }),
		q("INSERT INTO {T} (id, b) VALUES (-5, 'neg')"),
		q("REPLACE INTO {T} (id, b) VALUES ({F+31}, 'n1'), (-6, 'neg2')"),
		prep("INSERT INTO {T} (id, b) VALUES (-8, 'neg4')", func(int64) []any { return nil }),
		q("INSERT INTO {T} (id, b) VALUES (-9, 'm'); INSERT INTO {T} (id, b) VALUES (-10, 'n')"),
		q("INSERT INTO {T} (b) VALUES ('gen')"),
	)
}

// Item 8: a filled statement that fails leaves LAST_INSERT_ID() as it was,
// as MariaDB does for AUTO_INCREMENT (the proxy's LAST_INSERT_ID(<id>)
// had set it before the statement failed): text and prepared, alone and
// in a transaction, which the failure does not end, with the client's ERR
// as the server sent it. A duplicate on the unique b spends a key on both
// sides; a value too long fails before InnoDB takes one (those come last:
// the proxy's key is spent, a gap AUTO_INCREMENT does not leave). A row
// written before the statement failed keeps its key as LAST_INSERT_ID(),
// on both sides.
func TestTwinFailedStatementKeepsLastInsertID(t *testing.T) {
	direct, proxied := twinEnv(t, "BIGINT")
	ctx := context.Background()
	for _, s := range []*twinSide{direct, proxied} {
		if _, err := s.conn.ExecContext(ctx, "ALTER TABLE "+s.table+" ADD UNIQUE KEY ub (b)"); err != nil {
			t.Fatal(err)
		}
	}
	long := strings.Repeat("x", 30)
	runTwins(t, direct, proxied,
		q("INSERT INTO {T} (b) VALUES ('first')"),
		q("INSERT INTO {T} (b) VALUES ('ok1')"),
		q("INSERT INTO {T} (id, b) VALUES (NULL, 'ok1')"),
		q("INSERT INTO {T} (id, b) VALUES (NULL, 'x40'), (NULL, 'ok1')"),
		q("INSERT INTO {T} (id, b) VALUES (NULL, 'x41'), (NULL, 'ok1'), (NULL, 'x42')"),
		q("INSERT INTO {T} (b) VALUES ('ok2'), ('first')"),
		prep("INSERT INTO {T} (b) VALUES (?)", func(int64) []any { return []any{"ok1"} }),
		prep("INSERT INTO {T} (id, b) VALUES (?, ?)", func(int64) []any { return []any{nil, "first"} }),
		q("INSERT INTO {T} SET b = 'ok1'"),
		q("INSERT INTO {T} (b) VALUES ('ok3')"),
		q("BEGIN"),
		q("INSERT INTO {T} (b) VALUES ('in-tx')"),
		q("INSERT INTO {T} (b) VALUES ('ok3')"),
		prep("INSERT INTO {T} (b) VALUES (?)", func(int64) []any { return []any{"ok3"} }),
		q("COMMIT"),
		q("INSERT INTO {T} (b) VALUES ('"+long+"')"),
		prep("INSERT INTO {T} (b) VALUES (?)", func(int64) []any { return []any{long} }),
		q("SELECT 1"),
	)
	for _, s := range []*twinSide{direct, proxied} {
		var n int
		if err := s.conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+s.table+" WHERE b = 'in-tx'").Scan(&n); err != nil || n != 1 {
			t.Fatalf("%s: %d rows of the transaction (%v), want 1: the failure must not end it", s.name, n, err)
		}
	}
	// The ERR is the server's, and SHOW WARNINGS still holds it.
	var msgs [2]string
	for i, s := range []*twinSide{direct, proxied} {
		_, err := s.conn.ExecContext(ctx, "INSERT INTO "+s.table+" (b) VALUES ('ok1')")
		var level, msg string
		var code int
		if werr := s.conn.QueryRowContext(ctx, "SHOW WARNINGS").Scan(&level, &code, &msg); werr != nil {
			t.Fatalf("%s: SHOW WARNINGS: %v", s.name, werr)
		}
		msgs[i] = fmt.Sprintf("%v | %s %d %s", err, level, code, msg)
	}
	if msgs[0] != msgs[1] {
		t.Fatalf("direct: %s\n proxy: %s", msgs[0], msgs[1])
	}
}

// Item 8: an INSERT IGNORE or ON DUPLICATE KEY UPDATE that wrote nothing
// (its rows IGNOREd, or duplicates left unchanged) reports insert id 0 and
// leaves LAST_INSERT_ID() as it was, as MariaDB does for AUTO_INCREMENT;
// text and prepared.
func TestTwinIgnoredRowInsertID(t *testing.T) {
	direct, proxied := twinEnv(t, "BIGINT")
	ctx := context.Background()
	for _, s := range []*twinSide{direct, proxied} {
		if _, err := s.conn.ExecContext(ctx, "ALTER TABLE "+s.table+" ADD UNIQUE KEY ub (b)"); err != nil {
			t.Fatal(err)
		}
	}
	runTwins(t, direct, proxied,
		q("INSERT INTO {T} (b) VALUES ('a')"),
		q("INSERT IGNORE INTO {T} (b) VALUES ('first')"),
		q("INSERT IGNORE INTO {T} (b) VALUES ('first'), ('a')"),
		prep("INSERT IGNORE INTO {T} (b) VALUES (?)", func(int64) []any { return []any{"a"} }),
		q("INSERT INTO {T} (b) VALUES ('a') ON DUPLICATE KEY UPDATE b = b"),
		prep("INSERT INTO {T} (id, b) VALUES (?, ?) ON DUPLICATE KEY UPDATE b = VALUES(b)", func(int64) []any { return []any{nil, "first"} }),
		q("INSERT IGNORE INTO {T} SET b = 'first'"),
		q("BEGIN"),
		q("INSERT IGNORE INTO {T} (b) VALUES ('a')"),
		q("COMMIT"),
	)
}

// Item 8: LAST_INSERT_ID() after a failed multi-row statement whose first
// generated key is not in its last row: kept when the row with it failed,
// its key when that row was written before a later one failed (MariaDB
// 10.11); text and prepared.
func TestTwinFailedMultiRowLastInsertID(t *testing.T) {
	direct, proxied := twinEnv(t, "BIGINT")
	ctx := context.Background()
	for _, s := range []*twinSide{direct, proxied} {
		if _, err := s.conn.ExecContext(ctx, "ALTER TABLE "+s.table+" ADD UNIQUE KEY ub (b)"); err != nil {
			t.Fatal(err)
		}
	}
	runTwins(t, direct, proxied,
		q("INSERT INTO {T} (b) VALUES ('ok1')"),
		q("INSERT INTO {T} (id, b) VALUES (NULL, 'ok1'), (NULL, 'x43')"),
		q("INSERT INTO {T} (b) VALUES ('ok1'), ('x43'), ('x44')"),
		q("INSERT INTO {T} (b) VALUES ('x45'), ('ok1'), ('x46')"),
		q("INSERT INTO {T} (b) VALUES ('x47'), ('x48'), ('ok1')"),
		q("INSERT INTO {T} SET b = 'ok2'"),
		q("REPLACE INTO {T} (b) VALUES ('ok2'), (REPEAT('y', 30))"),
		prep("INSERT INTO {T} (b) VALUES (?), (?)", func(int64) []any { return []any{"ok1", "x54"} }),
		prep("INSERT INTO {T} (b) VALUES (?), (?), (?)", func(int64) []any { return []any{"x55", "ok1", "x56"} }),
		prep("INSERT INTO {T} (id, b) VALUES (?, ?), (?, ?)", func(int64) []any { return []any{nil, "ok1", nil, "x57"} }),
		q("BEGIN"),
		q("INSERT INTO {T} (b) VALUES ('in-tx')"),
		q("INSERT INTO {T} (b) VALUES ('ok1'), ('x58')"),
		q("INSERT INTO {T} (b) VALUES ('x59'), ('ok1')"),
		q("COMMIT"),
		// (last: AUTO_INCREMENT numbers the rows after it differently)
		q("INSERT INTO {T} (id, b) VALUES ({F+900}, 'x49'), (NULL, 'ok1'), (NULL, 'x50')"),
		q("INSERT INTO {T} (id, b) VALUES (NULL, 'ok1'), ({F+902}, 'x53')"),
		q("INSERT INTO {T} (id, b) VALUES (NULL, 'ok1'), ('{F+903}', 'x53'), (NULL, 'x54')"),
		q("SELECT 1"),
	)
}

// Item 8: a prepared INSERT whose rows give their keys, some as literals
// and some bound, reports the last row's key as its insert id (literal or
// bound), as MariaDB does for an AUTO_INCREMENT column.
func TestTwinMixedExplicitKeysInsertID(t *testing.T) {
	direct, proxied := twinEnv(t, "BIGINT")
	runTwins(t, direct, proxied,
		prep("INSERT INTO {T} (id, b) VALUES (?, 'm1'), ({F+40}, 'm2')", func(f int64) []any { return []any{f + 39} }),
		prep("INSERT INTO {T} (id, b) VALUES ({F+42}, 'm3'), (?, 'm4')", func(f int64) []any { return []any{f + 43} }),
		prep("INSERT INTO {T} (id, b) VALUES ({F+50}, 'm5'), (?, 'm6'), ({F+45}, 'm7')", func(f int64) []any { return []any{f + 52} }),
		prep("INSERT INTO {T} (id, b) VALUES (?, 'm8'), ({F+60}, 'm9'), (?, 'm10')", func(f int64) []any { return []any{f + 61, f + 55} }),
		prep("INSERT INTO {T} (id, b) VALUES ({F+70}, 'm11'), (?, 'm12')", func(f int64) []any { return []any{nil} }),
	)
}
