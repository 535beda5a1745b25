package service_test

import (
	"context"
	"strings"
	"testing"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testdb"
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
