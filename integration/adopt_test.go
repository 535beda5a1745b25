package integration

import (
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
)

// Issue 9, item 1: adopting a table that already holds AUTO_INCREMENT keys.
// A tag that started at 1 over such a table made the first INSERT through
// the proxy fail with 1062. Tags now start (and are raised at init) above
// the largest key of the rule tables they fill, on every server the proxy
// sees, and SETVAL raises a tag later.

// fillOrders creates app.orders as an application would have (AUTO_INCREMENT)
// and writes n rows with keys from+1 .. from+n straight to the backend.
func fillOrders(t *testing.T, srv *testdb.Server, from, n int) {
	t.Helper()
	srv.Exec(t, "CREATE DATABASE IF NOT EXISTS app",
		"CREATE TABLE IF NOT EXISTS app.orders (id BIGINT AUTO_INCREMENT PRIMARY KEY, src VARCHAR(32) NOT NULL)")
	srv.Exec(t, fmt.Sprintf("INSERT INTO app.orders (id, src) SELECT seq, 'direct' FROM app.seq_%d_to_%d", from+1, from+n))
}

// insertThrough inserts n rows without a key through db, half as text, half
// as prepared statements, from 4 goroutines; it returns the first error.
func insertThrough(t *testing.T, text, prep *sql.DB, n int, src string) error {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 4 {
		db := text
		if w%2 == 1 {
			db = prep
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n / 4 {
				if _, err := db.Exec("INSERT INTO orders (src) VALUES (?)", src); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// countKeys returns the number of rows and of distinct keys of app.orders on db.
func countKeys(t *testing.T, db *sql.DB) (rows, distinct int, maxKey int64) {
	t.Helper()
	if err := db.QueryRow("SELECT COUNT(*), COUNT(DISTINCT id), MAX(id) FROM app.orders").Scan(&rows, &distinct, &maxKey); err != nil {
		t.Fatal(err)
	}
	return rows, distinct, maxKey
}

func TestAdoptExistingTable(t *testing.T) {
	backend := testdb.Start(t)
	fillOrders(t, backend, 0, 3000)
	cfg := leafConfig(t, backend, nil)
	cfg.Sequences.DefaultStep = 100 // several segments over the test
	cfg.Tables = []config.Table{{Table: "orders", Column: "id", Tag: "order"}}
	lf := startLeaf(t, cfg)

	text := lf.open(t, "app", map[string]string{"interpolateParams": "true"})
	prep := lf.open(t, "app", nil)
	res, err := text.Exec("INSERT INTO orders (src) VALUES ('first')")
	if err != nil {
		t.Fatalf("first INSERT through the proxy over 3,000 existing rows: %v", err)
	}
	if id, _ := res.LastInsertId(); id <= 3000 {
		t.Errorf("first generated key %d, want above the existing 3000", id)
	}
	if err := insertThrough(t, text, prep, 800, "proxy"); err != nil {
		t.Fatalf("INSERT through the proxy: %v", err)
	}
	rows, distinct, _ := countKeys(t, backend.Open(t, "app"))
	if rows != 3801 || distinct != rows {
		t.Fatalf("app.orders: %d rows, %d distinct keys; want 3801 and 3801", rows, distinct)
	}
}

// TestAdoptCreatesAtFirstUse: with auto_create, a tag missing when a rule
// table is first written (deleted here after start-up; in life: the store
// was unreachable at start) is created above the table's largest key.
func TestAdoptCreatesAtFirstUse(t *testing.T) {
	backend := testdb.Start(t)
	cfg := leafConfig(t, backend, nil)
	cfg.Sequences.AutoCreate = true
	cfg.Tables = []config.Table{{Table: "app.orders", Column: "id", Tag: "order"}}
	lf := startLeaf(t, cfg)
	// The table is filled after start-up, and init's tag row is gone.
	fillOrders(t, backend, 0, 2500)
	backend.Exec(t, "DELETE FROM leafproxy.leaf_alloc WHERE biz_tag = 'order'")

	text := lf.open(t, "app", map[string]string{"interpolateParams": "true"})
	prep := lf.open(t, "app", nil)
	if err := insertThrough(t, text, prep, 400, "proxy"); err != nil {
		t.Fatalf("INSERT through the proxy: %v", err)
	}
	rows, distinct, _ := countKeys(t, backend.Open(t, "app"))
	if rows != 2900 || distinct != rows {
		t.Fatalf("app.orders: %d rows, %d distinct keys; want 2900 and 2900", rows, distinct)
	}
}

// TestAdoptTwoShards: two shards that both hold rows (shard 1 keys
// 1..3000, shard 2 keys 20001..24000), one proxy each, one shared store on
// a third server that also holds the unsharded original (keys 1..1000).
// The second proxy starts after the first created the tag: init raises it
// above its own shard. Keys must be distinct across both shards.
func TestAdoptTwoShards(t *testing.T) {
	store := testdb.Start(t)
	shards := [2]*testdb.Server{testdb.Start(t), testdb.Start(t)}
	fillOrders(t, shards[0], 0, 3000)
	fillOrders(t, shards[1], 20000, 4000)
	fillOrders(t, store, 0, 1000)

	var proxies [2]*leaf
	for i, sh := range shards {
		cfg := leafConfig(t, sh, store)
		cfg.Sequences.Tags = map[string]config.Tag{"order": {Generator: "segment", Step: 50}}
		cfg.Tables = []config.Table{{Table: "app.orders", Column: "id", Tag: "order"}}
		proxies[i] = startLeaf(t, cfg)
	}
	var maxID int64
	if err := store.Open(t, "leafstore").QueryRow("SELECT max_id FROM leaf_alloc WHERE biz_tag = 'order'").Scan(&maxID); err != nil {
		t.Fatal(err)
	}
	if maxID <= 24000 {
		t.Errorf("leaf_alloc.max_id %d after both proxies started, want above shard 2's 24000", maxID)
	}

	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, p := range proxies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			text := p.open(t, "app", map[string]string{"interpolateParams": "true"})
			prep := p.open(t, "app", nil)
			errs[i] = insertThrough(t, text, prep, 600, fmt.Sprintf("proxy%d", i))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("INSERT through proxy %d: %v", i, err)
		}
	}
	seen := map[int64]int{}
	total := 0
	for i, sh := range shards {
		db := sh.Open(t, "app")
		rows, distinct, _ := countKeys(t, db)
		if want := []int{3600, 4600}[i]; rows != want || distinct != rows {
			t.Errorf("shard %d: %d rows, %d distinct keys; want %d", i, rows, distinct, want)
		}
		r, err := db.Query("SELECT id FROM orders WHERE src LIKE 'proxy%'")
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
			var id int64
			if err := r.Scan(&id); err != nil {
				t.Fatal(err)
			}
			seen[id]++
			total++
			if id <= 24000 {
				t.Errorf("shard %d: generated key %d is within the adopted ranges", i, id)
			}
		}
		r.Close()
	}
	if total != 1200 || len(seen) != total {
		t.Errorf("generated keys: %d rows, %d distinct across shards; want 1200 and 1200", total, len(seen))
	}
}

// TestSetval: SELECT SETVAL('tag', n) through the proxy raises the tag's
// floor for keys written around the proxy after adoption: it returns n
// (as MariaDB does), this proxy's buffered segment is dropped at once, a
// second proxy sharing the store fetches above n, and a value below what
// was handed out is refused naming the current value.
func TestSetval(t *testing.T) {
	backend := testdb.Start(t)
	cfg := leafConfig(t, backend, nil)
	cfg.Users[0].Admin = true // SETVAL is for operators
	cfg.Users = append(cfg.Users, config.User{Name: "plain", Password: "pw"})
	cfg.Sequences.Tags = map[string]config.Tag{"order": {Generator: "segment", Step: 1000}, "snow": {Generator: "snowflake"}}
	cfg.Snowflake.WorkerID = "3"
	cfg.Tables = []config.Table{{Table: "app.orders", Column: "id", Tag: "order"}}
	fillOrders(t, backend, 0, 10)
	lf := startLeaf(t, cfg)
	db := lf.open(t, "app", map[string]string{"interpolateParams": "true"})
	db.SetMaxOpenConns(1)

	// The proxy holds a segment [11, 1011).
	var first int64
	if err := db.QueryRow("SELECT NEXTVAL('order')").Scan(&first); err != nil {
		t.Fatal(err)
	}
	if first != 11 {
		t.Errorf("first NEXTVAL over keys 1..10: %d, want 11", first)
	}
	// Keys written around the proxy (an import) up to 5000.
	fillOrders(t, backend, 10, 4990)

	var got int64
	var name string
	rows, err := db.Query("SELECT SETVAL('order', 5000)")
	if err != nil {
		t.Fatalf("SETVAL: %v", err)
	}
	cols, _ := rows.Columns()
	if len(cols) == 1 {
		name = cols[0]
	}
	for rows.Next() {
		if err := rows.Scan(&got); err != nil {
			t.Fatal(err)
		}
	}
	rows.Close()
	if got != 5000 || name != "SETVAL('order', 5000)" {
		t.Errorf("SETVAL returned %d in column %q, want 5000 in SETVAL('order', 5000)", got, name)
	}
	var next int64
	if err := db.QueryRow("SELECT NEXTVAL('order')").Scan(&next); err != nil {
		t.Fatal(err)
	}
	if next != 5001 {
		t.Errorf("NEXTVAL after SETVAL('order', 5000): %d, want 5001 (the buffered segment dropped)", next)
	}
	if _, err := db.Exec("INSERT INTO orders (src) VALUES ('after setval'), ('after setval')"); err != nil {
		t.Fatalf("INSERT after SETVAL: %v", err)
	}

	// Another proxy on the same store, started after the SETVAL.
	cfg2 := leafConfigLike(t, cfg)
	cfg2.Snowflake.WorkerID = "4" // a fixed worker id is held by one live proxy only
	lf2 := startLeaf(t, cfg2)
	var other int64
	if err := lf2.open(t, "app", nil).QueryRow("SELECT NEXTVAL('order')").Scan(&other); err != nil {
		t.Fatal(err)
	}
	if other <= 5002 {
		t.Errorf("second proxy's NEXTVAL %d, want above 5002", other)
	}

	// Only upward: 4000 is below what was handed out (up to 6000 reserved).
	_, err = db.Exec("SELECT SETVAL('order', 4000)")
	if code, state := myErr(err); code != 1210 || state != "HY000" || !strings.Contains(err.Error(), "'order'") || !strings.Contains(err.Error(), "current value is") {
		t.Errorf("SETVAL below the issued IDs: %v (%d %s), want 1210 HY000 naming the tag and its current value", err, code, state)
	}
	// is_used = 0: the next value is n itself.
	if err := db.QueryRow("SELECT SETVAL('order', 100000, 0)").Scan(&got); err != nil || got != 100000 {
		t.Fatalf("SETVAL(order, 100000, 0): %d, %v", got, err)
	}
	if err := db.QueryRow("SELECT NEXTVAL('order')").Scan(&next); err != nil || next != 100000 {
		t.Errorf("NEXTVAL after SETVAL('order', 100000, 0): %d, %v; want 100000", next, err)
	}
	plainDB, _ := sql.Open("mysql", "plain:pw@tcp("+lf.addr+")/app")
	defer plainDB.Close()
	if _, err := plainDB.Exec("SELECT SETVAL('order', 900000)"); err == nil || !strings.Contains(err.Error(), "1227") {
		t.Errorf("SETVAL by an account without admin: %v, want 1227", err)
	}
	_, err = db.Exec("SELECT SETVAL('nosuch', 5)")
	if code, state := myErr(err); code != 4091 || state != "42S02" {
		t.Errorf("SETVAL of an unknown tag: %v, want 4091 42S02", err)
	}
	_, err = db.Exec("SELECT SETVAL('snow', 5)")
	if code, _ := myErr(err); code != 1235 || !strings.Contains(err.Error(), "snowflake") {
		t.Errorf("SETVAL of a snowflake tag: %v, want 1235 naming snowflake", err)
	}
	_, err = db.Exec("SELECT SETVAL('order', -1)")
	if code, _ := myErr(err); code != 1210 {
		t.Errorf("SETVAL with a negative value: %v, want 1210", err)
	}
	// A prepared SETVAL works too (answered by the proxy at each EXECUTE).
	stmt, err := lf.open(t, "app", nil).Prepare("SELECT SETVAL('order', 200000)")
	if err != nil {
		t.Fatalf("prepare SETVAL: %v", err)
	}
	defer stmt.Close()
	for range 2 {
		if err := stmt.QueryRow().Scan(&got); err != nil || got != 200000 {
			t.Errorf("prepared SETVAL: %d, %v", got, err)
		}
	}
	if err := db.QueryRow("SELECT NEXTVAL('order')").Scan(&next); err != nil || next != 200001 {
		t.Errorf("NEXTVAL after prepared SETVAL('order', 200000): %d, %v; want 200001", next, err)
	}

	rowsN, distinct, _ := countKeys(t, backend.Open(t, "app"))
	if rowsN != 5002 || distinct != rowsN {
		t.Errorf("app.orders: %d rows, %d distinct", rowsN, distinct)
	}
}

// leafConfigLike copies cfg for a second proxy (its own listen address).
func leafConfigLike(t *testing.T, cfg *config.Config) *config.Config {
	c := *cfg
	c.Listen = "127.0.0.1:0"
	return &c
}
