package service_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

// TestMetricsTraffic drives real statements through go-sql-driver and
// checks that every statement-path series moved by exactly what was sent:
// commands by protocol command, statements the proxy carried out by kind,
// errors by code, the latency histograms, IDs per tag, logins, the
// engine's recoveries; on the event loops and with every session on its
// own goroutine (event_loops: -1), whose counting code differs. Commands
// an event loop hands to the session's goroutine (SETVAL, INSERT ...
// SELECT, LOAD DATA, a first NEXTVAL) must count once.
func TestMetricsTraffic(t *testing.T) {
	backend := testdb.Start(t)
	backend.Exec(t, "CREATE DATABASE app",
		"CREATE TABLE app.src (v INT)", "INSERT INTO app.src VALUES (1), (2), (3)")
	for _, loops := range []int{0, -1} {
		t.Run(fmt.Sprintf("event_loops=%d", loops), func(t *testing.T) {
			backend.Exec(t, "DROP TABLE IF EXISTS app.orders", "CREATE TABLE app.orders (id BIGINT PRIMARY KEY, v INT)",
				"DROP DATABASE IF EXISTS leafproxy")
			cfg := testConfig(backend)
			cfg.EventLoops = loops
			cfg.Tables = []config.Table{{Table: "app.orders", Column: "id", Tag: "t"}}
			r := startService(t, cfg)
			url := r.Base + "/metrics"
			trafficRound(t, r, url, backend, cfg)
		})
	}
}

func trafficRound(t *testing.T, r *running, url string, backend *testdb.Server, cfg *config.Config) {
	ctx := context.Background()
	db := r.clientDB(t, "app")
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var one int
	if err := conn.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		t.Fatal(err)
	}
	// A relayed command is timed once its answer is out, a moment after
	// the client has it: the baseline waits for the warm-up's. (Later
	// commands need no wait: a session runs its next command only after
	// the last one's accounting.)
	var before map[string]float64
	testwait.For(t, "the warm-up's relay timing", func() bool {
		before = scrape(t, url)
		return before["leafproxy_relay_duration_seconds_count"] == 1
	})

	q := func(query string) {
		t.Helper()
		rows, err := conn.QueryContext(ctx, query)
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		for rows.Next() {
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		rows.Close()
	}
	x := func(query string) {
		t.Helper()
		if _, err := conn.ExecContext(ctx, query); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
	}
	for range 3 {
		q("SELECT 1") // query, relayed
	}
	q("SELECT NEXTVAL('t')") // nextval, 1 ID
	q("SELECT NEXTVAL('t')")
	q("SELECT NEXTVAL('t', 10)")                           // nextval, 10 IDs
	x("INSERT INTO orders (v) VALUES (1), (2)")            // filled_insert, 2 IDs, relayed
	x("INSERT INTO orders (v) SELECT v + 10 FROM app.src") // numbered, 3 IDs, relayed
	name := fmt.Sprintf("metrics%d", time.Now().UnixNano())
	mysql.RegisterReaderHandler(name, func() io.Reader { return bytes.NewReader([]byte("20\n21\n")) })
	defer mysql.DeregisterReaderHandler(name)
	x("LOAD DATA LOCAL INFILE 'Reader::" + name + "' INTO TABLE orders (v)") // load_data, 2 IDs, relayed

	// A key written around the proxy where the next generated one goes:
	// the filled INSERT meets 1062, the engine moves past it and sends it
	// again (duplicate_key, 2 IDs drawn), the client sees one success.
	var last int64
	if err := conn.QueryRowContext(ctx, "SELECT LASTVAL('t')").Scan(&last); err != nil { // nextval
		t.Fatal(err)
	}
	backend.Exec(t, fmt.Sprintf("INSERT INTO app.orders VALUES (%d, 99)", last+1))
	x("INSERT INTO orders (v) VALUES (3)") // filled_insert, relayed once

	// Prepared: prepare, two executes (relayed), close (other).
	stmt, err := conn.PrepareContext(ctx, "SELECT v FROM orders WHERE v = ?")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		var v int
		if err := stmt.QueryRowContext(ctx, 20+i).Scan(&v); err != nil {
			t.Fatal(err)
		}
	}
	stmt.Close()

	// Errors: one relayed from the backend, one the proxy's own.
	if _, err := conn.ExecContext(ctx, "SELECT * FROM nosuch"); err == nil {
		t.Fatal("SELECT from a missing table worked")
	}
	if _, err := conn.ExecContext(ctx, "SELECT SETVAL('t', 1000000)"); !strings.Contains(fmt.Sprint(err), "1227") {
		t.Fatalf("SETVAL as a non-admin: %v, want 1227", err)
	}

	// A login refused and one accepted.
	bad := r.clientAs(t, "app", "wrong")
	if err := bad.Ping(); err == nil {
		t.Fatal("wrong password accepted")
	}
	c2, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c2.Close()

	after := scrape(t, url)
	delta := func(sample string) float64 { return after[sample] - before[sample] }
	wantDelta := func(sample string, v float64) {
		t.Helper()
		if _, ok := after[sample]; !ok {
			t.Errorf("%s: not exposed", sample)
		} else if d := delta(sample); d != v {
			t.Errorf("%s moved by %v, want %v", sample, d, v)
		}
	}
	// 3 SELECT 1, 3 NEXTVAL, 4 INSERTs (filled, numbered, duplicate,
	// LOAD DATA), LASTVAL, the missing table, SETVAL.
	wantDelta(`leafproxy_commands_total{command="query"}`, 13)
	wantDelta(`leafproxy_commands_total{command="prepare"}`, 1)
	wantDelta(`leafproxy_commands_total{command="execute"}`, 2)
	wantDelta(`leafproxy_commands_total{command="other"}`, 1)
	wantDelta(`leafproxy_statements_total{kind="nextval"}`, 4)
	wantDelta(`leafproxy_statements_total{kind="filled_insert"}`, 2)
	wantDelta(`leafproxy_statements_total{kind="numbered"}`, 1)
	wantDelta(`leafproxy_statements_total{kind="load_data"}`, 1)
	wantDelta(`leafproxy_ids_issued_total{tag="t"}`, 1+1+10+2+3+2+2)
	wantDelta(`leafproxy_engine_retries_total{reason="duplicate_key"}`, 1)
	wantDelta(`leafproxy_engine_retries_total{reason="numbered_recount"}`, 0)
	wantDelta(`leafproxy_client_errors_total{code="1146"}`, 1)
	wantDelta(`leafproxy_client_errors_total{code="1227"}`, 1)
	wantDelta(`leafproxy_client_errors_total{code="1045"}`, 1)
	wantDelta(`leafproxy_login_failures_total`, 1)
	wantDelta(`leafproxy_login_successes_total`, 1)
	// Relayed: 3 SELECT 1, 4 INSERTs, the missing table, prepare, 2
	// executes. NEXTVAL, LASTVAL and the refused SETVAL never reach the
	// backend; a close has no answer.
	wantDelta(`leafproxy_relay_duration_seconds_count`, 11)
	wantDelta(`leafproxy_nextval_duration_seconds_count`, 4)
	wantDelta(`leafproxy_relay_duration_seconds_bucket{le="+Inf"}`, 11)
	if d := delta(`leafproxy_relay_duration_seconds_sum`); d <= 0 || d > 11*5 {
		t.Errorf("relay durations add up to %vs for 11 commands", d)
	}
	// Buckets are cumulative: each at least the one below it.
	var prev float64
	for _, le := range []string{"1e-05", "2.5e-05", "5e-05", "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "+Inf"} {
		v, ok := after[`leafproxy_relay_duration_seconds_bucket{le="`+le+`"}`]
		if !ok || v < prev {
			t.Errorf("relay bucket le=%s: %v (exposed %v), below the one before (%v)", le, v, ok, prev)
		}
		prev = v
	}

	want(t, after, "leafproxy_backend_up", 1)
	want(t, after, "leafproxy_store_up", 1)
	want(t, after, `leafproxy_build_info{commit="",version="9.9.9-test"}`, 1)
	want(t, after, "leafproxy_config_last_reload_successful", 1)
	for _, s := range []string{"go_goroutines", "process_cpu_seconds_total", "leafproxy_config_last_reload_timestamp_seconds"} {
		if _, ok := after[s]; !ok {
			t.Errorf("%s: not exposed", s)
		}
	}

	// A refused reload shows, and an applied one after it.
	broken := *cfg
	broken.Limits.MaxConnections = -5
	if _, err := r.Svc.Reload(ctx, &broken); err == nil {
		t.Fatal("a configuration without listen was applied")
	}
	m := scrape(t, url)
	want(t, m, "leafproxy_config_last_reload_successful", 0)
	want(t, m, `leafproxy_config_reloads_total{result="refused"}`, 1)
	if _, err := r.Svc.Reload(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	m = scrape(t, url)
	want(t, m, "leafproxy_config_last_reload_successful", 1)
	want(t, m, `leafproxy_config_reloads_total{result="applied"}`, 1)

	// Sessions that end keep their counts in the totals.
	conn.Close()
	db.Close()
	testwait.For(t, "the sessions to end", func() bool {
		m = scrape(t, url)
		return m["leafproxy_client_sessions"] == 0
	})
	for _, s := range []string{`leafproxy_commands_total{command="query"}`, `leafproxy_statements_total{kind="nextval"}`,
		`leafproxy_ids_issued_total{tag="t"}`, `leafproxy_client_errors_total{code="1146"}`, `leafproxy_relay_duration_seconds_count`} {
		if m[s] != after[s] {
			t.Errorf("%s: %v after the sessions ended, %v before", s, m[s], after[s])
		}
	}
}

// clientDB is a go-sql-driver handle through the proxy as app/secret,
// using database name.
func (r *running) clientDB(t *testing.T, name string) *sql.DB {
	t.Helper()
	mc := mysql.NewConfig()
	mc.User, mc.Passwd, mc.Net, mc.Addr, mc.DBName = "app", "secret", "tcp", r.Addr, name
	mc.Timeout = 5 * time.Second
	db, err := sql.Open("mysql", mc.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// clientAs is a go-sql-driver handle through the proxy as user/password.
func (r *running) clientAs(t *testing.T, user, password string) *sql.DB {
	t.Helper()
	mc := mysql.NewConfig()
	mc.User, mc.Passwd, mc.Net, mc.Addr = user, password, "tcp", r.Addr
	mc.Timeout = 5 * time.Second
	db, err := sql.Open("mysql", mc.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
