package service_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
	"github.com/leafproxy/leafproxy/service"
)

// running is a service serving on loopback: the proxy at Addr, the status
// page, /status.json, /healthz and /metrics at Base.
type running struct {
	Svc  *service.Service
	Addr string
	Base string
	Stop func() // stops the service (also at the test's end); idempotent
}

func startService(t *testing.T, cfg *config.Config) *running {
	t.Helper()
	cfg.DeclareRuleTags()
	if err := service.ValidateConfig(cfg); err != nil {
		t.Fatal(err)
	}
	svc, err := service.New(context.Background(), cfg, nil, service.WithVersion("9.9.9-test"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		svc.Close()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- svc.Serve(context.Background(), l) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			if err := svc.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if err := <-done; err != nil { // Close returns after Serve
				t.Errorf("Serve: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	a := testwait.Value(t, "the status endpoint", func() (net.Addr, bool) { a := svc.MetricsAddr(); return a, a != nil })
	return &running{Svc: svc, Addr: l.Addr().String(), Base: "http://" + a.String(), Stop: stop}
}

func (r *running) client(t *testing.T) *sql.DB {
	t.Helper()
	mc := mysql.NewConfig()
	mc.User, mc.Passwd, mc.Net, mc.Addr = "app", "secret", "tcp", r.Addr
	mc.Timeout = 5 * time.Second
	db, err := sql.Open("mysql", mc.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// get fetches path and decodes its JSON body into v (when not nil).
func get(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if v != nil {
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("GET %s: Content-Type %q: %s", url, ct, b)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("GET %s: %v: %s", url, err, b)
		}
	}
	return resp.StatusCode
}

// healthAfterCache ends the cached health result's life, then asks /healthz.
func healthAfterCache(t *testing.T, r *running) (int, service.Health) {
	t.Helper()
	r.Svc.ExpireHealth()
	var h service.Health
	code := get(t, r.Base+"/healthz", &h)
	return code, h
}

// TestHealthz: 200 while the backend and the store answer, 503 with a JSON
// reason naming what is down while the backend is stopped, 200 again once
// it is back; many concurrent requests share one probe per second.
func TestHealthz(t *testing.T) {
	backend := testdb.Start(t)
	cfg := testConfig(backend)
	r := startService(t, cfg)

	var h service.Health
	if code := get(t, r.Base+"/healthz", &h); code != http.StatusOK || !h.OK || h.Status != "ok" || !h.Backend.OK || !h.Store.OK {
		t.Fatalf("healthz with everything up: %d %+v", code, h)
	}
	if h.Snowflake == nil || !h.Snowflake.OK {
		t.Fatalf("snowflake check: %+v", h.Snowflake)
	}

	// A scrape storm: 100 requests within the cache's second cost at most
	// one more probe.
	r.Svc.ExpireHealth()
	before := r.Svc.HealthProbes()
	stormStart := time.Now()
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {
			resp, err := http.Get(r.Base + "/healthz")
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	// One probe per second of storm (plus one for the second it started in).
	if n, limit := r.Svc.HealthProbes()-before, int64(time.Since(stormStart)/time.Second)+2; n > limit {
		t.Errorf("100 concurrent /healthz in %v ran %d probes, want at most %d", time.Since(stormStart), n, limit)
	}

	backend.Stop(t)
	start := time.Now()
	code, h := healthAfterCache(t, r)
	if code != http.StatusServiceUnavailable || h.OK || h.Status != "unavailable" || h.Backend.OK {
		t.Fatalf("healthz with the backend stopped: %d %+v", code, h)
	}
	if !strings.HasPrefix(h.Reason, "backend: backend.addr: cannot reach the backend "+backend.Addr) {
		t.Errorf("reason %q, want it to name backend.addr and %s", h.Reason, backend.Addr)
	}
	if h.Store.OK || !strings.Contains(h.Store.Error, "backend.addr") {
		t.Errorf("store (on the backend) check: %+v", h.Store)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("healthz took %v with the backend down; probes are bounded", d)
	}

	backend.Restart(t)
	code, h = healthAfterCache(t, r)
	if code != http.StatusOK || !h.OK {
		t.Fatalf("healthz after the backend came back: %d %+v", code, h)
	}
}

// TestHealthzStoreApart: with sequences.store on its own server, the
// store's outage alone makes /healthz 503 naming the store; its database
// was created at start-up like the default one.
func TestHealthzStoreApart(t *testing.T) {
	backend := testdb.Start(t)
	store := testdb.Start(t)
	cfg := testConfig(backend)
	cfg.Sequences.Tags = map[string]config.Tag{"t": {Generator: "segment", Step: 1000}}
	cfg.Sequences.Store = config.StoreList{store.DSN("ids_custom")}
	r := startService(t, cfg)

	db := store.Open(t, "")
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM ids_custom.leaf_alloc WHERE biz_tag = 't'").Scan(&n); err != nil || n != 1 {
		t.Fatalf("custom store database: %d rows, %v", n, err)
	}
	var h service.Health
	if code := get(t, r.Base+"/healthz", &h); code != http.StatusOK || h.Store.Addr != store.Addr+"/ids_custom" {
		t.Fatalf("healthz: %d %+v", code, h)
	}

	store.Stop(t)
	code, h := healthAfterCache(t, r)
	if code != http.StatusServiceUnavailable || !h.Backend.OK || h.Store.OK {
		t.Fatalf("healthz with the store stopped: %d %+v", code, h)
	}
	if !strings.HasPrefix(h.Reason, "store: sequences.store: cannot reach the allocation store "+store.Addr) {
		t.Errorf("reason %q", h.Reason)
	}
	store.Restart(t)
}

// TestLoginRefusedNamesTheKey: a wrong backend password is reported naming
// backend.password, at start-up (a leased snowflake worker cannot be had)
// and by /healthz; a wrong password in sequences.store names that key.
func TestLoginRefusedNamesTheKey(t *testing.T) {
	backend := testdb.Start(t)
	backend.Exec(t, "CREATE USER 'leaf'@'%' IDENTIFIED BY 'right'", "GRANT ALL ON *.* TO 'leaf'@'%'")

	cfg := testConfig(backend)
	cfg.Backend.User, cfg.Backend.Password = "leaf", "wrong"
	cfg.Snowflake.WorkerID = "auto"
	_, err := service.New(context.Background(), cfg, nil)
	if err == nil {
		t.Fatal("New with a refused login and a leased worker id succeeded")
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "backend.password: the backend "+backend.Addr+` refused login as "leaf"`) || !strings.Contains(msg, "Error 1045") {
		t.Errorf("New: %v", err)
	}

	// Without snowflake the proxy starts; /healthz says what to fix.
	cfg = testConfig(backend)
	cfg.Backend.User, cfg.Backend.Password = "leaf", "wrong"
	cfg.Sequences.Tags = nil
	r := startService(t, cfg)
	var h service.Health
	if code := get(t, r.Base+"/healthz", &h); code != http.StatusServiceUnavailable || !strings.Contains(h.Reason, "backend.password") {
		t.Fatalf("healthz with a wrong backend password: %d %+v", code, h)
	}

	mc, _ := mysql.ParseDSN(backend.DSN("ids"))
	mc.User, mc.Passwd = "leaf", "wrong"
	cfg = testConfig(backend)
	cfg.Snowflake.WorkerID = "auto"
	cfg.Sequences.Store = config.StoreList{mc.FormatDSN()}
	_, err = service.New(context.Background(), cfg, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "sequences.store: the allocation store "+backend.Addr+` refused login as "leaf"`) {
		t.Errorf("New with a wrong store password: %v", err)
	}
}

// TestStatusJSON: /status.json reports version, sessions, the store, each
// configured tag (buffer fill once used) and the snowflake worker.
func TestStatusJSON(t *testing.T) {
	backend := testdb.Start(t)
	cfg := testConfig(backend)
	cfg.Tables = []config.Table{{Table: "orders", Column: "id", Tag: "t"}, {Table: "items", Column: "id", Tag: "u"}}
	cfg.ApplyDefaults()
	r := startService(t, cfg)
	db := r.client(t)
	db.SetMaxOpenConns(1)
	for range 100 {
		var id int64
		if err := db.QueryRow("SELECT NEXTVAL('t')").Scan(&id); err != nil {
			t.Fatal(err)
		}
	}
	var st service.Status
	if code := get(t, r.Base+"/status.json", &st); code != http.StatusOK {
		t.Fatalf("status.json: %d", code)
	}
	if st.Version != "9.9.9-test" || st.UptimeSeconds <= 0 || st.Sessions.Current != 1 || st.Sessions.Accepted != 1 {
		t.Errorf("status: %+v", st)
	}
	if st.Store != backend.Addr+"/leafproxy" || st.Backend != backend.Addr || st.Listen != r.Addr || !st.Health.OK {
		t.Errorf("addresses/health: %+v", st)
	}
	tags := map[string]service.TagState{}
	for _, ts := range st.Tags {
		tags[ts.Tag] = ts
	}
	seg := tags["t"].Segment
	if tags["t"].State != "serving" || seg == nil || seg.Remaining != 900 || seg.FillPercent != 90 || seg.Fetches != 1 ||
		seg.LastIssued != seg.Start+99 || seg.End-seg.Start != 1000 || len(tags["t"].Tables) != 1 {
		t.Errorf("tag t: %+v %+v", tags["t"], seg)
	}
	if tags["u"].State != "not used yet" || tags["u"].Segment != nil || tags["u"].Tables[0] != "items" {
		t.Errorf("tag u: %+v", tags["u"])
	}
	if tags["s"].Generator != "snowflake" {
		t.Errorf("tag s: %+v", tags["s"])
	}
	if st.Snowflake == nil || st.Snowflake.WorkerID != 7 || st.Snowflake.Leased || st.Snowflake.Fenced || st.Snowflake.Lost {
		t.Errorf("snowflake: %+v", st.Snowflake)
	}
	// Unknown paths are 404; the page is HTML.
	if code := get(t, r.Base+"/nope", nil); code != http.StatusNotFound {
		t.Errorf("/nope: %d", code)
	}
	resp, err := http.Get(r.Base + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(string(b), "status.json") {
		t.Errorf("/: %s %q", resp.Header.Get("Content-Type"), b[:min(len(b), 200)])
	}
}
