package service_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

// TestLongStoreOutage (opt-in: LEAFPROXY_OUTAGE_MINUTES=10) is the store
// outage of issue 41 at full length and default timings (lease_ttl 30 s):
// the store is stopped for that many minutes while a client asks, ten
// times a second, for a segment tag's NEXTVAL (from its buffered segment)
// and a snowflake tag's (its worker id bound to the proxy's identity).
// Every answer must come, each tag's IDs strictly increasing; then the
// store comes back and both go on.
func TestLongStoreOutage(t *testing.T) {
	minutes, _ := strconv.Atoi(os.Getenv("LEAFPROXY_OUTAGE_MINUTES"))
	if minutes <= 0 {
		t.Skip("set LEAFPROXY_OUTAGE_MINUTES=10 to run a store outage of that many minutes")
	}
	backend := testdb.Start(t)
	store := testdb.Start(t)
	cfg := testConfig(backend)
	cfg.Sequences.Tags = map[string]config.Tag{"t": {Generator: "segment", Step: 100_000}, "s": {Generator: "snowflake", Step: 1000}}
	cfg.Sequences.Store = config.StoreList{store.DSN("ids")}
	cfg.Snowflake.WorkerID = "auto"
	cfg.Snowflake.Identity = "auto"
	cfg.Snowflake.StateFile = filepath.Join(t.TempDir(), "state")
	r := startService(t, cfg)
	db := r.client(t)
	last := map[string]int64{}
	draw := func(tag string) {
		t.Helper()
		var id int64
		if err := db.QueryRow("SELECT NEXTVAL('" + tag + "')").Scan(&id); err != nil {
			t.Fatalf("NEXTVAL('%s') after %d of each: %v", tag, len(last), err)
		}
		if id <= last[tag] {
			t.Fatalf("NEXTVAL('%s') = %d after %d", tag, id, last[tag])
		}
		last[tag] = id
	}
	draw("t")
	draw("s")
	store.Stop(t)
	stopped := time.Now()
	pace := time.NewTicker(100 * time.Millisecond)
	defer pace.Stop()
	n := 0
	for time.Since(stopped) < time.Duration(minutes)*time.Minute {
		<-pace.C
		draw("t")
		draw("s")
		n++
	}
	t.Logf("store down %v: %d NEXTVAL of each tag answered, none refused", time.Since(stopped).Round(time.Second), n)
	m := scrape(t, r.Base+"/metrics")
	want(t, m, "leafproxy_snowflake_fenced", 0)
	store.Restart(t)
	testwait.For(t, "the store answering the proxy again", func() bool {
		m := scrape(t, r.Base+"/metrics")
		return m["leafproxy_store_up"] == 1
	})
	draw("t")
	draw("s")
}
