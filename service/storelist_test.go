package service_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/service"
)

// TestStoreListFailover: with sequences.store a list of two nodes, the
// proxy uses the first; with it stopped, a block request (a fetch of its
// own) is served from the second, and /metrics and /status.json say the
// second is in use and one failover happened. The two servers stand in
// for a replicated store: the second gets the first's leaf_alloc row
// before the first stops, as Galera would have it.
func TestStoreListFailover(t *testing.T) {
	backend := testdb.Start(t)
	a, b := testdb.Start(t), testdb.Start(t)
	cfg := testConfig(backend)
	cfg.Sequences.Tags = map[string]config.Tag{"t": {Generator: "segment", Step: 1000}}
	cfg.Sequences.WaitTimeout = config.Duration(20 * time.Second)
	cfg.Sequences.Store = config.StoreList{a.DSN("ids"), b.DSN("ids")}
	r := startService(t, cfg)
	m := scrape(t, r.Base+"/metrics")
	want(t, m, `leafproxy_store_node_in_use{addr="`+a.Addr+`",position="0"}`, 1)
	want(t, m, `leafproxy_store_node_in_use{addr="`+b.Addr+`",position="1"}`, 0)

	db := r.client(t)
	var first int64
	if err := db.QueryRow("SELECT NEXTVAL('t')").Scan(&first); err != nil {
		t.Fatal(err)
	}
	// The second node as a synchronous replica would be: the same row.
	bcfg := testConfig(backend)
	bcfg.Sequences.Tags = cfg.Sequences.Tags
	bcfg.Sequences.Store = config.StoreList{b.DSN("ids")}
	if err := service.InitStore(context.Background(), bcfg, nil); err != nil {
		t.Fatal(err)
	}
	var maxID int64
	if err := a.Open(t, "ids").QueryRow("SELECT max_id FROM leaf_alloc WHERE biz_tag = 't'").Scan(&maxID); err != nil {
		t.Fatal(err)
	}
	b.Exec(t, "UPDATE ids.leaf_alloc SET max_id = "+strconv.FormatInt(maxID, 10)+" WHERE biz_tag = 't'")
	a.Stop(t)

	var block int64
	if err := db.QueryRow("SELECT NEXTVAL('t', 5000)").Scan(&block); err != nil {
		t.Fatalf("block request with the first node stopped: %v", err)
	}
	if block < maxID {
		t.Fatalf("block at %d, below the max_id %d the first node had handed out", block, maxID)
	}
	m = scrape(t, r.Base+"/metrics")
	want(t, m, `leafproxy_store_node_in_use{addr="`+a.Addr+`",position="0"}`, 0)
	want(t, m, `leafproxy_store_node_in_use{addr="`+b.Addr+`",position="1"}`, 1)
	want(t, m, "leafproxy_store_failovers_total", 1)
	var st service.Status
	get(t, r.Base+"/status.json", &st)
	if st.Store != b.Addr+"/ids" {
		t.Fatalf("/status.json store %q, want the node in use %s/ids", st.Store, b.Addr)
	}
	a.Restart(t)
}
