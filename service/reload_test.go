package service_test

import (
	"context"
	"database/sql"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/service"
)

// TestReloadNamesEveryKey: what a reload does not apply is reported key by
// key with its values (a secret without them), and a changed tag step says
// it is not applied and how to change the row instead.
func TestReloadNamesEveryKey(t *testing.T) {
	backend := testdb.Start(t)
	cfg := testConfig(backend)
	r := startService(t, cfg)
	next := *cfg
	next.Sequences.Tags = maps.Clone(cfg.Sequences.Tags)
	next.Sequences.Tags["t"] = config.Tag{Generator: "segment", Step: 5000}
	next.Limits.MaxConnections = 100
	next.Limits.HandshakeTimeout = config.Duration(3 * time.Second)
	next.Backend.Password = "new-secret"
	changes, err := r.Svc.Reload(context.Background(), &next)
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(changes, "\n")
	for _, w := range []string{
		"limits.max_connections changed (4096 -> 100): needs a restart, not applied",
		"limits.handshake_timeout changed (5s -> 3s): needs a restart, not applied",
		"backend.password changed: needs a restart, not applied",
		"sequences.tags.t.step changed (1000 -> 5000): not applied to the tag",
		"UPDATE leaf_alloc SET step = 5000 WHERE biz_tag = 't'",
	} {
		if !strings.Contains(all, w) {
			t.Errorf("reload report lacks %q:\n%s", w, all)
		}
	}
	if strings.Contains(all, "new-secret") {
		t.Errorf("the report shows a password:\n%s", all)
	}
}

// TestLoginMetrics: wrong passwords and the throttle's refusals are counted
// in /metrics.
func TestLoginMetrics(t *testing.T) {
	backend := testdb.Start(t)
	cfg := testConfig(backend)
	cfg.Limits.LoginFailures = 3
	cfg.Limits.LoginFailureInterval = config.Duration(time.Minute)
	r := startService(t, cfg)
	for range 5 {
		db, _ := sql.Open("mysql", "app:wrong@tcp("+r.Addr+")/")
		err := db.Ping()
		db.Close()
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1045 && me.Number != 1129 {
			t.Fatalf("wrong password: %v", err)
		}
	}
	m := scrape(t, r.Base+"/metrics")
	want(t, m, "leafproxy_login_failures_total", 3)
	want(t, m, "leafproxy_login_throttled_total", 2)
	want(t, m, "leafproxy_login_blocked_hosts", 1)
	want(t, m, "leafproxy_handshakes_dropped_total", 0)
	want(t, m, `leafproxy_handshakes_pending{state="under_way"}`, 0)
	want(t, m, `leafproxy_handshakes_pending{state="silent"}`, 0)
}

// TestStatusShowsReloadedRules: a table rule and a tag added by a reload
// (SIGHUP) are on /status.json (what the status page shows) as on a proxy
// started with them, and their tag's series on /metrics once it is used.
func TestStatusShowsReloadedRules(t *testing.T) {
	backend := testdb.Start(t)
	backend.Exec(t, "CREATE DATABASE IF NOT EXISTS app", "CREATE TABLE IF NOT EXISTS app.invoices (id BIGINT PRIMARY KEY, note TEXT)")
	cfg := testConfig(backend)
	r := startService(t, cfg)
	tagsOf := func() map[string][]string {
		var st service.Status
		if code := get(t, r.Base+"/status.json", &st); code != 200 {
			t.Fatalf("/status.json: %d", code)
		}
		out := map[string][]string{}
		for _, ts := range st.Tags {
			out[ts.Tag] = ts.Tables
		}
		return out
	}
	if _, ok := tagsOf()["invoice"]; ok {
		t.Fatal("tag invoice listed before the reload")
	}
	next := *cfg
	next.Sequences.Tags = maps.Clone(cfg.Sequences.Tags)
	next.Sequences.Tags["invoice"] = config.Tag{Generator: "segment", Step: 1000}
	next.Tables = append(slices.Clone(cfg.Tables), config.Table{Table: "app.invoices", Column: "id", Tag: "invoice"})
	if _, err := r.Svc.Reload(context.Background(), &next); err != nil {
		t.Fatal(err)
	}
	got := tagsOf()
	if tables, ok := got["invoice"]; !ok || !slices.Equal(tables, []string{"app.invoices"}) {
		t.Fatalf("after the reload /status.json lists tag invoice with tables %v (listed: %v), want [app.invoices]", tables, ok)
	}
	db := r.client(t)
	if _, err := db.Exec("INSERT INTO app.invoices (note) VALUES ('x')"); err != nil {
		t.Fatalf("insert through the reloaded rule: %v", err)
	}
	m := scrape(t, r.Base+"/metrics")
	want(t, m, `leafproxy_segment_fetches_total{tag="invoice"}`, 1)
}
