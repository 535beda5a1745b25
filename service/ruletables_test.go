package service_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
	"github.com/leafproxy/leafproxy/service"
)

// The status (and so the status page) says which tables a pattern fills
// and which it leaves alone, with why; `leafproxy check` refuses an exact
// rule over a table whose key it cannot fill (issue 39 item 1).
func TestRuleCoverage(t *testing.T) {
	backend := testdb.Start(t)
	backend.Exec(t, "DROP DATABASE IF EXISTS cov", "CREATE DATABASE cov",
		"CREATE TABLE cov.orders (id BIGINT PRIMARY KEY, v INT)",
		"CREATE TABLE cov.j (a INT, b INT)",
		"CREATE TABLE cov.d (id INT PRIMARY KEY DEFAULT 7, v INT)",
		"CREATE TABLE cov.skip (id INT PRIMARY KEY)",
		"CREATE TABLE cov.bad (pk INT PRIMARY KEY)")
	cfg := testConfig(backend)
	cfg.Tables = []config.Table{{Table: "cov.*", Column: "id", Tag: "t", Exclude: []string{"skip"}}}
	cfg.Users = append(cfg.Users, config.User{Name: "ops", Password: "secret", Admin: true})
	r := startService(t, cfg)
	st := r.Svc.Status(context.Background())
	if len(st.Rules) != 1 {
		t.Fatalf("status rules: %+v; want one", st.Rules)
	}
	c := st.Rules[0]
	if strings.Join(c.Filled, ",") != "cov.orders" {
		t.Errorf("filled %v; want cov.orders", c.Filled)
	}
	left := map[string]string{}
	for _, l := range c.LeftAlone {
		left[l.Table] = l.Why
	}
	for table, why := range map[string]string{"cov.j": "no column id", "cov.d": "DEFAULT 7", "cov.skip": "exclude", "cov.bad": "no column id"} {
		if !strings.Contains(left[table], why) {
			t.Errorf("%s left alone because %q; want it to say %q (all: %v)", table, left[table], why, left)
		}
	}

	// SHOW LEAFPROXY TABLES reads it afresh: a table created since start
	// is in it.
	backend.Exec(t, "CREATE TABLE cov.later (id BIGINT PRIMARY KEY)")
	adm := adminClient(t, r)
	rows, err := adm.Query("SHOW LEAFPROXY TABLES")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for rows.Next() {
		var rule, ruleTable, table, action string
		var tag, why sql.NullString
		if err := rows.Scan(&rule, &ruleTable, &table, &action, &tag, &why); err != nil {
			t.Fatal(err)
		}
		got[table] = action + " " + tag.String + why.String
	}
	rows.Close()
	for table, want := range map[string]string{"cov.orders": "filled t", "cov.later": "filled t", "cov.j": "left alone it has no column id", "cov.skip": "left alone left out by exclude"} {
		if got[table] != want {
			t.Errorf("SHOW LEAFPROXY TABLES: %s %q; want %q (all: %v)", table, got[table], want, got)
		}
	}

	exact := testConfig(backend)
	exact.Tables = []config.Table{{Table: "cov.j", Column: "id", Tag: "t"}, {Table: "cov.orders", Column: "id", Tag: "t"}}
	var found []string
	for _, f := range service.CheckConfig(context.Background(), exact) {
		found = append(found, f.String())
	}
	if len(found) != 1 || !strings.HasPrefix(found[0], "tables[0].table: cov.j cannot be filled by this rule: it has no column id") {
		t.Errorf("check of an exact rule over cov.j: %q; want one finding naming tables[0].table and the missing column", found)
	}
}

// per_table gives each table a pattern fills a tag of its own (issue 39
// item 2): created above the table's largest key, a fresh table starting
// at 1, reachable by NEXTVAL; one table's explicit BIGINT key never moves
// another's counter.
func TestPerTableTags(t *testing.T) {
	backend := testdb.Start(t)
	backend.Exec(t, "DROP DATABASE IF EXISTS pt", "CREATE DATABASE pt",
		"CREATE TABLE pt.a (id INT PRIMARY KEY, v INT)",
		"INSERT INTO pt.a VALUES (500, 0)",
		"CREATE TABLE pt.bigs (id BIGINT PRIMARY KEY, v INT)")
	cfg := testConfig(backend)
	cfg.Tables = []config.Table{{Table: "pt.*", Column: "id", Tag: "t", PerTable: true}}
	r := startService(t, cfg)
	db := r.client(t)
	db.SetMaxOpenConns(1)
	exec := func(q string) {
		t.Helper()
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	one := func(q string) int64 {
		t.Helper()
		var v int64
		if err := db.QueryRow(q).Scan(&v); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return v
	}
	exec("INSERT INTO pt.a (v) VALUES (1)")
	if id := one("SELECT id FROM pt.a WHERE v = 1"); id != 501 {
		t.Errorf("pt.a's first filled key %d; want 501, above its largest key 500", id)
	}
	exec("INSERT INTO pt.bigs (v) VALUES (1)")
	if id := one("SELECT id FROM pt.bigs WHERE v = 1"); id != 1 {
		t.Errorf("pt.bigs's first filled key %d; want 1, as AUTO_INCREMENT on a fresh table", id)
	}
	exec("INSERT INTO pt.bigs (id, v) VALUES (3415718944570971483, 2)")
	exec("CREATE TABLE pt.fresh (id INT PRIMARY KEY, v INT)")
	exec("INSERT INTO pt.fresh (v) VALUES (1)")
	exec("INSERT INTO pt.a (v) VALUES (2)")
	if id := one("SELECT id FROM pt.fresh WHERE v = 1"); id != 1 {
		t.Errorf("a table created after start: first key %d; want 1", id)
	}
	if id := one("SELECT id FROM pt.a WHERE v = 2"); id != 502 {
		t.Errorf("pt.a after an explicit BIGINT key in pt.bigs: %d; want 502, its own counter", id)
	}
	if n := one("SELECT NEXTVAL('t.pt.a')"); n != 503 {
		t.Errorf("NEXTVAL('t.pt.a') = %d; want 503", n)
	}
	if n := one("SELECT NEXTVAL('t.pt.bigs')"); n <= 3415718944570971483 {
		t.Errorf("NEXTVAL('t.pt.bigs') = %d; want above the explicit key", n)
	}

	// A table created again, or truncated, through the proxy starts at 1
	// again, as AUTO_INCREMENT; a table altered keeps its counter.
	exec("DROP TABLE pt.fresh")
	exec("CREATE TABLE pt.fresh (id INT PRIMARY KEY, v INT)")
	exec("INSERT INTO pt.fresh (v) VALUES (1)")
	if id := one("SELECT id FROM pt.fresh WHERE v = 1"); id != 1 {
		t.Errorf("a table dropped and created again: first key %d; want 1", id)
	}
	exec("TRUNCATE TABLE pt.bigs")
	exec("INSERT INTO pt.bigs (v) VALUES (3)")
	if id := one("SELECT id FROM pt.bigs WHERE v = 3"); id != 1 {
		t.Errorf("a table truncated: first key %d; want 1", id)
	}
	exec("USE pt")
	exec("CREATE TABLE IF NOT EXISTS a (id INT PRIMARY KEY, v INT)") // as an ORM at start: a has rows
	exec("ALTER TABLE a ADD COLUMN w INT")
	exec("INSERT INTO a (v) VALUES (3)")
	if id := one("SELECT id FROM a WHERE v = 3"); id != 504 {
		t.Errorf("pt.a after CREATE TABLE IF NOT EXISTS and ALTER TABLE: %d; want 504, its counter kept", id)
	}
	exec("TRUNCATE a")
	exec("INSERT INTO a (v) VALUES (4)")
	if id := one("SELECT id FROM a WHERE v = 4"); id != 1 {
		t.Errorf("pt.a truncated by its unqualified name: %d; want 1", id)
	}
}

// With rule tables, the proxy's own backend sessions (the store's pool,
// the rule tables' key and column reads at start) close once idle: the
// backend's sessions are the clients' again within seconds (issue 39 item
// 7). (Once a tag has served IDs, the store's max_id watch reads it every
// second: docs/PROTOCOL.md.)
func TestOwnBackendSessionsCloseWhenIdle(t *testing.T) {
	backend := testdb.Start(t)
	backend.Exec(t, "DROP DATABASE IF EXISTS idle", "CREATE DATABASE idle",
		"CREATE TABLE idle.orders (id BIGINT PRIMARY KEY, v INT)", "CREATE TABLE idle.j (a INT, b INT)")
	cfg := testConfig(backend)
	cfg.Tables = []config.Table{{Table: "idle.*", Column: "id", Tag: "t"}}
	r := startService(t, cfg)
	db := r.client(t)
	if _, err := db.Exec("INSERT INTO idle.j (a, b) VALUES (1, 2)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	direct := backend.Open(t, "")
	direct.SetMaxOpenConns(1)
	var left string
	testwait.For(t, "the backend's sessions other than this test's to close", func() bool {
		err := direct.QueryRow("SELECT COALESCE(GROUP_CONCAT(CONCAT(ID, ' ', USER, ' ', COMMAND, ' ', TIME, ' ', COALESCE(DB, '-')) SEPARATOR '; '), '') FROM information_schema.PROCESSLIST" +
			" WHERE ID <> CONNECTION_ID() AND COMMAND NOT IN ('Daemon', 'Binlog Dump') AND USER NOT IN ('system user', 'event_scheduler')").Scan(&left)
		return err == nil && left == ""
	}, testwait.Detail(func() string { return left }))
}

// adminClient opens a client as the admin account ops/secret.
func adminClient(t *testing.T, r *running) *sql.DB {
	t.Helper()
	mc := mysql.NewConfig()
	mc.User, mc.Passwd, mc.Net, mc.Addr = "ops", "secret", "tcp", r.Addr
	db, err := sql.Open("mysql", mc.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// A per_table tag whose table's first key is explicit is created above
// it at once: the next generated key follows it, without the store
// looking moved back (which pushed the tag ten million ahead).
func TestPerTableExplicitFirstKey(t *testing.T) {
	backend := testdb.Start(t)
	backend.Exec(t, "DROP DATABASE IF EXISTS pe", "CREATE DATABASE pe", "CREATE TABLE pe.w (id INT PRIMARY KEY, v INT)")
	cfg := testConfig(backend)
	cfg.Tables = []config.Table{{Table: "pe.*", Column: "id", Tag: "t", PerTable: true}}
	r := startService(t, cfg)
	db := r.client(t)
	db.SetMaxOpenConns(1)
	for _, q := range []string{"INSERT INTO pe.w (id, v) VALUES (1337, 1), (NULL, 2)", "INSERT INTO pe.w (v) VALUES (3)"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(q, err)
		}
	}
	var id int64
	if err := db.QueryRow("SELECT id FROM pe.w WHERE v = 2").Scan(&id); err != nil || id != 1338 {
		t.Fatalf("the key after an explicit first key 1337: %d, %v; want 1338", id, err)
	}
	if err := db.QueryRow("SELECT id FROM pe.w WHERE v = 3").Scan(&id); err != nil || id != 1339 {
		t.Fatalf("the next statement's key: %d, %v; want 1339", id, err)
	}
}
