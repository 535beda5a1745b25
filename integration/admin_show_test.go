package integration

import (
	"database/sql"
	"slices"
	"strings"
	"testing"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
)

// SHOW LEAFPROXY SEQUENCES LIKE 'pat' / WHERE expr, as SHOW ... LIKE and
// WHERE work in MariaDB (the backend evaluates them).
func TestAdminShowSequencesFilter(t *testing.T) {
	backend := testdb.Start(t)
	cfg := leafConfig(t, backend, nil)
	cfg.Users = append(cfg.Users, config.User{Name: "ops", Password: "opspw", Admin: true})
	cfg.Sequences.Tags = map[string]config.Tag{"order": {Generator: "segment", Step: 100}, "orders2": {Generator: "segment", Step: 7},
		"msg": {Generator: "snowflake"}}
	cfg.Snowflake.WorkerID = "5"
	lf := startLeaf(t, cfg)
	app := lf.open(t, "", nil)
	ops, _ := sql.Open("mysql", "ops:opspw@tcp("+lf.addr+")/")
	ops.SetMaxOpenConns(1)
	t.Cleanup(func() { ops.Close() })
	var id int64
	for _, q := range []string{"SELECT NEXTVAL('order')", "SELECT NEXTVAL('orders2')", "SELECT NEXTVAL('msg')"} {
		if err := app.QueryRow(q).Scan(&id); err != nil {
			t.Fatal(err)
		}
	}
	tags := func(q string) []string {
		t.Helper()
		var out []string
		for _, r := range queryMaps(t, ops, q) {
			out = append(out, r["tag"])
		}
		return out
	}
	for _, tc := range []struct {
		q    string
		want []string
	}{
		{"SHOW LEAFPROXY SEQUENCES LIKE 'ord%'", []string{"order", "orders2"}},
		{"show leafproxy sequences like 'ORDER'", []string{"order"}},
		{"SHOW LEAFPROXY SEQUENCES LIKE 'ms_';", []string{"msg"}},
		{"SHOW LEAFPROXY SEQUENCES LIKE 'nothing%'", nil},
		{"SHOW LEAFPROXY SEQUENCES LIKE 'order!_%' ESCAPE '!'", nil},
		{"SHOW LEAFPROXY SEQUENCES WHERE generator = 'snowflake'", []string{"msg"}},
		{"SHOW LEAFPROXY SEQUENCES WHERE step < 50 AND generator <> 'snowflake'", []string{"orders2"}},
		{"SHOW LEAFPROXY SEQUENCES WHERE worker_id = 5 OR `tag` IN ('order')", []string{"msg", "order"}},
	} {
		got := tags(tc.q)
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.q, got, tc.want)
		}
	}
	// The session's sql_mode changes nothing about how rows are sent.
	if _, err := ops.Exec("SET SESSION sql_mode = 'ANSI_QUOTES,NO_BACKSLASH_ESCAPES'"); err != nil {
		t.Fatal(err)
	}
	if got := tags("SHOW LEAFPROXY SEQUENCES LIKE 'msg'"); !slices.Equal(got, []string{"msg"}) {
		t.Errorf("under ANSI_QUOTES: %q", got)
	}
	// Errors are the backend's, as for SHOW ... WHERE in MariaDB.
	if _, err := ops.Query("SHOW LEAFPROXY SEQUENCES WHERE nosuch = 1"); err == nil || !strings.Contains(err.Error(), "1054") {
		t.Errorf("unknown column: %v, want 1054", err)
	}
	if _, err := app.Query("SHOW LEAFPROXY SEQUENCES LIKE 'o%'"); err == nil || !strings.Contains(err.Error(), "1227") {
		t.Errorf("non-admin: %v, want 1227", err)
	}
	// The session is usable afterwards.
	if err := ops.QueryRow("SELECT 41 + 1").Scan(&id); err != nil || id != 42 {
		t.Errorf("after the filters: %d, %v", id, err)
	}
}

// SHOW WARNINGS after an admin statement answered with a warning (IF NOT
// EXISTS / IF EXISTS with nothing to do) shows that warning with its text.
func TestAdminWarningsShown(t *testing.T) {
	backend := testdb.Start(t)
	cfg := leafConfig(t, backend, nil)
	cfg.Users = append(cfg.Users, config.User{Name: "ops", Password: "opspw", Admin: true})
	lf := startLeaf(t, cfg)
	ops, _ := sql.Open("mysql", "ops:opspw@tcp("+lf.addr+")/")
	t.Cleanup(func() { ops.Close() })
	conn, err := ops.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	warnings := func() []string {
		t.Helper()
		rows, err := conn.QueryContext(t.Context(), "SHOW WARNINGS")
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
			out = append(out, level+" "+code+" "+msg)
		}
		return out
	}
	for _, tc := range []struct{ q, want string }{
		{"CREATE LEAFPROXY SEQUENCE inv STEP 10", ""},
		{"CREATE LEAFPROXY SEQUENCE IF NOT EXISTS inv", "Warning 1050 Table 'inv' already exists"},
		{"DROP LEAFPROXY SEQUENCE inv", ""},
		{"DROP LEAFPROXY SEQUENCE IF EXISTS inv", "Warning 4091 Unknown SEQUENCE: 'inv'"},
	} {
		if _, err := conn.ExecContext(t.Context(), tc.q); err != nil {
			t.Fatalf("%s: %v", tc.q, err)
		}
		got := strings.Join(warnings(), "; ")
		if tc.want != "" && got != tc.want {
			t.Errorf("SHOW WARNINGS after %s: %q, want %q", tc.q, got, tc.want)
		}
	}
}

// CREATE LEAFPROXY SEQUENCE ... START WITH n: the tag's first ID is n.
func TestAdminCreateStartWith(t *testing.T) {
	backend := testdb.Start(t)
	cfg := leafConfig(t, backend, nil)
	cfg.Users = append(cfg.Users, config.User{Name: "ops", Password: "opspw", Admin: true})
	lf := startLeaf(t, cfg)
	app := lf.open(t, "", nil)
	ops, _ := sql.Open("mysql", "ops:opspw@tcp("+lf.addr+")/")
	t.Cleanup(func() { ops.Close() })
	for _, q := range []string{"CREATE LEAFPROXY SEQUENCE inv START WITH 5000 STEP 10", "CREATE LEAFPROXY SEQUENCE inv2 START 77"} {
		if _, err := ops.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for tag, want := range map[string]int64{"inv": 5000, "inv2": 77} {
		var id int64
		if err := app.QueryRow("SELECT NEXTVAL('" + tag + "')").Scan(&id); err != nil || id != want {
			t.Errorf("first NEXTVAL('%s') = %d, %v; want %d", tag, id, err, want)
		}
	}
	for _, tc := range []struct {
		q    string
		code string
	}{
		{"CREATE LEAFPROXY SEQUENCE bad START WITH 0", "1210"},
		{"CREATE LEAFPROXY SEQUENCE bad CYCLE", "1235"},
		{"CREATE LEAFPROXY SEQUENCE bad START WITH 5 START WITH 6", "1064"},
	} {
		if _, err := ops.Exec(tc.q); err == nil || !strings.Contains(err.Error(), tc.code) {
			t.Errorf("%s: %v, want %s", tc.q, err, tc.code)
		}
	}
}
