package integration

import (
	"database/sql"
	"strings"
	"testing"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
)

// Admin statements reach the proxy's admin interceptor whatever white space
// and comments an application or a query tool puts before and between
// their words (/* app */, -- x, # x), as the server would read them; an
// executable comment is code for the backend, which then answers.
func TestAdminSQLWithComments(t *testing.T) {
	backend := testdb.Start(t)
	cfg := leafConfig(t, backend, nil)
	cfg.Users = append(cfg.Users, config.User{Name: "ops", Password: "opspw", Admin: true})
	cfg.Sequences.Tags = map[string]config.Tag{"order": {Generator: "segment", Step: 100}}
	lf := startLeaf(t, cfg)
	app := lf.open(t, "", nil)
	ops, err := sql.Open("mysql", "ops:opspw@tcp("+lf.addr+")/")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ops.Close() })

	shows := []string{
		"/* app */ SHOW LEAFPROXY SEQUENCES",
		"-- x\nSHOW LEAFPROXY SEQUENCES",
		"# x\nSHOW LEAFPROXY SEQUENCES",
		"SHOW /* a */ LEAFPROXY -- b\n SEQUENCES; /* done */",
	}
	for _, q := range shows {
		rows := queryMaps(t, ops, q)
		found := false
		for _, r := range rows {
			found = found || r["tag"] == "order" && r["generator"] == "segment"
		}
		if !found {
			t.Errorf("%q: rows %v, want the proxy's row for tag order", q, rows)
		}
		// A non-admin account is refused by the interceptor (1227), not
		// by the backend's parser (1064).
		if _, err := app.Exec(q); err == nil || !strings.Contains(err.Error(), "1227") {
			t.Errorf("%q by a non-admin account: %v, want 1227", q, err)
		}
	}

	if _, err := ops.Exec("/* deploy */ CREATE LEAFPROXY SEQUENCE /* tag */ invoice # step\n STEP 50"); err != nil {
		t.Fatalf("CREATE LEAFPROXY SEQUENCE after comments: %v", err)
	}
	var step int
	if err := backend.Open(t, "leafproxy").QueryRow("SELECT step FROM leaf_alloc WHERE biz_tag = 'invoice'").Scan(&step); err != nil || step != 50 {
		t.Errorf("created tag's step %d, %v; want 50", step, err)
	}
	if _, err := ops.Exec("-- retire\nDROP LEAFPROXY SEQUENCE IF EXISTS invoice"); err != nil {
		t.Fatalf("DROP LEAFPROXY SEQUENCE after a comment: %v", err)
	}
	var n int
	if err := backend.Open(t, "leafproxy").QueryRow("SELECT COUNT(*) FROM leaf_alloc WHERE biz_tag = 'invoice'").Scan(&n); err != nil || n != 0 {
		t.Errorf("dropped tag still has %d rows, %v", n, err)
	}

	// Inside an executable comment the words are the backend's to run: it
	// does not know them (1064).
	if _, err := ops.Exec("/*! SHOW LEAFPROXY SEQUENCES */"); err == nil || !strings.Contains(err.Error(), "1064") {
		t.Errorf("/*! SHOW LEAFPROXY SEQUENCES */: %v, want the backend's 1064", err)
	}
}
