package integration

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/allocator/runway"
	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
	"github.com/leafproxy/leafproxy/service"
)

// Issue 28, item 4: the end of a key column. An INT rule table whose tag
// is moved near 2^31-1, beside an AUTO_INCREMENT twin at the same place:
// every write that needs a key past INT's maximum gets the twin's error
// (167, 22003) and writes nothing, in the default and the '' sql_mode;
// LAST_INSERT_ID() keeps the last key that fit; no segment is fetched past
// the column; the runway, the status and SHOW LEAFPROXY SEQUENCES say the
// tag is at its end; widening the column through the proxy serves it
// again; a rule added by a reload shows its INT column at once.

const intMax = 2147483647

func TestKeyColumnEnd(t *testing.T) {
	backend := testdb.Start(t)
	backend.Exec(t, "CREATE DATABASE shop",
		"CREATE TABLE shop.r (id INT PRIMARY KEY, b VARCHAR(10), u INT, UNIQUE KEY (u))",
		"CREATE TABLE shop.a (id INT AUTO_INCREMENT PRIMARY KEY, b VARCHAR(10), u INT, UNIQUE KEY (u))",
		"CREATE TABLE shop.src (b VARCHAR(10), u INT)",
		"INSERT INTO shop.src VALUES ('s1', 91), ('s2', 92)",
		"CREATE TABLE shop.late (id INT PRIMARY KEY, v INT)")
	cfg := layoutConfig(t, backend)
	cfg.Metrics.Listen = "127.0.0.1:0"
	cfg.Sequences.Tags["r"] = config.Tag{Generator: "segment", Step: 10}
	cfg.Tables = []config.Table{{Table: "shop.r", Column: "id", Tag: "r"}}
	var logs testdb.LockedBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// Column types re-read every hour: only a reload or a DDL makes them
	// be read sooner.
	lf := startLeafOpts(t, cfg, log, service.WithRunwayOptions(runway.Options{Interval: 50 * time.Millisecond, ColumnsEvery: time.Hour}))
	app := lf.open(t, "shop", map[string]string{"allowAllFiles": "true"})
	ops := opsDB(t, lf)
	direct, err := sql.Open("mysql", backend.DSN("shop")+"&allowAllFiles=true")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { direct.Close() })
	store := backend.Open(t, "leafproxy")
	maxID := func() int64 {
		var v int64
		if err := store.QueryRow("SELECT max_id FROM leaf_alloc WHERE biz_tag = 'r'").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	testwait.For(t, "the runway of r", func() bool { return seqRow(t, ops, "r")["limited_by"] == "shop.r.id int(11)" })
	if f := seqRow(t, ops, "r")["fetches"]; f != "0" && f != "NULL" {
		t.Fatalf("r fetched before the test moved it: %v", seqRow(t, ops, "r"))
	}

	// Both at 2147483645; the next key of each is 2147483646.
	direct.Exec("INSERT INTO a (id, b, u) VALUES (2147483645, 'x', 1)")
	direct.Exec("INSERT INTO r (id, b, u) VALUES (2147483645, 'x', 1)")
	if _, err := store.Exec("UPDATE leaf_alloc SET max_id = 2147483646 WHERE biz_tag = 'r'"); err != nil {
		t.Fatal(err)
	}
	// Two IDs left of INT's range: warned about, near its end (without a
	// rate too: allocator/runway's TestMonitorWarnsByWhatIsLeft).
	defer func() {
		if t.Failed() {
			t.Logf("log:\n%s\nr: %v", logs.String(), seqRow(t, ops, "r"))
		}
	}()
	testwait.For(t, "the warning by what is left", func() bool {
		return strings.Contains(logs.String(), "tag=r ") && strings.Contains(logs.String(), "level=critical")
	})
	if r := seqRow(t, ops, "r"); r["ids_left"] != "2" || r["end"] != "near end: under 1% left" {
		t.Errorf("r near its end: %v", r)
	}

	pc := oneConn(t, app)
	dc := oneConn(t, direct)
	// The last two values fit, in both: the proxy hands out the last one,
	// as AUTO_INCREMENT does.
	for i, b := range []string{"n1", "n2"} {
		res := execID(t, pc, fmt.Sprintf("INSERT INTO r (b, u) VALUES ('%s', %d)", b, i+2))
		want := execID(t, dc, fmt.Sprintf("INSERT INTO a (b, u) VALUES ('%s', %d)", b, i+2))
		if res != want || res != int64(intMax-1+i) {
			t.Fatalf("%s: proxy key %d, AUTO_INCREMENT %d", b, res, want)
		}
	}

	stmts := []string{
		"INSERT INTO %s (b, u) VALUES ('n3', 33)",
		"REPLACE INTO %s (b, u) VALUES ('rp', 3)",
		"INSERT INTO %s (b, u) VALUES ('od', 3) ON DUPLICATE KEY UPDATE b = 'upd'",
		"INSERT INTO %s (b, u) VALUES ('od', 44) ON DUPLICATE KEY UPDATE b = 'upd'",
		"INSERT INTO %s (b, u) VALUES ('m1', 7), ('m2', 8)",
		"INSERT INTO %s (id, b, u) VALUES (NULL, 'z1', 9), (0, 'z2', 10)",
		"INSERT INTO %s SET b = 'set', u = 11",
		"INSERT INTO %s (b, u) SELECT b, u FROM src",
	}
	file := filepath.Join(t.TempDir(), "rows.tsv")
	if err := os.WriteFile(file, []byte("l1\t71\nl2\t72\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stmts = append(stmts, "LOAD DATA LOCAL INFILE '"+file+"' REPLACE INTO TABLE %s (b, u)")
	ignores := []string{
		"INSERT IGNORE INTO %s (b, u) VALUES ('ig', 66)",
		"INSERT IGNORE INTO %s (b, u) SELECT b, u FROM src WHERE u = 91",
		"LOAD DATA LOCAL INFILE '" + file + "' INTO TABLE %s (b, u)", // LOCAL: IGNORE
		"prepared",
	}
	before := keyRows(t, direct, "r")
	twinBefore := keyRows(t, direct, "a")
	for _, mode := range []string{"DEFAULT", "''"} {
		for _, c := range []*sql.Conn{pc, dc} {
			if _, err := c.ExecContext(t.Context(), "SET SESSION sql_mode = "+mode); err != nil {
				t.Fatal(err)
			}
		}
		for _, s := range stmts {
			_, perr := pc.ExecContext(t.Context(), fmt.Sprintf(s, "r"))
			_, derr := dc.ExecContext(t.Context(), fmt.Sprintf(s, "a"))
			pcode, pstate := myErr(perr)
			dcode, dstate := myErr(derr)
			if pcode != dcode || pstate != dstate || pcode != 167 {
				t.Errorf("mode %s: %s: proxy %v, AUTO_INCREMENT %v", mode, s, perr, derr)
				continue
			}
			if !strings.Contains(perr.Error(), "Out of range value for column 'id' at row") || !strings.Contains(perr.Error(), "tag 'r'") ||
				!strings.Contains(perr.Error(), "shop.r.id int(11)") {
				t.Errorf("mode %s: %s: message %v", mode, s, perr)
			}
		}
		// Prepared (the driver prepares statements with arguments).
		for _, s := range []string{
			"INSERT INTO %s (b, u) VALUES (?, 55)",
			"REPLACE INTO %s (b, u) VALUES (?, 3)",
			"INSERT INTO %s (b, u) VALUES (?, 3) ON DUPLICATE KEY UPDATE b = 'upd'",
			"INSERT INTO %s (b, u) SELECT ?, u + 100 FROM src",
		} {
			_, perr := pc.ExecContext(t.Context(), fmt.Sprintf(s, "r"), "p")
			_, derr := dc.ExecContext(t.Context(), fmt.Sprintf(s, "a"), "p")
			if pcode, _ := myErr(perr); pcode != 167 {
				t.Errorf("mode %s: prepared %s: proxy %v, AUTO_INCREMENT %v", mode, s, perr, derr)
			} else if dcode, _ := myErr(derr); dcode != 167 {
				t.Errorf("mode %s: prepared %s: AUTO_INCREMENT %v", mode, s, derr)
			}
		}
		// INSERT IGNORE: AUTO_INCREMENT skips the row with a warning 167.
		for _, s := range ignores {
			var args []any
			if s == "prepared" {
				s, args = "INSERT IGNORE INTO %s (b, u) VALUES (?, ?)", []any{"pi", 67}
			}
			pres, perr := pc.ExecContext(t.Context(), fmt.Sprintf(s, "r"), args...)
			pw := warningCodes(t, pc)
			dres, derr := dc.ExecContext(t.Context(), fmt.Sprintf(s, "a"), args...)
			dw := warningCodes(t, dc)
			if strings.HasPrefix(dw, "Warning 167; Warning 167") {
				dw = "Warning 167" // LOAD DATA: one per row; the proxy gives one (README)
			}
			if perr != nil || derr != nil || pw != dw || pw != "Warning 167" {
				t.Errorf("mode %s: %s: proxy %v %q, AUTO_INCREMENT %v %q", mode, s, perr, pw, derr, dw)
				continue
			}
			pn, _ := pres.RowsAffected()
			dn, _ := dres.RowsAffected()
			if pn != 0 || dn != 0 {
				t.Errorf("mode %s: %s: affected rows: proxy %d, AUTO_INCREMENT %d", mode, s, pn, dn)
			}
		}
	}
	// A Connector/J batch: one COM_STMT_BULK_EXECUTE.
	t.Run("bulk", func(t *testing.T) {
		proxied := strings.TrimSpace(runJava(t, "BulkEnd", jdbcURL(lf.addr, "shop", "app", "secret"), "r", "3"))
		twin := strings.TrimSpace(runJava(t, "BulkEnd", jdbcURL(backend.Addr, "shop", "root", ""), "a", "3"))
		if proxied != twin || !strings.HasPrefix(proxied, "error 167 ") {
			t.Errorf("bulk: proxy %q, AUTO_INCREMENT %q", proxied, twin)
		}
	})
	if got := keyRows(t, direct, "r"); got != before {
		t.Errorf("the rule table changed:\n%s\nwas\n%s", got, before)
	}
	if got := keyRows(t, direct, "a"); got != twinBefore {
		t.Errorf("the twin changed:\n%s\nwas\n%s", got, twinBefore)
	}
	var pl, dl int64
	if err := pc.QueryRowContext(t.Context(), "SELECT LAST_INSERT_ID()").Scan(&pl); err != nil {
		t.Fatal(err)
	}
	if err := dc.QueryRowContext(t.Context(), "SELECT LAST_INSERT_ID()").Scan(&dl); err != nil {
		t.Fatal(err)
	}
	if pl != intMax || dl != intMax {
		t.Errorf("LAST_INSERT_ID(): proxy %d, AUTO_INCREMENT %d", pl, dl)
	}

	// No segment past the column: the one holding 2^31-1 was the last.
	if m := maxID(); m != 2147483656 {
		t.Errorf("leaf_alloc.max_id %d: a segment was fetched past INT's maximum", m)
	}
	testwait.For(t, "r at its end", func() bool { return strings.HasPrefix(seqRow(t, ops, "r")["end"], "at end") })
	var state string
	for _, ts := range lf.svc.Status(t.Context()).Tags {
		if ts.Tag == "r" {
			state = ts.State
		}
	}
	if st := lf.svc.Status(t.Context()); state != "at end" || len(st.Problems) == 0 {
		t.Errorf("status: r %q, problems %q", state, st.Problems)
	}
	if v, ok := scrape(t, lf, "leafproxy_sequence_at_end", "r"); !ok || v != 1 {
		t.Errorf("leafproxy_sequence_at_end{tag=r}: %v %v", v, ok)
	}
	testwait.For(t, "the warning that r has no IDs left", func() bool { return strings.Contains(logs.String(), "sequence has no IDs left") })

	// Widened through the proxy: the DDL makes the runway read the column
	// again, the allocator fetches past 2^31-1 again.
	if _, err := app.Exec("ALTER TABLE r MODIFY id BIGINT"); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "r widened", func() bool { return seqRow(t, ops, "r")["limited_by"] == "shop.r.id bigint(20)" })
	if r := seqRow(t, ops, "r"); r["end"] != "ok" {
		t.Errorf("r after widening: %v", r)
	}
	if _, err := app.Exec("INSERT INTO r (b, u) VALUES ('w', 77)"); err != nil {
		t.Fatalf("after widening: %v", err)
	}

	// A rule added by a reload on an INT column: its column at once, not
	// BIGINT until the next hourly read.
	next := *cfg
	next.Tables = append(append([]config.Table(nil), cfg.Tables...), config.Table{Table: "shop.late", Column: "id", Tag: "late"})
	next.Sequences.Tags = map[string]config.Tag{}
	for k, v := range cfg.Sequences.Tags {
		next.Sequences.Tags[k] = v
	}
	next.Sequences.Tags["late"] = config.Tag{Generator: "segment", Step: 10}
	if _, err := lf.svc.Reload(context.Background(), &next); err != nil {
		t.Fatal(err)
	}
	// (A computation that ran between the tag's creation in the store and
	// the new rules taking effect shows it as BIGINT, rightly for that
	// moment: so wait for the column, well under the hourly read.)
	testwait.For(t, "late's runway to name its INT column", func() bool {
		return seqRow(t, ops, "late")["limited_by"] == "shop.late.id int(11)"
	})

	// An INSERT IGNORE whose first row fits and second does not:
	// AUTO_INCREMENT would write the first and warn about the second; the
	// proxy refuses the statement with 167, writing nothing (README).
	if _, err := store.Exec("UPDATE leaf_alloc SET max_id = 2147483647 WHERE biz_tag = 'late'"); err != nil {
		t.Fatal(err)
	}
	_, err = app.Exec("INSERT IGNORE INTO late (v) VALUES (1), (2)")
	if code, _ := myErr(err); code != 167 || !strings.Contains(err.Error(), "at row 2") {
		t.Errorf("straddling INSERT IGNORE: %v", err)
	}
	var n int
	if err := direct.QueryRow("SELECT COUNT(*) FROM late").Scan(&n); err != nil || n != 0 {
		t.Errorf("late has %d rows (%v)", n, err)
	}
}

// oneConn is one connection of db, for session state (sql_mode).
func oneConn(t *testing.T, db *sql.DB) *sql.Conn {
	t.Helper()
	c, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// execID runs q and returns its insert id.
func execID(t *testing.T, c *sql.Conn, q string) int64 {
	t.Helper()
	res, err := c.ExecContext(t.Context(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	id, _ := res.LastInsertId()
	return id
}

// keyRows is table's rows in key order, one line each.
func keyRows(t *testing.T, db *sql.DB, table string) string {
	t.Helper()
	rows, err := db.Query("SELECT id, b, u FROM " + table + " ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out strings.Builder
	for rows.Next() {
		var id, u int64
		var b string
		if err := rows.Scan(&id, &b, &u); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&out, "%d %s %d\n", id, b, u)
	}
	return out.String()
}

// warningCodes is SHOW WARNINGS on c: "Level Code" of each, "; "-separated.
func warningCodes(t *testing.T, c *sql.Conn) string {
	t.Helper()
	rows, err := c.QueryContext(t.Context(), "SHOW WARNINGS")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var level, code, msg string
		if err := rows.Scan(&level, &code, &msg); err != nil {
			t.Fatal(err)
		}
		out = append(out, level+" "+code)
	}
	return strings.Join(out, "; ")
}

// TestRunwayWarnsFreshProxy: a proxy that starts with 367 IDs left of an
// INT key (the tag adopted above the table's largest key) and no rate yet
// warns at its first computation, by what is left.
func TestRunwayWarnsFreshProxy(t *testing.T) {
	backend := testdb.Start(t)
	backend.Exec(t, "CREATE DATABASE shop", "CREATE TABLE shop.near (id INT PRIMARY KEY, v INT)",
		"INSERT INTO shop.near VALUES (2147483280, 1)")
	cfg := layoutConfig(t, backend)
	cfg.Tables = []config.Table{{Table: "shop.near", Column: "id", Tag: "near"}}
	var logs testdb.LockedBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	lf := startLeafOpts(t, cfg, log)
	testwait.For(t, "the warning", func() bool {
		return strings.Contains(logs.String(), "less than 1% of its key column's range left") && strings.Contains(logs.String(), "ids_left=367 ")
	})
	if r := seqRow(t, opsDB(t, lf), "near"); r["ids_left"] != "367" || r["exhausted_at"] != "NULL" || r["end"] != "near end: under 1% left" {
		t.Errorf("near: %v", r)
	}
}
