package integration

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"testing"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
)

// Issue 19, items 5 and 6: one rule for a sharded family of tables
// (shell-style patterns in tables[].table), and table names compared as
// the backend compares them (lower_case_table_names).

// createTables creates db.table for every pair, with a key that has no
// default: an INSERT the proxy does not fill fails with 1364.
func createTables(t *testing.T, srv *testdb.Server, dbs, tables []string) {
	t.Helper()
	var stmts []string
	for _, db := range dbs {
		stmts = append(stmts, "CREATE DATABASE IF NOT EXISTS "+quoteName(db))
		for _, tb := range tables {
			stmts = append(stmts, "CREATE TABLE IF NOT EXISTS "+quoteName(db)+"."+quoteName(tb)+" (id BIGINT PRIMARY KEY, src VARCHAR(64) NOT NULL)")
		}
	}
	srv.Exec(t, stmts...)
}

func quoteName(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

// familyKeys counts the rows and distinct keys of every db.table, and
// returns the smallest key with src like 'proxy%'.
func familyKeys(t *testing.T, db *sql.DB, dbs, tables []string) (rows, distinct int, minProxy int64) {
	t.Helper()
	var parts []string
	for _, d := range dbs {
		for _, tb := range tables {
			parts = append(parts, "SELECT id, src FROM "+quoteName(d)+"."+quoteName(tb))
		}
	}
	q := "SELECT COUNT(*), COUNT(DISTINCT id), COALESCE(MIN(CASE WHEN src LIKE 'proxy%' THEN id END), 0) FROM (" + strings.Join(parts, " UNION ALL ") + ") x"
	if err := db.QueryRow(q).Scan(&rows, &distinct, &minProxy); err != nil {
		t.Fatal(err)
	}
	return rows, distinct, minProxy
}

// TestPatternRuleFillsFamily: one rule shop_*.orders_* fills the key of
// every table of a 4 x 4 family, named unqualified (each database as the
// current one) and qualified, as text and prepared, from four clients at
// once; the keys are unique across the family, counted in the database.
// Tables the pattern does not match are not filled (1364 from MariaDB).
func TestPatternRuleFillsFamily(t *testing.T) {
	backend := testdb.Start(t)
	dbs, tables := names("shop_", 4), names("orders_", 4)
	createTables(t, backend, dbs, tables)
	createTables(t, backend, []string{"shop_0", "shopx", "SHOP_1"}, []string{"orders", "customers", "orders_1"})
	cfg := leafConfig(t, backend, nil)
	cfg.Sequences.DefaultStep = 50 // several segments
	cfg.Tables = []config.Table{{Table: "shop_*.orders_*", Column: "id", Tag: "order"}}
	lf := startLeaf(t, cfg)

	const perTable = 6
	var wg sync.WaitGroup
	errs := make(chan error, len(dbs))
	for i, d := range dbs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			text := lf.open(t, d, map[string]string{"interpolateParams": "true"})
			prep := lf.open(t, "", nil)
			for _, tb := range tables {
				stmts := []struct {
					db  *sql.DB
					sql string
				}{
					{text, "INSERT INTO " + tb + " (src) VALUES ('proxy text')"},
					{text, "INSERT INTO `" + tb + "` (src) VALUES ('proxy multi'), ('proxy multi')"},
					{text, "INSERT INTO " + tb + " SET src = 'proxy set'"},
					{prep, "INSERT INTO " + d + "." + tb + " (src) VALUES (?)"},
					{prep, "INSERT INTO `" + d + "`.`" + tb + "` (id, src) VALUES (NULL, ?)"},
				}
				for _, s := range stmts {
					var err error
					if strings.Contains(s.sql, "?") {
						_, err = s.db.Exec(s.sql, fmt.Sprintf("proxy prepared %d", i))
					} else {
						_, err = s.db.Exec(s.sql)
					}
					if err != nil {
						errs <- fmt.Errorf("%s (database %s): %w", s.sql, d, err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	rows, distinct, minKey := familyKeys(t, backend.Open(t, "shop_0"), dbs, tables)
	if want := len(dbs) * len(tables) * perTable; rows != want || distinct != rows || minKey < 1 {
		t.Fatalf("family: %d rows, %d distinct keys (smallest %d); want %d rows, all distinct", rows, distinct, minKey, want)
	}

	// Outside the family: not filled, MariaDB refuses the missing key.
	direct := lf.open(t, "shop_0", map[string]string{"interpolateParams": "true"})
	for _, q := range []string{
		"INSERT INTO orders (src) VALUES ('no rule')",          // shop_0.orders: table part not orders_*
		"INSERT INTO customers (src) VALUES ('no rule')",       // not orders_*
		"INSERT INTO shopx.orders_1 (src) VALUES ('no rule')",  // database not shop_*
		"INSERT INTO SHOP_1.orders_1 (src) VALUES ('no rule')", // another database on this server (case)
	} {
		_, err := direct.Exec(q)
		if code, _ := myErr(err); code != 1364 {
			t.Errorf("%s: %v, want 1364 (not filled)", q, err)
		}
	}
}

// TestRuleNamesCaseSensitive: on MariaDB with lower_case_table_names=0
// (what the test servers run, as Linux's default) Mixed and mixed are two
// tables; a rule for Mixed fills Mixed and not mixed.
func TestRuleNamesCaseSensitive(t *testing.T) {
	backend := testdb.Start(t)
	root := backend.Open(t, "")
	var lctn int
	if err := root.QueryRow("SELECT @@lower_case_table_names").Scan(&lctn); err != nil || lctn != 0 {
		t.Fatalf("test server lower_case_table_names = %d, %v; this test needs 0", lctn, err)
	}
	createTables(t, backend, []string{"app"}, []string{"Mixed", "mixed"})
	cfg := leafConfig(t, backend, nil)
	cfg.Tables = []config.Table{{Table: "Mixed", Column: "id", Tag: "mixed"}, {Table: "App.other", Column: "id", Tag: "other"}}
	lf := startLeaf(t, cfg)

	for _, params := range []map[string]string{{"interpolateParams": "true"}, nil} {
		db := lf.open(t, "app", params)
		res, err := db.Exec("INSERT INTO Mixed (src) VALUES (?)", "filled")
		if err != nil {
			t.Fatalf("INSERT INTO Mixed (rule Mixed): %v", err)
		}
		if id, _ := res.LastInsertId(); id < 1 {
			t.Errorf("INSERT INTO Mixed: insert id %d", id)
		}
		_, err = db.Exec("INSERT INTO mixed (src) VALUES (?)", "not filled")
		if code, _ := myErr(err); code != 1364 {
			t.Errorf("INSERT INTO mixed (rule Mixed only): %v; want 1364 from MariaDB: the rule must not fill another table", err)
		}
		_, err = db.Exec("INSERT INTO app.Mixed (src) VALUES (?)", "filled")
		if err != nil {
			t.Errorf("INSERT INTO app.Mixed: %v", err)
		}
	}
	var filled, other int
	root.QueryRow("SELECT COUNT(*) FROM app.Mixed").Scan(&filled)
	root.QueryRow("SELECT COUNT(*) FROM app.mixed").Scan(&other)
	if filled != 4 || other != 0 {
		t.Errorf("app.Mixed %d rows, app.mixed %d; want 4 and 0", filled, other)
	}
}

// TestPatternRuleAdoptsFamily: a tag filled through a pattern starts above
// the largest key of every table of the family (the largest is in one
// table of one database), and tables the pattern does not match (as the
// rewriter matches: names compared byte for byte here) do not raise it.
func TestPatternRuleAdoptsFamily(t *testing.T) {
	backend := testdb.Start(t)
	dbs, tables := names("shop_", 3), names("orders_", 4)
	createTables(t, backend, dbs, tables)
	createTables(t, backend, []string{"Shop_1", "archive"}, []string{"orders_1"})
	createTables(t, backend, []string{"shop_2"}, []string{"orders", "Orders_1"})
	backend.Exec(t,
		"INSERT INTO shop_0.orders_0 (id, src) SELECT seq, 'old' FROM shop_0.seq_1_to_10",
		"INSERT INTO shop_1.orders_3 (id, src) VALUES (70000, 'old'), (69999, 'old')",
		"INSERT INTO shop_2.orders_2 (id, src) VALUES (4200, 'old')",
		// Not the family's: another database (case), another table name.
		"INSERT INTO Shop_1.orders_1 (id, src) VALUES (500000, 'old')",
		"INSERT INTO archive.orders_1 (id, src) VALUES (900000, 'old')",
		"INSERT INTO shop_2.orders (id, src) VALUES (800000, 'old')",
		"INSERT INTO shop_2.Orders_1 (id, src) VALUES (600000, 'old')")
	cfg := leafConfig(t, backend, nil)
	cfg.Tables = []config.Table{{Table: "shop_*.orders_*", Column: "id", Tag: "family"}}
	lf := startLeaf(t, cfg)

	var maxID int64
	if err := backend.Open(t, "leafproxy").QueryRow("SELECT max_id FROM leaf_alloc WHERE biz_tag = 'family'").Scan(&maxID); err != nil {
		t.Fatal(err)
	}
	if maxID <= 70000 || maxID > 70001+int64(cfg.Sequences.DefaultStep) {
		t.Errorf("leaf_alloc.max_id of family %d, want just above the family's largest key 70000 (not above tables outside it)", maxID)
	}
	for _, d := range dbs {
		db := lf.open(t, d, map[string]string{"interpolateParams": "true"})
		for _, tb := range tables {
			res, err := db.Exec("INSERT INTO " + tb + " (src) VALUES ('proxy')")
			if err != nil {
				t.Fatalf("INSERT INTO %s.%s through the proxy: %v", d, tb, err)
			}
			if id, _ := res.LastInsertId(); id <= 70000 || id >= 500000 {
				t.Errorf("%s.%s: generated key %d, want above 70000 (and not raised by tables outside the family)", d, tb, id)
			}
		}
	}
	rows, distinct, minKey := familyKeys(t, backend.Open(t, "shop_0"), dbs, tables)
	if rows != 10+2+1+12 || distinct != rows || minKey != 70001 {
		t.Errorf("family: %d rows, %d distinct, smallest generated key %d; want 25, 25, 70001", rows, distinct, minKey)
	}
}

// syncBuffer is a log destination for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRulePatternWarnings: at start the proxy reads lower_case_table_names
// once, logs how it compares names, and warns about a pattern that matches
// no table the backend has and about a rule whose table exists only in
// another case; a matching pattern gets no warning. A reload (SIGHUP)
// checks the new rules the same way and applies patterns at once.
func TestRulePatternWarnings(t *testing.T) {
	backend := testdb.Start(t)
	createTables(t, backend, names("shop_", 2), names("orders_", 2))
	createTables(t, backend, []string{"app"}, []string{"other"})
	createTables(t, backend, []string{"late_1"}, []string{"t_1"})
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg := leafConfig(t, backend, nil)
	cfg.Tables = []config.Table{
		{Table: "shop_*.orders_*", Column: "id", Tag: "order"},
		{Table: "nope_*.orders_*", Column: "id", Tag: "order"},
		{Table: "app.Other", Column: "id", Tag: "other"},
	}
	lf := startLeafLog(t, cfg, log)
	out := logs.String()
	for _, want := range []string{
		`msg="table rules compare names as the backend does" lower_case_table_names=0 names=case-sensitive`,
		`level=WARN msg="table rule \"nope_*.orders_*\" is a pattern that matches no table on the backend`,
		`rule=tables[1] table=nope_*.orders_*`,
		`level=WARN msg="table rule \"app.Other\" matches no table on the backend, but app.other differs from it only in case`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("start-up log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, `level=WARN msg="table rule \"shop_*.orders_*\"`) {
		t.Errorf("a warning about the pattern that matches tables:\n%s", out)
	}
	// What it fills is said (issue 39).
	if want := `level=INFO msg="table rule \"shop_*.orders_*\" fills 4 table(s) and leaves 0 alone"`; !strings.Contains(out, want) {
		t.Errorf("start-up log lacks %q:\n%s", want, out)
	}

	// Reload: a new pattern applies at once; one that matches nothing warns.
	next := *lf.cfg
	next.Tables = append([]config.Table{{Table: "late_*.t_*", Column: "id", Tag: "late"}, {Table: "gone_?.x", Column: "id", Tag: "late"}}, cfg.Tables[0])
	next.Sequences.Tags = maps.Clone(next.Sequences.Tags)
	next.DeclareRuleTags()
	if _, err := lf.svc.Reload(context.Background(), &next); err != nil {
		t.Fatalf("reload: %v", err)
	}
	if out := logs.String(); !strings.Contains(out, `table rule \"gone_?.x\" is a pattern that matches no table`) {
		t.Errorf("reload log lacks the warning for gone_?.x:\n%s", out)
	}
	db := lf.open(t, "late_1", map[string]string{"interpolateParams": "true"})
	if _, err := db.Exec("INSERT INTO t_1 (src) VALUES ('after reload')"); err != nil {
		t.Errorf("INSERT into late_1.t_1 after a reload added late_*.t_*: %v", err)
	}
}
