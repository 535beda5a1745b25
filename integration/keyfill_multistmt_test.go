package integration

import (
	"context"
	"strings"
	"testing"
)

// TestKeyfillMultiStatement: a multi-statement COM_QUERY is planned
// statement by statement with the database of the USEs before each; after
// a SET of sql_mode, and in PREPARE / EXECUTE IMMEDIATE of a string, a
// statement that needs its key filled is refused and nothing is written.
func TestKeyfillMultiStatement(t *testing.T) {
	backend, lf := keyfillEnv(t)
	direct := backend.Open(t, "app")
	backend.Exec(t,
		"CREATE DATABASE shop",
		"CREATE TABLE shop.orders (id BIGINT PRIMARY KEY, v VARCHAR(64))",
		"CREATE TABLE shop.pay (id BIGINT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(64))",
		"CREATE TABLE shop.msgs (id BIGINT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(64))",
	)
	db := lf.open(t, "app", map[string]string{"multiStatements": "true", "interpolateParams": "true"})
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	exec := func(q string) {
		t.Helper()
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	// 1. USE within the text: the INSERT goes to shop.orders (rule
	// "orders", any database) and is filled from the segment tag; back in
	// app, app.orders is filled too.
	exec("USE shop; INSERT INTO orders (v) VALUES ('use-shop'); USE `app`; INSERT INTO orders (v) VALUES ('use-app')")
	// (shop.orders has no AUTO_INCREMENT and no default: unfilled, the
	// row would not be written or get key 0.)
	shopID, appID := idOf(t, direct, "shop.orders", "use-shop"), idOf(t, direct, "app.orders", "use-app")
	if shopID <= 0 || appID != shopID+1 {
		t.Errorf("after USE: shop.orders key %d, app.orders key %d; want consecutive generated keys", shopID, appID)
	}
	// The rule "app.msgs" is for app only: from shop, USE app makes
	// "msgs" that table (filled); from app, USE shop makes it shop.msgs
	// (no rule: its own AUTO_INCREMENT, no snowflake ID spliced in).
	exec("USE shop")
	exec("USE app; INSERT INTO msgs (v) VALUES ('use-msgs'); INSERT INTO shop.pay (v) VALUES ('use-pay')")
	if id := idOf(t, direct, "app.msgs", "use-msgs"); id < 1<<22 {
		t.Errorf("app.msgs: key %d, want a snowflake ID", id)
	}
	exec("USE shop; INSERT INTO msgs (v) VALUES ('shop-msgs')")
	for _, row := range [][2]string{{"shop.pay", "use-pay"}, {"shop.msgs", "shop-msgs"}} {
		if id := idOf(t, direct, row[0], row[1]); id != 1 {
			t.Errorf("%s (no rule): key %d, want its AUTO_INCREMENT 1", row[0], id)
		}
	}

	// 2. A SET of sql_mode before a statement that needs planning.
	exec("USE app")
	exec("SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_AUTO_VALUE_ON_ZERO')")
	for _, q := range []string{
		"SET sql_mode=''; INSERT INTO orders (id, v) VALUES (0, 'mode-zero')",
		"/*!40101 SET SQL_MODE='' */; INSERT INTO orders (v) VALUES ('mode-bang')",
		"SET @@session.sql_mode=''; SELECT NEXTVAL(order)",
	} {
		_, err := conn.ExecContext(ctx, q)
		if code, state := myErr(err); code != 1235 || state != "42000" || !strings.Contains(err.Error(), "sql_mode") {
			t.Errorf("%s: err %v, want 1235 about sql_mode", q, err)
		}
	}
	// Sent separately, it works: the new mode fills 0.
	exec("SET sql_mode=''")
	exec("INSERT INTO orders (id, v) VALUES (0, 'mode-separate')")
	if id := idOf(t, direct, "orders", "mode-separate"); id <= 0 {
		t.Errorf("0 after SET sql_mode='' stored as %d", id)
	}
	// Statements that need no planning still pass after the SET.
	exec("SET sql_mode=DEFAULT; INSERT INTO plain (v) VALUES ('mode-plain')")

	// 3. SQL-level prepared statements of a rule-table INSERT are refused.
	for _, q := range []string{
		"PREPARE s FROM 'INSERT INTO orders (v) VALUES (?)'",
		"EXECUTE IMMEDIATE 'INSERT INTO orders (v) VALUES (''dyn'')'",
		"SET @x = 'dyn'; PREPARE s FROM 'INSERT INTO app.msgs (v) VALUES (?)'; EXECUTE s USING @x",
	} {
		_, err := conn.ExecContext(ctx, q)
		if code, _ := myErr(err); code != 1235 || !strings.Contains(err.Error(), "binary protocol") {
			t.Errorf("%s: err %v, want 1235 pointing at the binary protocol", q, err)
		}
	}
	var n int
	if err := direct.QueryRow("SELECT (SELECT COUNT(*) FROM orders WHERE v LIKE 'mode-%' OR v = 'dyn') + (SELECT COUNT(*) FROM msgs WHERE v = 'dyn')").Scan(&n); err != nil || n != 1 {
		t.Errorf("refused statements wrote rows: %d rows (want only mode-separate), %v", n, err)
	}
	// On a table without a rule, and from a variable, they pass through.
	exec("PREPARE p FROM 'INSERT INTO plain (v) VALUES (?)'; SET @y = 'dyn-plain'; EXECUTE p USING @y; DEALLOCATE PREPARE p")
	exec("EXECUTE IMMEDIATE 'SELECT 1'")
	if err := direct.QueryRow("SELECT COUNT(*) FROM plain WHERE v = 'dyn-plain'").Scan(&n); err != nil || n != 1 {
		t.Errorf("PREPARE on plain: %d rows, %v", n, err)
	}
	// The binary protocol the error points at fills the key.
	bin := lf.open(t, "app", nil)
	if _, err := bin.ExecContext(ctx, "INSERT INTO orders (v) VALUES (?)", "binary"); err != nil {
		t.Fatal(err)
	}
	if id := idOf(t, direct, "orders", "binary"); id <= 0 {
		t.Errorf("binary protocol: key %d", id)
	}
}
