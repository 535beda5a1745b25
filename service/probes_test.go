package service_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/service"
)

// probeAfterCache ends the cached health result's life, then asks path
// (/livez or /readyz).
func probeAfterCache(t *testing.T, r *running, path string) (int, service.Probe) {
	t.Helper()
	r.Svc.ExpireHealth()
	var p service.Probe
	code := get(t, r.Base+path, &p)
	return code, p
}

// TestLivezReadyz: /livez stays 200 through a store outage (no reason to
// restart); /readyz is 503 while the store is down and nothing is
// buffered, 200 while buffered IDs are served through the outage (and
// NEXTVAL answers from them), and not ready once the proxy shuts down.
func TestLivezReadyz(t *testing.T) {
	backend := testdb.Start(t)
	store := testdb.Start(t)
	cfg := testConfig(backend)
	cfg.Sequences.Tags = map[string]config.Tag{"t": {Generator: "segment", Step: 1000}}
	cfg.Sequences.Store = config.StoreList{store.DSN("ids")}
	r := startService(t, cfg)

	for _, path := range []string{"/livez", "/readyz"} {
		if code, p := probeAfterCache(t, r, path); code != http.StatusOK || !p.OK || p.Status != "ok" {
			t.Fatalf("%s with everything up: %d %+v", path, code, p)
		}
	}

	store.Stop(t)
	if code, p := probeAfterCache(t, r, "/readyz"); code != http.StatusServiceUnavailable || p.OK || p.Status != "not_ready" ||
		!strings.HasPrefix(p.Reason, "store: sequences.store: cannot reach") || p.Health == nil || p.Health.Store.OK {
		t.Fatalf("/readyz with the store down and nothing buffered: %d %+v", code, p)
	}
	if code, p := probeAfterCache(t, r, "/livez"); code != http.StatusOK || !p.OK {
		t.Fatalf("/livez with the store down: %d %+v", code, p)
	}
	store.Restart(t)

	db := r.client(t)
	var first int64
	if err := db.QueryRow("SELECT NEXTVAL('t')").Scan(&first); err != nil {
		t.Fatal(err)
	}
	store.Stop(t)
	defer store.Restart(t)
	if code, h := healthAfterCache(t, r); code != http.StatusServiceUnavailable || h.Store.OK {
		t.Fatalf("/healthz with the store down: %d %+v", code, h)
	}
	for _, path := range []string{"/livez", "/readyz"} {
		if code, p := probeAfterCache(t, r, path); code != http.StatusOK || !p.OK {
			t.Fatalf("%s with the store down and IDs buffered: %d %+v", path, code, p)
		}
	}
	var next int64
	if err := db.QueryRow("SELECT NEXTVAL('t')").Scan(&next); err != nil || next != first+1 {
		t.Fatalf("NEXTVAL from the buffer with the store down: %d, %v; want %d", next, err, first+1)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r.Svc.Proxy.Shutdown(ctx)
	if p := r.Svc.Ready(ctx); p.OK || !strings.HasPrefix(p.Reason, "shutting down") {
		t.Fatalf("Ready after Shutdown: %+v", p)
	}
}
