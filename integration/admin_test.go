package integration

import (
	"database/sql"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
)

// queryMaps runs q and returns its rows as column -> value ("NULL" for NULL).
func queryMaps(t *testing.T, db *sql.DB, q string) []map[string]string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []map[string]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for i, c := range cols {
			m[c] = "NULL"
			if vals[i].Valid {
				m[c] = vals[i].String
			}
		}
		out = append(out, m)
	}
	return out
}

// The admin SQL: SHOW LEAFPROXY SEQUENCES / SESSIONS, CREATE LEAFPROXY
// SEQUENCE, for admin accounts only.
func TestAdminSQL(t *testing.T) {
	backend := testdb.Start(t)
	cfg := leafConfig(t, backend, nil)
	cfg.Users = append(cfg.Users, config.User{Name: "ops", Password: "opspw", Admin: true})
	cfg.Sequences.Tags = map[string]config.Tag{"order": {Generator: "segment", Step: 100}, "msg": {Generator: "snowflake"}}
	cfg.Snowflake.WorkerID = "5"
	lf := startLeaf(t, cfg)
	app := lf.open(t, "", nil)
	ops, _ := sql.Open("mysql", "ops:opspw@tcp("+lf.addr+")/")
	t.Cleanup(func() { ops.Close() })

	for _, q := range []string{"SHOW LEAFPROXY SEQUENCES", "SHOW LEAFPROXY SESSIONS", "CREATE LEAFPROXY SEQUENCE x"} {
		if _, err := app.Exec(q); err == nil || !strings.Contains(err.Error(), "1227") {
			t.Errorf("%s by a non-admin account: %v, want 1227", q, err)
		}
	}

	var last int64
	for range 5 {
		if err := app.QueryRow("SELECT NEXTVAL('order')").Scan(&last); err != nil {
			t.Fatal(err)
		}
	}
	var snow int64
	if err := app.QueryRow("SELECT NEXTVAL('msg')").Scan(&snow); err != nil {
		t.Fatal(err)
	}
	seqs := queryMaps(t, ops, "SHOW LEAFPROXY SEQUENCES")
	byTag := map[string]map[string]string{}
	for _, r := range seqs {
		byTag[r["tag"]] = r
	}
	o := byTag["order"]
	if o == nil || o["generator"] != "segment" || o["last_value"] != strconv.FormatInt(last, 10) ||
		o["next_value"] != strconv.FormatInt(last+1, 10) || o["buffered"] == "0" {
		t.Errorf("order row %v, want last_value %d, next_value %d, IDs buffered", o, last, last+1)
	}
	if mx, _ := strconv.ParseInt(o["store_max_id"], 10, 64); mx <= last {
		t.Errorf("store_max_id %s, want above the last value %d", o["store_max_id"], last)
	}
	if m := byTag["msg"]; m == nil || m["generator"] != "snowflake" || m["worker_id"] != "5" || m["fenced"] != "NO" || m["lease_expires"] == "NULL" {
		t.Errorf("msg row %v, want snowflake, worker 5 with its lease expiry, not fenced", m)
	}

	if _, err := ops.Exec("CREATE LEAFPROXY SEQUENCE invoice STEP 50"); err != nil {
		t.Fatalf("CREATE LEAFPROXY SEQUENCE: %v", err)
	}
	if _, err := ops.Exec("CREATE LEAFPROXY SEQUENCE invoice"); err == nil || !strings.Contains(err.Error(), "1050") {
		t.Errorf("creating it again: %v, want 1050", err)
	}
	if _, err := ops.Exec("CREATE LEAFPROXY SEQUENCE IF NOT EXISTS invoice"); err != nil {
		t.Errorf("IF NOT EXISTS: %v", err)
	}
	var inv int64
	if err := app.QueryRow("SELECT NEXTVAL('invoice')").Scan(&inv); err != nil || inv != 1 {
		t.Errorf("NEXTVAL of the created tag: %d, %v; want 1", inv, err)
	}
	var step int
	if err := backend.Open(t, "leafproxy").QueryRow("SELECT step FROM leaf_alloc WHERE biz_tag = 'invoice'").Scan(&step); err != nil || step != 50 {
		t.Errorf("created tag's step %d, %v; want 50", step, err)
	}

	conn, err := ops.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var tid string
	if err := conn.QueryRowContext(t.Context(), "SELECT CONNECTION_ID()").Scan(&tid); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.QueryContext(t.Context(), "SHOW LEAFPROXY SESSIONS")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for rows.Next() {
		var id, thread, user, host, command, secs string
		var db sql.NullString
		if err := rows.Scan(&id, &thread, &user, &host, &db, &command, &secs); err != nil {
			t.Fatal(err)
		}
		if thread == tid {
			found = user == "ops" && command == "Query"
		}
	}
	rows.Close()
	if !found {
		t.Error("SHOW LEAFPROXY SESSIONS does not list the asking session (user ops, its backend thread, Query)")
	}

	// The mariadb CLI, as an operator would use it.
	cli, err := exec.LookPath("mariadb")
	if err != nil {
		t.Skip("mariadb CLI not installed")
	}
	host, port, _ := net.SplitHostPort(lf.addr)
	out, err := exec.Command(cli, "-h"+host, "-P"+port, "-uops", "-popspw", "--table", "-e", "SHOW LEAFPROXY SEQUENCES").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "store_max_id") || !strings.Contains(string(out), "invoice") {
		t.Fatalf("mariadb CLI: %v\n%s", err, out)
	}
	t.Logf("mariadb CLI:\n%s", out)
}
