package service_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
	"github.com/leafproxy/leafproxy/service"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// testConfig is a proxy in front of backend with account app/secret, segment
// tag t (step 1000) and snowflake tag s on fixed worker 7, metrics on a free
// loopback port.
func testConfig(backend *testdb.Server) *config.Config {
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.Backend.Addr = backend.Addr
	cfg.Users = []config.User{{Name: "app", Password: "secret"}}
	cfg.Sequences.WaitTimeout = config.Duration(time.Second)
	cfg.Sequences.Tags = map[string]config.Tag{"t": {Generator: "segment"}, "s": {Generator: "snowflake"}}
	cfg.Snowflake.WorkerID = "7"
	cfg.Shutdown.Grace = config.Duration(2 * time.Second)
	cfg.Log.Level = "warn"
	cfg.Metrics.Listen = "127.0.0.1:0"
	cfg.ApplyDefaults()
	return cfg
}

func TestMetricsEndpoint(t *testing.T) {
	backend := testdb.Start(t)
	cfg := testConfig(backend)
	r := startService(t, cfg)
	svc, url := r.Svc, r.Base+"/metrics"

	// Before any client: no tag series yet, no sessions.
	m := scrape(t, url)
	if _, ok := m[`leafproxy_segment_fetches_total{tag="t"}`]; ok {
		t.Errorf("tag t reported before it was used")
	}
	want(t, m, "leafproxy_client_sessions", 0)
	want(t, m, "leafproxy_client_sessions_accepted_total", 0)
	want(t, m, "leafproxy_snowflake_worker_id", 7)
	want(t, m, "leafproxy_snowflake_fenced", 0)
	want(t, m, "leafproxy_snowflake_lease_lost", 0)

	db := r.client(t)
	db.SetMaxOpenConns(1)
	var last int64
	for i := range 5 {
		var id int64
		if err := db.QueryRow("SELECT NEXTVAL('t')").Scan(&id); err != nil {
			t.Fatal(err)
		}
		if i > 0 && id != last+1 {
			t.Fatalf("NEXTVAL: %d after %d", id, last)
		}
		last = id
	}

	// 5 of 1000 IDs used: one fetch, below the 10% prefetch mark.
	m = scrape(t, url)
	want(t, m, `leafproxy_segment_fetches_total{tag="t"}`, 1)
	want(t, m, `leafproxy_segment_fetch_errors_total{tag="t"}`, 0)
	want(t, m, `leafproxy_segment_refused_total{tag="t"}`, 0)
	want(t, m, `leafproxy_segment_repairs_total{tag="t"}`, 0)
	want(t, m, `leafproxy_segment_step{tag="t"}`, 1000)
	want(t, m, `leafproxy_segment_next_ready{tag="t"}`, 0)
	st, _ := svc.Sequences.Segments().Stats("t")
	want(t, m, `leafproxy_segment_remaining_ids{tag="t"}`, float64(st.Current.End-last-1))
	want(t, m, "leafproxy_client_sessions", 1)
	want(t, m, "leafproxy_client_sessions_accepted_total", 1)
	// The session moved onto an event loop after login; its first NEXTVAL
	// had to wait for the tag's first segment, so the loop handed it to the
	// session's goroutine (which keeps it for a few commands); the others
	// did not wait.
	want(t, m, "leafproxy_event_loops", float64(runtime.GOMAXPROCS(0)))
	want(t, m, "leafproxy_event_loop_moves_total", 1)
	want(t, m, "leafproxy_event_loop_handoffs_total", 1)

	// The client leaves: the session gauge drops, the total stays.
	db.Close()
	testwait.For(t, "the session gauge to drop", func() bool {
		m = scrape(t, url)
		return m["leafproxy_client_sessions"] == 0
	})
	want(t, m, "leafproxy_client_sessions", 0)
	want(t, m, "leafproxy_client_sessions_accepted_total", 1)

	// Stopping the service stops the endpoint.
	r.Stop()
	if resp, err := http.Get(url); err == nil {
		resp.Body.Close()
		t.Errorf("metrics still served after shutdown")
	}
}

func TestMetricsListenBusy(t *testing.T) {
	backend := testdb.Start(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	cfg := testConfig(backend)
	cfg.Sequences.Tags = nil
	cfg.Metrics.Listen = busy.Addr().String()
	svc, err := service.New(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- svc.Serve(context.Background(), l) }()
	select {
	case err = <-errc:
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not fail on a busy metrics.listen")
	}
	if err == nil || !strings.Contains(err.Error(), "metrics.listen") || !strings.Contains(err.Error(), busy.Addr().String()) {
		t.Fatalf("err = %v, want it to name metrics.listen and %s", err, busy.Addr())
	}
}

// scrape fetches the text exposition and returns each sample (name with its
// labels as printed) and value.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s: %s", url, resp.Status, b)
	}
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if i < 0 || err != nil {
			t.Fatalf("bad sample line %q", line)
		}
		m[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}

func want(t *testing.T, m map[string]float64, sample string, v float64) {
	t.Helper()
	got, ok := m[sample]
	if !ok {
		t.Errorf("%s: not exposed", sample)
	} else if got != v {
		t.Errorf("%s = %v, want %v", sample, got, v)
	}
}
