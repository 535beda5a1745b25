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

// Issue 38: how the application reads its keys back, against an
// AUTO_INCREMENT twin. Each case runs on both sides, directly against
// AUTO_INCREMENT tables (par_ai, chi_ai) and through the proxy against
// rule tables (par_rule, chi_rule, one tag), and the relations the
// application relies on are compared: a child's pid is its parent's key,
// the OK packet's insert id and LAST_INSERT_ID() afterwards are the
// statement's first generated key, and so on. Only relations are
// compared, never numbers: the two sides' keys differ.

type keybackSide struct {
	name     string
	conn     *sql.Conn
	par, chi string // the parent and child tables
	trg, log string // a table with a trigger; a table without rule, AUTO_INCREMENT
}

func keybackEnv(t *testing.T, foundRows bool) (direct, proxied *keybackSide) {
	t.Helper()
	backend := testdb.Start(t)
	backend.Open(t, "app")
	for _, sfx := range []string{"ai", "rule"} {
		ai := ""
		if sfx == "ai" {
			ai = " AUTO_INCREMENT"
		}
		backend.Exec(t, "CREATE TABLE app.par_"+sfx+" (id BIGINT"+ai+" PRIMARY KEY, b VARCHAR(20) UNIQUE)")
		backend.Exec(t, "CREATE TABLE app.chi_"+sfx+" (id BIGINT"+ai+" PRIMARY KEY, pid BIGINT, b VARCHAR(20) UNIQUE)")
		backend.Exec(t, "CREATE TABLE app.trg_"+sfx+" (id BIGINT"+ai+" PRIMARY KEY, b VARCHAR(20))")
		backend.Exec(t, "CREATE TRIGGER app.trg_"+sfx+"_bi BEFORE INSERT ON app.trg_"+sfx+" FOR EACH ROW SET NEW.b = CONCAT(NEW.b, '!')")
		backend.Exec(t, "CREATE TABLE app.log_"+sfx+" (id BIGINT AUTO_INCREMENT PRIMARY KEY, b VARCHAR(20))")
	}
	cfg := leafConfig(t, backend, nil)
	cfg.Sequences.Tags = map[string]config.Tag{"kb": {Generator: "segment", Step: 1000}}
	cfg.Tables = []config.Table{
		{Table: "app.par_rule", Column: "id", Tag: "kb"},
		{Table: "app.chi_rule", Column: "id", Tag: "kb"},
		{Table: "app.trg_rule", Column: "id", Tag: "kb"},
	}
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
	ddb, err := sql.Open("mysql", directDSN(backend, "app", fmt.Sprintf("multiStatements=true&clientFoundRows=%v", foundRows)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ddb.Close() })
	pdb := lf.open(t, "app", map[string]string{"multiStatements": "true", "clientFoundRows": fmt.Sprint(foundRows)})
	direct = &keybackSide{name: "direct", conn: conn(ddb), par: "par_ai", chi: "chi_ai", trg: "trg_ai", log: "log_ai"}
	proxied = &keybackSide{name: "proxy", conn: conn(pdb), par: "par_rule", chi: "chi_rule", trg: "trg_rule", log: "log_rule"}
	return direct, proxied
}

// q renders {P}, {C}, {TRG}, {LOG} for the side.
func (s *keybackSide) q(text string) string {
	return strings.NewReplacer("{P}", s.par, "{C}", s.chi, "{TRG}", s.trg, "{LOG}", s.log).Replace(text)
}

// exec runs a statement (args: prepared) and returns its insert id and
// affected rows, or the error's code.
func (s *keybackSide) exec(t *testing.T, text string, args ...any) (id, affected int64, code uint16) {
	t.Helper()
	res, err := s.conn.ExecContext(context.Background(), s.q(text), args...)
	if err != nil {
		code, _ = myErr(err)
		if code == 0 {
			t.Fatalf("%s: %s: %v", s.name, s.q(text), err)
		}
		return 0, 0, code
	}
	id, _ = res.LastInsertId()
	affected, _ = res.RowsAffected()
	return id, affected, 0
}

func (s *keybackSide) int(t *testing.T, text string, args ...any) int64 {
	t.Helper()
	var v sql.NullInt64
	if err := s.conn.QueryRowContext(context.Background(), s.q(text), args...).Scan(&v); err != nil {
		t.Fatalf("%s: %s: %v", s.name, s.q(text), err)
	}
	return v.Int64
}

// TestKeysReadBackAsAutoIncrement: items 1, 3, 4, 5 of issue 38, text and
// prepared, each case's relations equal on both sides.
func TestKeysReadBackAsAutoIncrement(t *testing.T) {
	for _, foundRows := range []bool{false, true} {
		t.Run(fmt.Sprint("clientFoundRows=", foundRows), func(t *testing.T) { keysReadBack(t, foundRows) })
	}
}

func keysReadBack(t *testing.T, foundRows bool) {
	direct, proxied := keybackEnv(t, foundRows)
	type check func(t *testing.T, s *keybackSide, n int) string
	// parentChild: a parent, then a child whose pid is read from
	// LAST_INSERT_ID() in the child's own INSERT (as written by child).
	parentChild := func(child string, prepared bool) check {
		return func(t *testing.T, s *keybackSide, n int) string {
			pid, _, code := s.exec(t, fmt.Sprintf("INSERT INTO {P} (b) VALUES ('p%d')", n))
			if code != 0 {
				return fmt.Sprint("parent error ", code)
			}
			var args []any
			if prepared {
				args = []any{fmt.Sprintf("c%d", n)}
			}
			cid, aff, code := s.exec(t, strings.ReplaceAll(child, "{N}", fmt.Sprint(n)), args...)
			if code != 0 {
				return fmt.Sprint("child error ", code)
			}
			rows, err := s.conn.QueryContext(context.Background(), s.q("SELECT id, pid FROM {C} WHERE pid IS NOT NULL AND id >= ? ORDER BY id"), cid)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var out []string
			for rows.Next() {
				var id, p int64
				if err := rows.Scan(&id, &p); err != nil {
					t.Fatal(err)
				}
				out = append(out, fmt.Sprintf("pid=parent:%v key>=insertid:%v", p == pid, id >= cid))
			}
			// A prepared SELECT of another kind, then a prepared read, then
			// a text read.
			s.int(t, "SELECT COUNT(*) FROM {C} WHERE id > ?", 0)
			lastPrep := s.int(t, "SELECT LAST_INSERT_ID() + ?", 0)
			last := s.int(t, "SELECT LAST_INSERT_ID()")
			return fmt.Sprintf("affected %d, rows %v, LAST_INSERT_ID()=child:%v, prepared:%v", aff, out, last == cid, lastPrep == cid)
		}
	}
	cases := []struct {
		name string
		run  check
	}{
		{"VALUES (LAST_INSERT_ID())", parentChild("INSERT INTO {C} (pid, b) VALUES (LAST_INSERT_ID(), 'c{N}')", false)},
		{"SET pid = LAST_INSERT_ID()", parentChild("INSERT INTO {C} SET b = 'c{N}', pid = LAST_INSERT_ID()", false)},
		{"@@identity", parentChild("INSERT INTO {C} (pid, b) VALUES (@@identity, 'c{N}')", false)},
		{"LAST_INSERT_ID() + 0, two rows", parentChild("INSERT INTO {C} (pid, b) VALUES (LAST_INSERT_ID() + 0, 'c{N}'), (LAST_INSERT_ID(), 'd{N}')", false)},
		{"prepared", parentChild("INSERT INTO {C} (pid, b) VALUES (LAST_INSERT_ID(), ?)", true)},
		{"key column last", parentChild("INSERT INTO {C} (pid, b, id) VALUES (LAST_INSERT_ID(), 'c{N}', NULL)", false)},
		{"trigger table: the OK's insert id", func(t *testing.T, s *keybackSide, n int) string {
			id, _, code := s.exec(t, fmt.Sprintf("INSERT INTO {TRG} (b) VALUES ('t%d')", n))
			last := s.int(t, "SELECT LAST_INSERT_ID()")
			key := s.int(t, fmt.Sprintf("SELECT id FROM {TRG} WHERE b = 't%d!'", n))
			return fmt.Sprintf("code %d, insert id is the key: %v, LAST_INSERT_ID() too: %v", code, id == key && id > 0, last == key)
		}},
		{"get-or-create: ON DUPLICATE KEY UPDATE id = LAST_INSERT_ID(id)", func(t *testing.T, s *keybackSide, n int) string {
			stmt := fmt.Sprintf("INSERT INTO {P} (b) VALUES ('g%d') ON DUPLICATE KEY UPDATE id = LAST_INSERT_ID(id)", n)
			first, a1, _ := s.exec(t, stmt)
			again, a2, _ := s.exec(t, stmt)
			prep, a3, _ := s.exec(t, "INSERT INTO {P} (b) VALUES (?) ON DUPLICATE KEY UPDATE id = LAST_INSERT_ID(id)", fmt.Sprintf("g%d", n))
			last := s.int(t, "SELECT LAST_INSERT_ID()")
			return fmt.Sprintf("affected %d %d %d, existing id text %v prepared %v, LAST_INSERT_ID() %v", a1, a2, a3, again == first && first > 0, prep == first, last == first)
		}},
		{"failed multi-row INSERT after its first row was written", func(t *testing.T, s *keybackSide, n int) string {
			before, _, _ := s.exec(t, fmt.Sprintf("INSERT INTO {P} (b) VALUES ('f%d')", n))
			_, _, code := s.exec(t, fmt.Sprintf("INSERT INTO {P} (b) VALUES ('x%d'), ('%s')", n, strings.Repeat("y", 30)))
			last := s.int(t, "SELECT LAST_INSERT_ID()")
			return fmt.Sprintf("error %d, LAST_INSERT_ID() moved past the last key: %v", code, last > before)
		}},
		{"failed one-row INSERT", func(t *testing.T, s *keybackSide, n int) string {
			before, _, _ := s.exec(t, fmt.Sprintf("INSERT INTO {P} (b) VALUES ('h%d')", n))
			_, _, code := s.exec(t, fmt.Sprintf("INSERT INTO {P} (b) VALUES ('h%d')", n))
			last := s.int(t, "SELECT LAST_INSERT_ID()")
			return fmt.Sprintf("error %d, LAST_INSERT_ID() kept: %v", code, last == before)
		}},
		{"ROW_COUNT() and a table without rule after a filled INSERT", func(t *testing.T, s *keybackSide, n int) string {
			s.exec(t, fmt.Sprintf("INSERT INTO {P} (b) VALUES ('r%d'), ('s%d')", n, n))
			rc := s.int(t, "SELECT ROW_COUNT()")
			logID, _, _ := s.exec(t, fmt.Sprintf("INSERT INTO {LOG} (b) VALUES ('l%d')", n))
			last := s.int(t, "SELECT LAST_INSERT_ID()")
			return fmt.Sprintf("ROW_COUNT() %d, LAST_INSERT_ID() the other table's: %v", rc, last == logID)
		}},
		{"RETURNING LAST_INSERT_ID()", func(t *testing.T, s *keybackSide, n int) string {
			pid, _, _ := s.exec(t, fmt.Sprintf("INSERT INTO {P} (b) VALUES ('q%d')", n))
			var id, got int64
			if err := s.conn.QueryRowContext(context.Background(), s.q(fmt.Sprintf("INSERT INTO {C} (b) VALUES ('q%d') RETURNING id, LAST_INSERT_ID()", n))).Scan(&id, &got); err != nil {
				t.Fatal(err)
			}
			last := s.int(t, "SELECT LAST_INSERT_ID()")
			return fmt.Sprintf("RETURNING LAST_INSERT_ID() is the parent's: %v, afterwards the child's: %v", got == pid, last == id)
		}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.run(t, direct, i)
			got := tc.run(t, proxied, i)
			if got != want {
				t.Errorf("through the proxy: %s\n           directly: %s", got, want)
			}
		})
	}
}

// TestAlterAutoIncrementRaisesTag: issue 38 item 7, ALTER TABLE t
// AUTO_INCREMENT = n on a rule table, as on its AUTO_INCREMENT twin, makes
// the next generated key at least n (a range reserved that way and
// filled around the proxy must not collide later).
func TestAlterAutoIncrementRaisesTag(t *testing.T) {
	direct, proxied := keybackEnv(t, false)
	for _, s := range []*keybackSide{direct, proxied} {
		first, _, code := s.exec(t, "INSERT INTO {P} (b) VALUES ('a1')")
		if code != 0 || first <= 0 {
			t.Fatalf("%s: first insert: code %d id %d", s.name, code, first)
		}
		n := first + 5_000_000
		if _, _, code := s.exec(t, fmt.Sprintf("ALTER TABLE {P} AUTO_INCREMENT = %d", n)); code != 0 {
			t.Fatalf("%s: ALTER: error %d", s.name, code)
		}
		next, _, code := s.exec(t, "INSERT INTO {P} (b) VALUES ('a2')")
		if code != 0 || next < n {
			t.Errorf("%s: after ALTER TABLE ... AUTO_INCREMENT = %d the next key is %d (error %d), want at least %d", s.name, n, next, code, n)
		}
	}
}

// TestMarkedRowsKeepLargeKeys: a multi-row INSERT's second row carries a
// marker (so that after an ERR the proxy can tell whether the first row
// was written). Its key must reach the server as the exact integer, in a
// fresh session (a user variable the server has not seen set is a string,
// and arithmetic on it would round a snowflake key through DOUBLE), text
// and prepared: every stored key is the one reported, ascending, distinct.
func TestMarkedRowsKeepLargeKeys(t *testing.T) {
	_, lf, direct := gormEnv(t)
	for _, prepared := range []bool{false, true} {
		params := map[string]string{"interpolateParams": fmt.Sprint(!prepared)}
		db := lf.open(t, "app", params)
		db.SetMaxIdleConns(0) // a fresh session for every statement
		for i := 0; i < 20; i++ {
			body := fmt.Sprintf("m-%v-%d", prepared, i)
			res, err := db.Exec("INSERT INTO messages (body) VALUES (?), (?), (?)", body+"a", body+"b", body+"c")
			if err != nil {
				t.Fatal(err)
			}
			first, _ := res.LastInsertId()
			var keys []int64
			rows, err := direct.Query("SELECT id FROM messages WHERE body LIKE ? ORDER BY body", body+"_")
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var k int64
				if err := rows.Scan(&k); err != nil {
					t.Fatal(err)
				}
				keys = append(keys, k)
			}
			rows.Close()
			if len(keys) != 3 || keys[0] != first || !(keys[0] < keys[1] && keys[1] < keys[2]) {
				t.Fatalf("prepared %v: stored keys %v, insert id %d: want the reported first key, then two larger, exact", prepared, keys, first)
			}
		}
		db.Close()
	}
}

// TestInsertThroughViews: issue 38 item 8. An INSERT through an updatable
// view over a rule table is filled, as AUTO_INCREMENT fills it: a view
// that existed at start, one created through the proxy (used at once), a
// rule naming a view; a view that does not select the key is refused
// before anything is written.
func TestInsertThroughViews(t *testing.T) {
	backend := testdb.Start(t)
	direct := backend.Open(t, "app")
	backend.Exec(t,
		"CREATE TABLE app.base (id BIGINT PRIMARY KEY, b VARCHAR(20))",
		"CREATE VIEW app.v_start AS SELECT id AS k, b FROM app.base",
		"CREATE VIEW app.v_named AS SELECT id AS n, b FROM app.base",
	)
	cfg := leafConfig(t, backend, nil)
	cfg.Sequences.Tags = map[string]config.Tag{"vt": {Generator: "segment", Step: 100}}
	cfg.Tables = []config.Table{{Table: "app.base", Column: "id", Tag: "vt"}, {Table: "app.v_named", Column: "n", Tag: "vt"}}
	lf := startLeaf(t, cfg)
	db := lf.open(t, "app", nil)
	filled := func(view, b string) {
		t.Helper()
		res, err := db.Exec("INSERT INTO " + view + " (b) VALUES ('" + b + "')")
		if err != nil {
			t.Fatalf("INSERT through %s: %v", view, err)
		}
		id, _ := res.LastInsertId()
		var got int64
		if err := direct.QueryRow("SELECT id FROM base WHERE b = ?", b).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if id <= 0 || got != id {
			t.Fatalf("through %s: insert id %d, stored key %d", view, id, got)
		}
	}
	filled("v_start", "at start")
	filled("v_named", "named by a rule")
	if _, err := db.Exec("CREATE VIEW v_new AS SELECT b, id AS kk FROM base"); err != nil {
		t.Fatal(err)
	}
	filled("v_new", "made through proxy")
	if _, err := db.Exec("CREATE VIEW v_nokey AS SELECT b FROM base"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO v_nokey (b) VALUES ('no key')"); err == nil {
		t.Fatal("an INSERT through a view without the key column was not refused")
	}
	var n int
	direct.QueryRow("SELECT COUNT(*) FROM base WHERE b = 'no key'").Scan(&n)
	if n != 0 {
		t.Fatalf("the refused INSERT wrote %d rows", n)
	}
	res, err := db.Exec("INSERT INTO base (b) VALUES ('direct')")
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := res.LastInsertId(); id <= 0 {
		t.Fatalf("the base table's own insert id %d", id)
	}
}
