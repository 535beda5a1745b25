package integration

import (
	"context"
	"database/sql"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
)

// loadEnv: a backend with database app holding the rule table orders
// (segment tag "order", above the seed row 5000000 already there), its
// AUTO_INCREMENT twin ai, and plain (no rule); a proxy in front with
// account app/secret.
func loadEnv(t *testing.T, tune func(*config.Config, *testdb.Server)) (*testdb.Server, *leaf) {
	t.Helper()
	backend := testdb.Start(t)
	backend.Open(t, "app")
	backend.Exec(t,
		"CREATE TABLE app.orders (id BIGINT PRIMARY KEY, item VARCHAR(64), qty INT)",
		"INSERT INTO app.orders VALUES (5000000, 'seed', 0)",
		"CREATE TABLE app.ai (id BIGINT AUTO_INCREMENT PRIMARY KEY, item VARCHAR(64), qty INT)",
		"CREATE TABLE app.plain (id BIGINT AUTO_INCREMENT PRIMARY KEY, item VARCHAR(64), qty INT)",
	)
	cfg := leafConfig(t, backend, nil)
	cfg.Sequences.Tags = map[string]config.Tag{"order": {Generator: "segment", Step: 1000}}
	cfg.Tables = []config.Table{{Table: "app.orders", Column: "id", Tag: "order"}}
	if tune != nil {
		tune(cfg, backend)
	}
	return backend, startLeaf(t, cfg)
}

// keyCounts counts table's rows and distinct keys directly on the backend,
// without the seed row.
func keyCounts(t *testing.T, direct *sql.DB, table string) (rows, distinct, zero int) {
	t.Helper()
	if err := direct.QueryRow("SELECT COUNT(*), COUNT(DISTINCT id), SUM(id = 0) FROM "+table+" WHERE id <> 5000000").Scan(&rows, &distinct, new(sql.NullInt64)); err != nil {
		t.Fatal(err)
	}
	if err := direct.QueryRow("SELECT COUNT(*) FROM " + table + " WHERE id = 0").Scan(&zero); err != nil {
		t.Fatal(err)
	}
	return rows, distinct, zero
}

// Issue 19 as reported: three lines loaded with LOAD DATA LOCAL INFILE
// into a rule table without the key column gave one row with key 0 and
// two duplicate-key warnings. Through go-sql-driver (a file allowed with
// allowAllFiles, one registered with RegisterLocalFile, a reader), every
// line is a row with its own generated key, counted in the database, and
// LAST_INSERT_ID() is the first of them, as with AUTO_INCREMENT.
func TestLoadDataLocalFillsKeys(t *testing.T) {
	backend, lf := loadEnv(t, nil)
	direct := backend.Open(t, "app")
	file := writeScript(t, "orders.tsv", "book\t1\npen\t2\nink\t3\n")
	db := lf.open(t, "app", map[string]string{"allowAllFiles": "true"})
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for i, q := range []string{
		"LOAD DATA LOCAL INFILE '" + file + "' INTO TABLE orders (item, qty)",
		"LOAD DATA LOCAL INFILE '" + registerReader(t, []byte("cup\t4\nmug\t5\njar\t6")) + "' INTO TABLE app.orders (item, qty)",
		"LOAD DATA LOCAL INFILE '" + file + "' REPLACE INTO TABLE `app`.`orders` CHARACTER SET utf8mb4 FIELDS TERMINATED BY '\\t' LINES TERMINATED BY '\\n' (item, @q) SET qty = @q * 10",
	} {
		res, err := conn.ExecContext(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if n, _ := res.RowsAffected(); n != 3 {
			t.Errorf("%s: %d rows affected, want 3", q, n)
		}
		var last, first int64
		if err := conn.QueryRowContext(ctx, "SELECT LAST_INSERT_ID()").Scan(&last); err != nil {
			t.Fatal(err)
		}
		if err := direct.QueryRow("SELECT MIN(id) FROM orders WHERE id > ?", 5000000+int64(i)*0).Scan(&first); err != nil {
			t.Fatal(err)
		}
		var loaded int64
		if err := direct.QueryRow("SELECT COUNT(*) FROM orders WHERE id >= ?", last).Scan(&loaded); err != nil || loaded != 3 {
			t.Errorf("%s: LAST_INSERT_ID() %d is not the first of the 3 keys just loaded (%d rows from it, %v)", q, last, loaded, err)
		}
	}
	rows, distinct, zero := keyCounts(t, direct, "orders")
	if rows != 9 || distinct != 9 || zero != 0 {
		t.Fatalf("after three loads of 3 lines: %d rows, %d distinct keys, %d keyed 0; want 9, 9, 0", rows, distinct, zero)
	}
	var tens int
	if err := direct.QueryRow("SELECT COUNT(*) FROM orders WHERE qty IN (10, 20, 30)").Scan(&tens); err != nil || tens != 3 {
		t.Errorf("the statement's own SET list: %d rows with qty*10 (%v)", tens, err)
	}
	// The file's lines are the rows, in order, keys ascending.
	got := []string{}
	r, err := direct.Query("SELECT item FROM orders WHERE id > 5000000 ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		var s string
		_ = r.Scan(&s)
		got = append(got, s)
	}
	if strings.Join(got, " ") != "book pen ink cup mug jar book pen ink" {
		t.Errorf("rows in key order: %v", got)
	}
}

// The mariadb CLI with --local-infile (plain and --compress): the file goes
// through the proxy, every line gets its own key.
func TestLoadDataLocalCLI(t *testing.T) {
	cli, err := exec.LookPath("mariadb")
	if err != nil {
		t.Skipf("mariadb client not installed: apt-get install mariadb-client (scripts/test.sh does): %v", err)
	}
	backend, lf := loadEnv(t, nil)
	direct := backend.Open(t, "app")
	host, port, _ := strings.Cut(lf.addr, ":")
	file := writeScript(t, "orders.csv", "id,item,qty\n,\"a, b\",1\n0,c,2\n\\N,\"d\ne\",3\n")
	for _, extra := range [][]string{nil, {"--compress"}} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		args := append([]string{"--no-defaults", "-h", host, "-P", port, "-u", "app", "-psecret", "--local-infile=1", "-D", "app"}, extra...)
		args = append(args, "-e", "LOAD DATA LOCAL INFILE '"+file+"' INTO TABLE orders FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' IGNORE 1 LINES; SELECT LAST_INSERT_ID()")
		out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("mariadb %v: %v\n%s", extra, err, out)
		}
		t.Logf("mariadb %v: %s", extra, strings.TrimSpace(string(out)))
	}
	rows, distinct, zero := keyCounts(t, direct, "orders")
	if rows != 6 || distinct != 6 || zero != 0 {
		t.Fatalf("after two CLI loads of 3 records: %d rows, %d distinct keys, %d keyed 0; want 6, 6, 0", rows, distinct, zero)
	}
	var n int
	if err := direct.QueryRow("SELECT COUNT(*) FROM orders WHERE item IN ('a, b', 'c', 'd\ne')").Scan(&n); err != nil || n != 6 {
		t.Errorf("the enclosed fields: %d of 6 rows as written (%v)", n, err)
	}
}

// What the file says of the key is kept or replaced exactly as an
// AUTO_INCREMENT column would: the same file loaded into the AUTO_INCREMENT
// twin directly and into the rule table through the proxy keeps the same
// explicit keys, generates for the same rows (\N, 0, ”, text, 0.4, a
// missing field, an empty line; under NO_AUTO_VALUE_ON_ZERO only \N and a
// missing field), drops the same duplicates (0.6 rounds to 1), warns the
// same (but see below), and sets LAST_INSERT_ID() to the first generated
// key.
func TestLoadDataKeysAsAutoIncrement(t *testing.T) {
	backend, lf := loadEnv(t, nil)
	file := []byte("a\t1\nb\t\\N\nc\t0\nd\t\ne\tabc\nf\t0.6\ng\t0.4\nh\n\ni\t1000001\n")
	type outcome struct {
		explicit  map[int64]string // keys the file gave, kept
		generated []string         // the other rows' items, in key order
		first     string           // the item of LAST_INSERT_ID()'s row
		affected  int64
		warnings  []int // codes, sorted
	}
	run := func(db *sql.DB, table string) outcome {
		t.Helper()
		ctx := context.Background()
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		res, err := conn.ExecContext(ctx, "LOAD DATA LOCAL INFILE '"+registerReader(t, file)+"' INTO TABLE "+table+" (item, id)")
		if err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		o := outcome{explicit: map[int64]string{}}
		o.affected, _ = res.RowsAffected()
		rows, err := conn.QueryContext(ctx, "SHOW WARNINGS")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var level, msg string
			var code int
			_ = rows.Scan(&level, &code, &msg)
			o.warnings = append(o.warnings, code)
		}
		rows.Close()
		sort.Ints(o.warnings)
		var last int64
		if err := conn.QueryRowContext(ctx, "SELECT LAST_INSERT_ID()").Scan(&last); err != nil {
			t.Fatal(err)
		}
		rows, err = conn.QueryContext(ctx, "SELECT id, COALESCE(item, 'NULL') FROM "+table+" WHERE id <> 5000000 ORDER BY id")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			var item string
			_ = rows.Scan(&id, &item)
			if id == last {
				o.first = item
			}
			if id == 0 || id == 1 || id == 1000001 { // the file's keys; generated ones are 2.. or above the seed
				o.explicit[id] = item
			} else {
				o.generated = append(o.generated, item)
			}
		}
		return o
	}
	for _, mode := range []string{"STRICT_TRANS_TABLES", "STRICT_TRANS_TABLES,NO_AUTO_VALUE_ON_ZERO"} {
		t.Run(mode, func(t *testing.T) {
			backend.Exec(t, "DELETE FROM app.orders WHERE id <> 5000000", "TRUNCATE app.ai")
			params := map[string]string{"sql_mode": "'" + mode + "'"}
			dc, err := mysql.ParseDSN(backend.DSN("app"))
			if err != nil {
				t.Fatal(err)
			}
			dc.Params = params
			ai := run(sqlOpen(t, dc.FormatDSN()), "ai")
			rule := run(lf.open(t, "app", params), "orders")
			// One difference, documented: the key's field is read into a
			// variable, so the two records too short to have one ("h" and
			// the empty line) lack their 1261 "doesn't contain data for
			// all columns" warning for it.
			for i, dropped := 0, 0; i < len(ai.warnings) && dropped < 2; {
				if ai.warnings[i] == 1261 {
					ai.warnings = append(ai.warnings[:i], ai.warnings[i+1:]...)
					dropped++
					continue
				}
				i++
			}
			if fmt.Sprint(ai.explicit) != fmt.Sprint(rule.explicit) || strings.Join(ai.generated, ",") != strings.Join(rule.generated, ",") ||
				ai.first != rule.first || ai.affected != rule.affected || fmt.Sprint(ai.warnings) != fmt.Sprint(rule.warnings) {
				t.Errorf("AUTO_INCREMENT:    %+v\nthrough the proxy: %+v", ai, rule)
			}
			t.Logf("%+v", rule)
		})
	}
}

// Loads the proxy cannot key are refused before anything is sent, naming
// the table; loads into other tables pass through untouched.
func TestLoadDataRefused(t *testing.T) {
	backend, lf := loadEnv(t, nil)
	direct := backend.Open(t, "app")
	db := lf.open(t, "app", map[string]string{"allowAllFiles": "true", "multiStatements": "true"})
	file := writeScript(t, "rows.tsv", "x\t1\ny\t2\n")
	for _, tt := range []struct{ sql, want string }{
		{"LOAD DATA INFILE '" + file + "' INTO TABLE orders (item, qty)", "use LOAD DATA LOCAL INFILE"},
		{"LOAD XML LOCAL INFILE '" + file + "' INTO TABLE orders", "LOAD XML is not supported"},
		{"LOAD DATA LOCAL INFILE '" + file + "' INTO TABLE orders (item, qty); SELECT 1", "only statement"},
		{"LOAD DATA LOCAL INFILE '" + file + "' INTO TABLE orders FIELDS TERMINATED BY '' (item, qty)", "fixed-width"},
		{"LOAD DATA LOCAL INFILE '" + file + "' INTO TABLE orders CHARACTER SET sjis (item, qty)", "character set sjis"},
		{"LOAD DATA LOCAL INFILE '" + file + "' INTO TABLE orders (item) SET id = 1", "assigns the key column"},
	} {
		_, err := db.Exec(tt.sql)
		code, _ := myErr(err)
		if code != 1235 || !strings.Contains(err.Error(), "app.orders") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s:\n got %v\nwant 1235 naming app.orders and saying %q", tt.sql, err, tt.want)
		}
	}
	if rows, _, _ := keyCounts(t, direct, "orders"); rows != 0 {
		t.Fatalf("refused loads wrote %d rows", rows)
	}
	// A table without a rule: the statement reaches the server as written.
	if _, err := db.Exec("LOAD DATA LOCAL INFILE '" + file + "' INTO TABLE plain (item, qty)"); err != nil {
		t.Fatal(err)
	}
	var n, maxID int
	if err := direct.QueryRow("SELECT COUNT(*), MAX(id) FROM plain").Scan(&n, &maxID); err != nil || n != 2 || maxID != 2 {
		t.Errorf("plain table: %d rows, largest key %d (%v); want 2 rows keyed by AUTO_INCREMENT", n, maxID, err)
	}
	// Server-side LOAD DATA into a table without a rule still goes to the
	// server (which refuses a file outside secure_file_priv itself).
	_, err := db.Exec("LOAD DATA INFILE '/nonexistent/leafproxy.tsv' INTO TABLE plain")
	if code, _ := myErr(err); code == 1235 || code == 0 {
		t.Errorf("server-side LOAD DATA into plain: %v, want the server's own error", err)
	}
}

// A client that sends no file (go-sql-driver refuses a file it was not
// allowed to read) writes nothing; the session goes on.
func TestLoadDataNoFile(t *testing.T) {
	backend, lf := loadEnv(t, nil)
	direct := backend.Open(t, "app")
	db := lf.open(t, "app", nil)
	db.SetMaxOpenConns(1)
	_, err := db.Exec("LOAD DATA LOCAL INFILE '/not/registered.tsv' INTO TABLE orders (item, qty)")
	if err == nil {
		t.Fatal("a LOAD of a file the driver may not read succeeded")
	}
	t.Logf("client refused its file: %v", err)
	if rows, _, _ := keyCounts(t, direct, "orders"); rows != 0 {
		t.Fatalf("%d rows written without a file", rows)
	}
	var one int
	if err := db.QueryRow("SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("the session after a refused file: %v", err)
	}
}

// Without a column list the server reads (and INSERT takes) every column
// but INVISIBLE ones; the proxy reads the table's columns the same way.
func TestLoadDataInvisibleColumn(t *testing.T) {
	backend, lf := loadEnv(t, func(cfg *config.Config, b *testdb.Server) {
		b.Exec(t, "CREATE TABLE app.inv (id BIGINT PRIMARY KEY, secret INT INVISIBLE DEFAULT 7, item VARCHAR(64))")
		cfg.Tables = append(cfg.Tables, config.Table{Table: "app.inv", Column: "id", Tag: "order"})
	})
	db := lf.open(t, "app", nil)
	if _, err := db.Exec("INSERT INTO inv VALUES (NULL, 'inserted')"); err != nil {
		t.Fatalf("INSERT without a column list: %v", err)
	}
	if _, err := db.Exec("LOAD DATA LOCAL INFILE '" + registerReader(t, []byte("\\N\tloaded\n0\tloaded too\n")) + "' INTO TABLE inv"); err != nil {
		t.Fatalf("LOAD DATA without a column list: %v", err)
	}
	var rows, distinct, secrets int
	if err := backend.Open(t, "app").QueryRow("SELECT COUNT(*), COUNT(DISTINCT id), SUM(secret = 7) FROM inv WHERE id > 5000000").Scan(&rows, &distinct, &secrets); err != nil {
		t.Fatal(err)
	}
	if rows != 3 || distinct != 3 || secrets != 3 {
		t.Fatalf("%d rows, %d distinct generated keys, %d with the invisible column's default; want 3 of each", rows, distinct, secrets)
	}
}

// Snowflake keys (above 2^53) go through the rendered statement's string
// variables and LAST_INSERT_ID() without losing a digit.
func TestLoadDataSnowflakeKeys(t *testing.T) {
	backend, lf := loadEnv(t, func(cfg *config.Config, b *testdb.Server) {
		b.Exec(t, "CREATE TABLE app.msgs (id BIGINT PRIMARY KEY, body VARCHAR(64))")
		cfg.Sequences.Tags["msg"] = config.Tag{Generator: "snowflake"}
		cfg.Snowflake.WorkerID = "3"
		cfg.Tables = append(cfg.Tables, config.Table{Table: "app.msgs", Column: "id", Tag: "msg"})
	})
	db := lf.open(t, "app", nil)
	db.SetMaxOpenConns(1)
	if _, err := db.Exec("LOAD DATA LOCAL INFILE '" + registerReader(t, []byte(strings.Repeat("hello\n", 500))) + "' INTO TABLE msgs (body)"); err != nil {
		t.Fatal(err)
	}
	var last uint64
	if err := db.QueryRow("SELECT LAST_INSERT_ID()").Scan(&last); err != nil {
		t.Fatal(err)
	}
	var rows, distinct int
	var minID uint64
	if err := backend.Open(t, "app").QueryRow("SELECT COUNT(*), COUNT(DISTINCT id), MIN(id) FROM msgs").Scan(&rows, &distinct, &minID); err != nil {
		t.Fatal(err)
	}
	if rows != 500 || distinct != 500 || minID != last || minID < 1<<53 {
		t.Fatalf("%d rows, %d distinct keys, smallest %d, LAST_INSERT_ID() %d; want 500 snowflake keys, the smallest reported", rows, distinct, minID, last)
	}
}
