package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/allocator/schema"
	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testdb"
	"github.com/leafproxy/leafproxy/service"
)

// Issue 9: no ID twice, whatever happens to workers and the store. Every
// test here draws IDs through several proxies from many connections and
// stores them in a table without a unique key (nodup.ids on the backend),
// then counts duplicates in the database.

// idTable creates nodup.ids on backend (duplicates allowed, so they can be
// counted).
func idTable(t *testing.T, backend *testdb.Server) {
	t.Helper()
	backend.Exec(t, "CREATE DATABASE IF NOT EXISTS nodup",
		"CREATE TABLE IF NOT EXISTS nodup.ids (id BIGINT NOT NULL, p INT NOT NULL, KEY (id))")
}

// countIDs returns the rows stored and how many of them repeat an id.
func countIDs(t *testing.T, backend *testdb.Server) (rows, dups int64) {
	t.Helper()
	db := backend.Open(t, "nodup")
	if err := db.QueryRow("SELECT COUNT(*), COUNT(*) - COUNT(DISTINCT id) FROM ids").Scan(&rows, &dups); err != nil {
		t.Fatal(err)
	}
	return rows, dups
}

// loadResult is what an idLoad did.
type loadResult struct {
	ok, failed atomic.Int64
	start      time.Time
	lastOK     atomic.Int64 // unix ns of the latest success
	gap        atomic.Int64 // longest time between two successes, ns
	mu         sync.Mutex
	errs       map[string]int // error text -> count
}

func (r *loadResult) success() {
	r.ok.Add(1)
	now := time.Now().UnixNano()
	if d := now - r.lastOK.Swap(now); d > r.gap.Load() {
		r.gap.Store(d) // racy max, good enough for a measurement
	}
}

// maxGap is the longest time no statement succeeded.
func (r *loadResult) maxGap() time.Duration {
	return time.Duration(r.gap.Load()).Round(time.Millisecond)
}

func (r *loadResult) fail(err error) {
	r.failed.Add(1)
	msg := err.Error()
	if len(msg) > 160 {
		msg = msg[:160]
	}
	r.mu.Lock()
	if r.errs == nil {
		r.errs = map[string]int{}
	}
	r.errs[msg]++
	r.mu.Unlock()
}

func (r *loadResult) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := fmt.Sprintf("%d inserted, %d failed", r.ok.Load(), r.failed.Load())
	n := 0
	for e, c := range r.errs {
		if n++; n > 5 {
			break
		}
		s += fmt.Sprintf("\n    %dx %s", c, e)
	}
	return s
}

// idLoad runs conns connections spread over the proxies, each inserting
// NEXTVAL(tag) into nodup.ids, until stop is closed. Failed statements
// are counted and the connection goes on (outages are expected).
func idLoad(t *testing.T, leaves []*leaf, tag string, conns int, stop <-chan struct{}) (*loadResult, func()) {
	t.Helper()
	res := &loadResult{start: time.Now()}
	res.lastOK.Store(res.start.UnixNano())
	var wg sync.WaitGroup
	for c := range conns {
		p := c % len(leaves)
		db := leaves[p].open(t, "nodup", nil)
		db.SetMaxOpenConns(1)
		q := fmt.Sprintf("INSERT INTO ids (id, p) VALUES (NEXTVAL('%s'), %d)", tag, p)
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, err := db.ExecContext(ctx, q)
				cancel()
				if err != nil {
					res.fail(err)
					time.Sleep(5 * time.Millisecond)
					continue
				}
				res.success()
			}
		})
	}
	return res, wg.Wait
}

// runLoad runs idLoad for d and waits for it.
func runLoad(t *testing.T, leaves []*leaf, tag string, conns int, d time.Duration) *loadResult {
	t.Helper()
	stop := make(chan struct{})
	res, wait := idLoad(t, leaves, tag, conns, stop)
	time.Sleep(d)
	close(stop)
	wait()
	return res
}

// assertNoDuplicates counts the stored ids: at least min rows, no repeat.
func assertNoDuplicates(t *testing.T, backend *testdb.Server, min int64) {
	t.Helper()
	rows, dups := countIDs(t, backend)
	t.Logf("nodup.ids: %d rows, %d duplicates", rows, dups)
	if dups != 0 {
		t.Errorf("%d duplicate ids stored (of %d rows)", dups, rows)
	}
	if rows < min {
		t.Errorf("only %d rows stored, want at least %d", rows, min)
	}
}

// newLeaf is service.New + Serve without failing the test on a start error.
func newLeaf(t *testing.T, cfg *config.Config) (*leaf, error) {
	t.Helper()
	cfg.ApplyDefaults()
	cfg.DeclareRuleTags()
	if err := service.ValidateConfig(cfg); err != nil {
		t.Fatalf("config: %v", err)
	}
	svc, err := service.New(context.Background(), cfg, testLogger())
	if err != nil {
		return nil, err
	}
	return serveLeaf(t, cfg, svc), nil
}

func snowConfig(t *testing.T, backend, store *testdb.Server, worker string) *config.Config {
	cfg := leafConfig(t, backend, store)
	cfg.Sequences.Tags = map[string]config.Tag{"s": {Generator: "snowflake"}, "t": {Generator: "segment", Step: 100}}
	cfg.Snowflake.WorkerID = worker
	return cfg
}

// TestSnowflakeFixedWorkerIDsCoordinated (issue 9, item 4): two proxies
// configured with worker_id 7 used to issue the same IDs (6,487 duplicates
// in 10 s). The fixed id is now registered in leaf_worker: the second
// proxy refuses to start, naming the holder's host, pid and lease expiry;
// so does a proxy whose fixed id an auto proxy leased. The proxies that do
// run issue no duplicate.
func TestSnowflakeFixedWorkerIDsCoordinated(t *testing.T) {
	t.Parallel() // waits more than it works; own servers or own tables
	backend := testdb.Start(t)
	store := testdb.Start(t)
	idTable(t, backend)
	host, _ := os.Hostname()

	a := startLeaf(t, snowConfig(t, backend, store, "7"))
	if w := a.svc.Sequences.Snowflake().Worker(); w != 7 {
		t.Fatalf("proxy a: worker %d", w)
	}
	for _, worker := range []string{"7"} {
		_, err := newLeaf(t, snowConfig(t, backend, store, worker))
		if err == nil {
			t.Fatalf("a second proxy with worker_id %s started", worker)
		}
		for _, want := range []string{"worker id " + worker, "host " + host, "pid " + strconv.Itoa(os.Getpid()), "expires at"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("refusal %q does not say %q", err, want)
			}
		}
		t.Logf("second worker_id %s refused: %v", worker, err)
	}
	c := startLeaf(t, snowConfig(t, backend, store, "auto"))
	if w := c.svc.Sequences.Snowflake().Worker(); w != 0 {
		t.Fatalf("auto proxy: worker %d, want 0", w)
	}
	if _, err := newLeaf(t, snowConfig(t, backend, store, "0")); err == nil || !strings.Contains(err.Error(), "worker id 0 is held by") {
		t.Fatalf("fixed worker_id 0 while an auto proxy leased it: %v", err)
	}
	e := startLeaf(t, snowConfig(t, backend, store, "8"))

	res := runLoad(t, []*leaf{a, c, e}, "s", 24, 3*time.Second)
	t.Log(res)
	if res.failed.Load() != 0 {
		t.Errorf("failed inserts: %v", res)
	}
	assertNoDuplicates(t, backend, 1000)

	// A clean stop releases the id at once: a new proxy may take 7.
	a.stop()
	again := startLeaf(t, snowConfig(t, backend, store, "7"))
	if w := again.svc.Sequences.Snowflake().Worker(); w != 7 {
		t.Fatalf("after release: worker %d", w)
	}
}

// TestSnowflakeBadWorkerRowSkipped (issue 9, item 5): one free leaf_worker
// row whose last_timestamp is 60 s in the future used to make every auto
// proxy take it, refuse ("clock ... behind") and exit. They now pass it
// over and take the next free ids.
func TestSnowflakeBadWorkerRowSkipped(t *testing.T) {
	t.Parallel() // waits more than it works; own servers or own tables
	backend := testdb.Start(t)
	store := testdb.Start(t)
	idTable(t, backend)
	sdb := store.Open(t, "leafstore")
	if err := schema.Ensure(context.Background(), sdb); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Minute).UnixMilli()
	if _, err := sdb.Exec("INSERT INTO leaf_worker (worker_id, owner, heartbeat, last_timestamp) VALUES (0, '', 0, ?)", future); err != nil {
		t.Fatal(err)
	}
	var leaves []*leaf
	seen := map[int64]bool{}
	for i := range 3 {
		lf, err := newLeaf(t, snowConfig(t, backend, store, "auto"))
		if err != nil {
			t.Fatalf("proxy %d did not start: %v", i, err)
		}
		w := lf.svc.Sequences.Snowflake().Worker()
		if w == 0 || seen[w] {
			t.Fatalf("proxy %d: worker %d", i, w)
		}
		seen[w] = true
		leaves = append(leaves, lf)
	}
	res := runLoad(t, leaves, "s", 24, 2*time.Second)
	t.Log(res)
	if res.failed.Load() != 0 {
		t.Errorf("failed inserts: %v", res)
	}
	assertNoDuplicates(t, backend, 1000)
	var ts int64
	var owner string
	sdb.QueryRow("SELECT owner, last_timestamp FROM leaf_worker WHERE worker_id = 0").Scan(&owner, &ts)
	if owner != "" || ts != future {
		t.Errorf("bad row changed: owner %q last_timestamp %d", owner, ts)
	}
}

// TestStartWithStoreDown (issue 9, item 6): a proxy with a snowflake tag
// used to exit 1 when the store was down at start, so relay traffic, which
// needs no store, was down too. It now starts, relays, answers snowflake
// tags with a clear error naming the tag until a worker id is leased in
// the background, and serves every tag once the store is back.
func TestStartWithStoreDown(t *testing.T) {
	t.Parallel() // waits more than it works; own servers or own tables
	backend := testdb.Start(t)
	store := testdb.Start(t)
	idTable(t, backend)
	store.Exec(t, "CREATE DATABASE IF NOT EXISTS leafstore")
	store.Stop(t)

	var leaves []*leaf
	for i, worker := range []string{"auto", "3"} {
		cfg := snowConfig(t, backend, nil, worker)
		cfg.Sequences.Store = store.DSN("leafstore")
		cfg.Backend.ConnectTimeout = config.Duration(time.Second)
		t0 := time.Now()
		lf, err := newLeaf(t, cfg)
		if err != nil {
			t.Fatalf("proxy %d (worker_id %s) did not start with the store down: %v", i, worker, err)
		}
		if d := time.Since(t0); d > 5*time.Second {
			t.Errorf("start took %v", d)
		}
		leaves = append(leaves, lf)
	}
	db := leaves[0].open(t, "nodup", nil)
	var one int
	if err := db.QueryRow("SELECT 1").Scan(&one); err != nil {
		t.Fatalf("relay with the store down: %v", err)
	}
	if _, err := db.Exec("INSERT INTO ids (id, p) VALUES (-1, -1)"); err != nil {
		t.Fatalf("relayed insert with the store down: %v", err)
	}
	var v int64
	err := db.QueryRow("SELECT NEXTVAL('s')").Scan(&v)
	if code, state := myErr(err); code != 1105 || state != "HY000" || !strings.Contains(err.Error(), "'s'") || !strings.Contains(err.Error(), "fenced") {
		t.Fatalf("NEXTVAL('s') with no lease: %v (code %d %s)", err, code, state)
	}
	t.Logf("snowflake tag while the store is down: %v", err)
	if err := db.QueryRow("SELECT NEXTVAL('t')").Scan(&v); err == nil || !strings.Contains(err.Error(), `"t"`) {
		t.Fatalf("NEXTVAL('t') with the store down: %v", err)
	}
	if pending, _ := leaves[1].svc.Sequences.SnowflakePending(); !pending {
		t.Fatal("no lease pending")
	}

	store.Restart(t)
	deadline := time.Now().Add(20 * time.Second)
	for _, lf := range leaves {
		for lf.svc.Sequences.Snowflake() == nil {
			if time.Now().After(deadline) {
				_, err := lf.svc.Sequences.SnowflakePending()
				t.Fatalf("no worker id 20 s after the store came back: %v", err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if w := leaves[1].svc.Sequences.Snowflake().Worker(); w != 3 {
		t.Errorf("fixed proxy got worker %d", w)
	}
	if w := leaves[0].svc.Sequences.Snowflake().Worker(); w == 3 {
		t.Errorf("auto proxy got the fixed proxy's worker 3")
	}
	backend.Exec(t, "DELETE FROM nodup.ids")
	for _, tag := range []string{"s", "t"} {
		res := runLoad(t, leaves, tag, 16, time.Second)
		t.Logf("%s: %v", tag, res)
		if res.failed.Load() != 0 {
			t.Errorf("tag %s: failures after the store came back: %v", tag, res)
		}
	}
	assertNoDuplicates(t, backend, 500)
}

// TestStartWithStoreStalled (issue 9, item 6): a store that accepts
// connections and never answers used to hold the proxy before it listened,
// for ever. The start is now bounded by backend.connect_timeout; relay
// works, snowflake tags are fenced, and once the store answers again the
// proxy leases a worker id by itself.
func TestStartWithStoreStalled(t *testing.T) {
	t.Parallel() // waits more than it works; own servers or own tables
	backend := testdb.Start(t)
	store := testdb.Start(t)
	idTable(t, backend)
	store.Exec(t, "CREATE DATABASE IF NOT EXISTS leafstore")
	fw := testdb.NewForwarder(t, "")
	cfg := snowConfig(t, backend, nil, "auto")
	cfg.Sequences.Store = strings.Replace(store.DSN("leafstore"), store.Addr, fw.Addr, 1)
	cfg.Backend.ConnectTimeout = config.Duration(time.Second)
	t0 := time.Now()
	lf, err := newLeaf(t, cfg)
	if err != nil {
		t.Fatalf("did not start with a stalled store: %v", err)
	}
	if d := time.Since(t0); d > 4*time.Second {
		t.Errorf("start took %v with connect_timeout 1s", d)
	}
	t.Logf("started in %v with a stalled store", time.Since(t0).Round(time.Millisecond))
	db := lf.open(t, "nodup", nil)
	var one int
	if err := db.QueryRow("SELECT 1").Scan(&one); err != nil {
		t.Fatalf("relay with a stalled store: %v", err)
	}
	var v int64
	err = db.QueryRow("SELECT NEXTVAL('s')").Scan(&v)
	if code, _ := myErr(err); code != 1105 || !strings.Contains(err.Error(), "'s'") {
		t.Fatalf("NEXTVAL('s') with a stalled store: %v", err)
	}
	fw.SetTarget(store.Addr)
	for deadline := time.Now().Add(30 * time.Second); lf.svc.Sequences.Snowflake() == nil; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no worker id 30 s after the store answered again")
		}
	}
	if err := db.QueryRow("SELECT NEXTVAL('s')").Scan(&v); err != nil {
		t.Fatal(err)
	}
}

// TestNextvalStoreMovedBack (issue 9, item 3): three proxies under NEXTVAL
// load, then leaf_alloc.max_id moves back by 100,000, as a failover to a
// stale async replica does. It used to give 27,810 duplicates: one proxy
// refused the stale segment, then accepted the next one, which the others
// had already been given; and a proxy (re)started after the move, with no
// high-water mark, takes the re-issued range at once. The proxies now read
// max_id back every second, and the ones that see it move back (or fetch
// a segment below their high-water mark) push it past what they saw plus
// a margin in one conditional UPDATE, alert (error log, metric
// leafproxy_segment_repairs_total) and go on: no value is stored twice.
func TestNextvalStoreMovedBack(t *testing.T) {
	t.Parallel() // waits more than it works; own servers or own tables
	backend := testdb.Start(t)
	store := testdb.Start(t)
	idTable(t, backend)
	cfgFor := func(metrics bool) *config.Config {
		cfg := leafConfig(t, backend, store)
		cfg.Sequences.Tags = map[string]config.Tag{"t": {Generator: "segment", Step: 100}}
		if metrics {
			cfg.Metrics.Listen = "127.0.0.1:0"
		}
		return cfg
	}
	var leaves []*leaf
	for i := range 3 {
		leaves = append(leaves, startLeaf(t, cfgFor(i == 0)))
	}
	sdb := store.Open(t, "leafstore")
	moveBack := func(what string) {
		t.Helper()
		var before int64
		sdb.QueryRow("SELECT max_id FROM leaf_alloc WHERE biz_tag = 't'").Scan(&before)
		// By 100,000, and at least below every proxy's high-water mark:
		// a replica that lags behind the last fetches of all of them.
		back := int64(100000)
		for _, lf := range leaves {
			st, _ := lf.svc.Sequences.Segments().Stats("t")
			back = max(back, before-st.HighWater+1)
		}
		back = min(back, before-1) // max_id stays positive: Leaf's start is 1
		if _, err := sdb.Exec("UPDATE leaf_alloc SET max_id = max_id - ? WHERE biz_tag = 't'", back); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: max_id %d moved back by %d", what, before, back)
	}

	// Phase 1: the store moves back twice while the three proxies are
	// under load.
	stop := make(chan struct{})
	res, wait := idLoad(t, leaves, "t", 24, stop)
	for round := range 2 {
		time.Sleep(1500 * time.Millisecond)
		moveBack(fmt.Sprintf("under load, round %d", round))
	}
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	wait()
	t.Logf("phase 1: %v", res)
	if res.failed.Load() != 0 {
		t.Errorf("failed inserts: %v", res)
	}

	// Phase 2: the store moves back while the proxies are idle; two
	// seconds later a fourth proxy starts (a proxy restarted after the
	// failover: no high-water mark) and all four take load.
	moveBack("idle")
	time.Sleep(2 * time.Second)
	leaves = append(leaves, startLeaf(t, cfgFor(false)))
	res = runLoad(t, leaves, "t", 24, 2*time.Second)
	t.Logf("phase 2: %v", res)
	if res.failed.Load() != 0 {
		t.Errorf("failed inserts: %v", res)
	}

	var after int64
	sdb.QueryRow("SELECT max_id FROM leaf_alloc WHERE biz_tag = 't'").Scan(&after)
	var repairs uint64
	for i, lf := range leaves {
		st, _ := lf.svc.Sequences.Segments().Stats("t")
		t.Logf("proxy %d: high-water %d, %d fetches, %d refused, %d repairs", i, st.HighWater, st.Fetches, st.Refused, st.Repairs)
		repairs += st.Repairs
	}
	t.Logf("max_id %d at the end", after)
	assertNoDuplicates(t, backend, 5000)
	if repairs < 3 {
		t.Errorf("%d repairs, want one per move back at least", repairs)
	}
	// Repairs are exposed as a metric.
	if a := leaves[0].svc.MetricsAddr(); a != nil {
		resp, err := http.Get("http://" + a.String() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		st, _ := leaves[0].svc.Sequences.Segments().Stats("t")
		if want := fmt.Sprintf("leafproxy_segment_repairs_total{tag=\"t\"} %d\n", st.Repairs); !strings.Contains(string(body), want) {
			t.Errorf("metrics do not show %q", want)
		}
	}
}
