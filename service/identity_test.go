package service_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
	"github.com/leafproxy/leafproxy/service"
)

// TestSnowflakeIdentityThroughOutage: with snowflake.identity, a proxy
// whose store stops answering goes on answering NEXTVAL of a snowflake
// tag through the client long after its lease would have expired (3 TTLs
// here), each ID above the last, never fenced; once the store is back the
// lease is renewed. /status.json names the identity.
func TestSnowflakeIdentityThroughOutage(t *testing.T) {
	backend := testdb.Start(t)
	store := testdb.Start(t)
	cfg := testConfig(backend)
	cfg.Sequences.Tags = map[string]config.Tag{"s": {Generator: "snowflake", Step: 1000}}
	cfg.Sequences.Store = config.StoreList{store.DSN("ids")}
	cfg.Snowflake.WorkerID = "auto"
	cfg.Snowflake.Identity = "proxy-a"
	cfg.Snowflake.StateFile = filepath.Join(t.TempDir(), "state")
	const ttl = 2 * time.Second
	cfg.Snowflake.LeaseTTL = config.Duration(ttl)
	r := startService(t, cfg)
	var st service.Status
	get(t, r.Base+"/status.json", &st)
	if len(st.SnowflakeLayouts) != 1 || st.SnowflakeLayouts[0].Identity != "proxy-a" || st.SnowflakeLayouts[0].Fenced {
		t.Fatalf("snowflake in /status.json: %+v", st.SnowflakeLayouts)
	}

	db := r.client(t)
	next := func() int64 {
		t.Helper()
		var id int64
		if err := db.QueryRow("SELECT NEXTVAL('s')").Scan(&id); err != nil {
			t.Fatalf("NEXTVAL('s'): %v", err)
		}
		return id
	}
	prev := next()
	store.Stop(t)
	stopped := time.Now()
	issued := 0
	testwait.For(t, "NEXTVAL answered 3 lease TTLs into the store outage", func() bool {
		id := next()
		if id <= prev {
			t.Fatalf("ID %d after %d", id, prev)
		}
		prev = id
		issued++
		return time.Since(stopped) > 3*ttl
	})
	m := scrape(t, r.Base+"/metrics")
	want(t, m, "leafproxy_snowflake_fenced", 0)
	t.Logf("%d NEXTVAL answered during %v of store outage (lease TTL %v)", issued, time.Since(stopped).Round(time.Millisecond), ttl)

	store.Restart(t)
	testwait.For(t, "the lease renewed once the store is back", func() bool {
		var st service.Status
		get(t, r.Base+"/status.json", &st)
		if len(st.SnowflakeLayouts) != 1 || st.SnowflakeLayouts[0].LeaseExpires == "" {
			return false
		}
		exp, err := time.Parse(time.RFC3339, st.SnowflakeLayouts[0].LeaseExpires)
		return err == nil && exp.After(time.Now())
	})
	if id := next(); id <= prev {
		t.Fatalf("ID %d after the outage, not above %d", id, prev)
	}
}
