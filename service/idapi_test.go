package service_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
	"github.com/leafproxy/leafproxy/service"
)

const (
	tokA   = "token-a-0123456789abcdef"
	tokAll = "token-all-0123456789abcdef"
)

// apiConfig is testConfig with the ID API on: token "a" may use t and s,
// token "all" every tag; tag u exists but is not a's.
func apiConfig(backend *testdb.Server) *config.Config {
	cfg := testConfig(backend)
	cfg.Sequences.Tags["u"] = config.Tag{Generator: "segment", Step: 1000}
	cfg.IDAPI.Listen = "127.0.0.1:0"
	cfg.IDAPI.Tokens = []config.APIToken{
		{Name: "a", Token: tokA, Tags: []string{"t", "s"}},
		{Name: "all", Token: tokAll, Tags: []string{"*"}},
	}
	cfg.ApplyDefaults()
	return cfg
}

// lockedBuffer is a log sink safe for the service's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// apiRunning is a served service with its ID API's base URL.
type apiRunning struct {
	*running
	API string
	Log *lockedBuffer
}

func startAPI(t *testing.T, cfg *config.Config) *apiRunning {
	t.Helper()
	if err := service.ValidateConfig(cfg); err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	svc, err := service.New(context.Background(), cfg, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn})))
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
			svc.Close()
			if err := <-done; err != nil {
				t.Errorf("Serve: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	testwait.For(t, "the ID API and the metrics endpoint", func() bool { return svc.IDAPIAddr() != nil && svc.MetricsAddr() != nil })
	return &apiRunning{running: &running{Svc: svc, Addr: l.Addr().String(), Base: "http://" + svc.MetricsAddr().String(), Stop: stop},
		API: "http://" + svc.IDAPIAddr().String(), Log: logs}
}

// call GETs (or sends method to) path with the bearer token (none when
// empty) and returns the status and body.
func call(t *testing.T, c *http.Client, method, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func ids(t *testing.T, body string) []int64 {
	t.Helper()
	var out []int64
	for _, f := range strings.Fields(body) {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			t.Fatalf("body %q: %v", body, err)
		}
		out = append(out, v)
	}
	return out
}

func TestIDAPI(t *testing.T) {
	backend := testdb.Start(t)
	r := startAPI(t, apiConfig(backend))
	c := &http.Client{Timeout: 10 * time.Second}
	seg, snow, dec := r.API+"/api/segment/get/", r.API+"/api/snowflake/get/", r.API+"/api/decode/"

	for _, tc := range []struct {
		method, url, token string
		code               int
		body               string
	}{
		{"GET", seg + "t", "", 401, "no bearer token"},
		{"GET", seg + "t", "wrong-token-0123456789", 401, "not one of id_api.tokens"},
		{"GET", seg + "u", tokA, 403, `token "a" may not use sequence 'u'`},
		{"GET", snow + "nosuch", tokA, 403, "may not use"},
		{"GET", dec + "u/1", tokA, 403, "may not use"},
		{"GET", seg + "nosuch", tokAll, 404, "Unknown SEQUENCE: 'nosuch'"},
		{"GET", snow + "nosuch", tokAll, 404, "Unknown SEQUENCE: 'nosuch'"},
		{"GET", dec + "nosuch/5", tokAll, 404, "Unknown SEQUENCE: 'nosuch'"},
		{"GET", seg + "s", tokA, 400, "sequence 's' uses the snowflake generator: ask GET /api/snowflake/get/s"},
		{"GET", snow + "t", tokA, 400, "sequence 't' uses the segment generator: ask GET /api/segment/get/t"},
		{"GET", seg + "t?count=0", tokA, 400, "a block is 1 to 1000000 IDs"},
		{"GET", seg + "t?count=x", tokA, 400, "a block is 1 to 1000000 IDs"},
		{"GET", seg + "t?count=1000001", tokA, 400, "a block is 1 to 1000000 IDs"},
		{"GET", snow + "s?count=5000", tokA, 400, "at most 4096 consecutive IDs"},
		{"GET", dec + "t/abc", tokA, 400, "is not an integer ID"},
		{"GET", dec + "s/-1", tokA, 400, "Incorrect arguments to LEAFPROXY_DECODE"},
		{"POST", seg + "t", tokA, 405, ""},
		{"GET", r.API + "/nope", tokA, 404, ""},
	} {
		code, body := call(t, c, tc.method, tc.url, tc.token)
		if code != tc.code || !strings.Contains(body, tc.body) {
			t.Errorf("%s %s: %d %q, want %d with %q", tc.method, tc.url, code, body, tc.code, tc.body)
		}
	}

	// One ID: the body is the number alone, as Leaf writes it.
	code, body := call(t, c, "GET", seg+"t", tokA)
	if code != 200 || strings.ContainsAny(body, " \n") {
		t.Fatalf("segment: %d %q", code, body)
	}
	first := ids(t, body)[0]
	code, body = call(t, c, "GET", seg+"t?count=5", tokA)
	blk := ids(t, body)
	if code != 200 || len(blk) != 5 || blk[0] <= first || !strings.HasSuffix(body, "\n") {
		t.Fatalf("segment block: %d %q after %d", code, body, first)
	}
	for i := range blk {
		if blk[i] != blk[0]+int64(i) {
			t.Fatalf("segment block not consecutive: %v", blk)
		}
	}
	// The access_token query parameter works as the header does.
	code, body = call(t, c, "GET", seg+"t?access_token="+tokA, "")
	if code != 200 || ids(t, body)[0] <= blk[4] {
		t.Fatalf("access_token: %d %q", code, body)
	}
	code, body = call(t, c, "GET", snow+"s?count=10", tokA)
	sb := ids(t, body)
	if code != 200 || len(sb) != 10 || sb[9] != sb[0]+9 {
		t.Fatalf("snowflake block: %d %q", code, body)
	}
	code, body = call(t, c, "GET", snow+"s", tokA)
	sid := ids(t, body)[0]
	if code != 200 || sid <= sb[9] {
		t.Fatalf("snowflake: %d %q", code, body)
	}

	// Decode: what LEAFPROXY_DECODE answers.
	var d map[string]any
	code, body = call(t, c, "GET", dec+"s/"+strconv.FormatInt(sid, 10), tokA)
	if err := json.Unmarshal([]byte(body), &d); code != 200 || err != nil {
		t.Fatalf("decode s: %d %q %v", code, body, err)
	}
	if d["generator"] != "snowflake" || d["worker_id"] != float64(7) || d["created_at"] == nil || d["max_id"] != nil {
		t.Errorf("decode s: %v", d)
	}
	// The same parts as SQL's LEAFPROXY_DECODE.
	var tag, gen string
	var id, worker, seq int64
	var created, handed, maxID any
	if err := r.client(t).QueryRow(fmt.Sprintf("SELECT LEAFPROXY_DECODE('s', %d)", sid)).Scan(&tag, &gen, &id, &created, &worker, &seq, &handed, &maxID); err != nil {
		t.Fatal(err)
	}
	if d["worker_id"] != float64(worker) || d["sequence"] != float64(seq) || d["id"] != float64(id) {
		t.Errorf("decode s: %v; SQL: worker %d sequence %d id %d", d, worker, seq, id)
	}
	code, body = call(t, c, "GET", dec+"t/"+strconv.FormatInt(first, 10), tokA)
	d = nil
	if err := json.Unmarshal([]byte(body), &d); code != 200 || err != nil {
		t.Fatalf("decode t: %d %q %v", code, body, err)
	}
	if d["generator"] != "segment" || d["handed_out"] != float64(1) || d["max_id"].(float64) <= float64(first) || d["worker_id"] != nil {
		t.Errorf("decode t: %v", d)
	}

	// Counted in /metrics.
	m := scrape(t, r.Base+"/metrics")
	want(t, m, `leafproxy_id_api_requests_total{code="401",endpoint="segment"}`, 2)
	want(t, m, `leafproxy_id_api_requests_total{code="403",endpoint="segment"}`, 1)
	want(t, m, `leafproxy_id_api_requests_total{code="403",endpoint="snowflake"}`, 1)
	want(t, m, `leafproxy_id_api_requests_total{code="404",endpoint="segment"}`, 1)
	want(t, m, `leafproxy_id_api_requests_total{code="200",endpoint="segment"}`, 3)
	want(t, m, `leafproxy_id_api_requests_total{code="200",endpoint="snowflake"}`, 2)
	want(t, m, `leafproxy_id_api_requests_total{code="200",endpoint="decode"}`, 2)
	want(t, m, `leafproxy_id_api_requests_total{code="405",endpoint="other"}`, 1)
	want(t, m, `leafproxy_id_api_requests_total{code="404",endpoint="other"}`, 1)
	want(t, m, `leafproxy_id_api_ids_total{tag="t"}`, 7)
	want(t, m, `leafproxy_id_api_ids_total{tag="s"}`, 11)
	want(t, m, `leafproxy_id_api_request_duration_seconds_count{endpoint="segment"}`, 11)

	// Refusals are in the audit log.
	logs := r.Log.String()
	for _, s := range []string{
		`msg=audit component=id_api who=id_api:-@127.0.0.1 action="HTTP GET /api/segment/get/t" tag=t result=denied code=401`,
		`msg=audit component=id_api who=id_api:a@127.0.0.1 action="HTTP GET /api/segment/get/u" tag=u result=denied code=403`,
	} {
		if !strings.Contains(logs, s) {
			t.Errorf("audit log lacks %q:\n%s", s, logs)
		}
	}
	if strings.Contains(logs, tokA) {
		t.Errorf("a token was logged:\n%s", logs)
	}
}

// TestIDAPITokensReload: SIGHUP's Reload applies changed tokens at once.
func TestIDAPITokensReload(t *testing.T) {
	backend := testdb.Start(t)
	cfg := apiConfig(backend)
	r := startAPI(t, cfg)
	c := &http.Client{Timeout: 10 * time.Second}
	next := apiConfig(backend)
	next.IDAPI.Tokens = []config.APIToken{{Name: "b", Token: "token-b-0123456789abcdef", Tags: []string{"u"}}}
	changes, err := r.Svc.Reload(context.Background(), next)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(changes, "; ")
	if !strings.Contains(got, `id_api token "b" added`) || !strings.Contains(got, `id_api token "a" removed`) || strings.Contains(got, "restart") || strings.Contains(got, "token-b") {
		t.Errorf("changes: %q", changes)
	}
	if code, _ := call(t, c, "GET", r.API+"/api/segment/get/t", tokA); code != 401 {
		t.Errorf("old token after reload: %d", code)
	}
	if code, body := call(t, c, "GET", r.API+"/api/segment/get/u", "token-b-0123456789abcdef"); code != 200 {
		t.Errorf("new token after reload: %d %q", code, body)
	}
}

// TestIDAPIAndSQLNoDuplicates: SQL NEXTVAL through the proxy and the HTTP
// API at once, from many goroutines, singles and blocks, on a segment tag
// with a small step (many fetches) and on a snowflake tag: every ID is
// handed out once.
func TestIDAPIAndSQLNoDuplicates(t *testing.T) {
	backend := testdb.Start(t)
	cfg := apiConfig(backend)
	cfg.Sequences.Tags["d"] = config.Tag{Generator: "segment", Step: 50}
	r := startAPI(t, cfg)
	db := r.client(t)
	db.SetMaxOpenConns(16)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	const workers, rounds = 8, 150
	type result struct {
		ids []int64
		err error
	}
	results := make(chan result, 4*workers)
	var wg sync.WaitGroup
	for _, tag := range []string{"d", "s"} {
		gen := "segment"
		if tag == "s" {
			gen = "snowflake"
		}
		for w := range workers {
			wg.Add(2)
			go func() { // SQL
				defer wg.Done()
				var out []int64
				for i := range rounds {
					n := int64(1 + (i+w)%3*2) // 1, 3, 5
					var first int64
					if err := db.QueryRow(fmt.Sprintf("SELECT NEXTVAL('%s', %d)", tag, n)).Scan(&first); err != nil {
						results <- result{err: err}
						return
					}
					for k := range n {
						out = append(out, first+k)
					}
				}
				results <- result{ids: out}
			}()
			go func() { // HTTP
				defer wg.Done()
				var out []int64
				for i := range rounds {
					url := fmt.Sprintf("%s/api/%s/get/%s?count=%d", r.API, gen, tag, 1+(i+w)%4)
					req, _ := http.NewRequest("GET", url, nil)
					req.Header.Set("Authorization", "Bearer "+tokAll)
					resp, err := client.Do(req)
					if err != nil {
						results <- result{err: err}
						return
					}
					b, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					if err != nil || resp.StatusCode != 200 {
						results <- result{err: fmt.Errorf("%s: %d %q %v", url, resp.StatusCode, b, err)}
						return
					}
					for _, f := range strings.Fields(string(b)) {
						v, err := strconv.ParseInt(f, 10, 64)
						if err != nil {
							results <- result{err: err}
							return
						}
						out = append(out, v)
					}
				}
				results <- result{ids: out}
			}()
		}
	}
	wg.Wait()
	close(results)
	seen := map[int64]bool{}
	total := 0
	for res := range results {
		if res.err != nil {
			t.Fatal(res.err)
		}
		for _, id := range res.ids {
			if seen[id] {
				t.Fatalf("ID %d handed out twice", id)
			}
			seen[id] = true
		}
		total += len(res.ids)
	}
	if total < 4*workers*rounds || len(seen) != total {
		t.Fatalf("%d IDs, %d distinct", total, len(seen))
	}
	t.Logf("%d IDs over SQL and HTTP, all distinct", total)
}

// TestIDAPIFirstUseAndStoreWait (issue 40): a tag's first use over HTTP
// takes the first ID of its first segment, the one SQL's first NEXTVAL
// takes on a twin tag (it skipped the segment: 41 where SQL gave 1); and
// with the store not answering, a request that needs a segment waits
// sequences.wait_timeout, as SQL does, and is answered 503 saying the
// store did not answer.
func TestIDAPIFirstUseAndStoreWait(t *testing.T) {
	backend := testdb.Start(t)
	store := testdb.Start(t)
	fwd := testdb.NewForwarder(t, store.Addr)
	cfg := apiConfig(backend)
	cfg.Sequences.Store = config.StoreList{strings.Replace(store.DSN("ids"), store.Addr, fwd.Addr, 1)}
	const tries = 5
	for i := range tries {
		cfg.Sequences.Tags[fmt.Sprintf("h%d", i)] = config.Tag{Generator: "segment", Step: 40}
		cfg.Sequences.Tags[fmt.Sprintf("q%d", i)] = config.Tag{Generator: "segment", Step: 40}
	}
	cfg.Sequences.Tags["w"] = config.Tag{Generator: "segment", Step: 40}
	cfg.Sequences.Tags["w2"] = config.Tag{Generator: "segment", Step: 40}
	r := startAPI(t, cfg)
	c := &http.Client{Timeout: 30 * time.Second}
	db := r.client(t)
	for i := range tries {
		code, body := call(t, c, "GET", fmt.Sprintf("%s/api/segment/get/h%d", r.API, i), tokAll)
		var sqlFirst int64
		if err := db.QueryRow(fmt.Sprintf("SELECT NEXTVAL('q%d')", i)).Scan(&sqlFirst); err != nil {
			t.Fatal(err)
		}
		if code != 200 || strings.TrimSpace(body) != strconv.FormatInt(sqlFirst, 10) {
			t.Errorf("try %d: HTTP's first ID %d %q, SQL's on a twin tag %d", i, code, body, sqlFirst)
		}
		// The next HTTP ID follows: nothing was skipped.
		if _, body2 := call(t, c, "GET", fmt.Sprintf("%s/api/segment/get/h%d", r.API, i), tokAll); ids(t, body2)[0] != sqlFirst+1 {
			t.Errorf("try %d: second HTTP ID %q, want %d", i, body2, sqlFirst+1)
		}
	}

	// The store stops answering: a cold tag over HTTP and over SQL.
	fwd.Stall()
	wait := cfg.Sequences.WaitTimeout.D()
	start := time.Now()
	code, body := call(t, c, "GET", r.API+"/api/segment/get/w", tokAll)
	took := time.Since(start)
	if code != 503 || !strings.Contains(body, `leafproxy: no ID for sequence "w" after waiting`) ||
		!strings.Contains(body, "(sequences.wait_timeout): the ID store did not answer") {
		t.Errorf("HTTP with the store stalled: %d %q", code, body)
	}
	if took < wait {
		t.Errorf("HTTP answered after %v, before sequences.wait_timeout (%v)", took, wait)
	}
	start = time.Now()
	var v int64
	err := db.QueryRow("SELECT NEXTVAL('w2')").Scan(&v)
	if err == nil || !strings.Contains(err.Error(), "(sequences.wait_timeout): the ID store did not answer") {
		t.Errorf("SQL with the store stalled: %v", err)
	}
	t.Logf("store stalled: HTTP answered 503 after %v, SQL after %v (wait_timeout %v)", took.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), wait)
	fwd.SetTarget(store.Addr)
}

// leafEpochMs is Leaf's snowflake epoch (SnowflakeIDGenImpl's twepoch,
// 2010-11-04T01:42:54.657Z); its IDs are (ms - epoch) << 22 | worker << 12
// | sequence.
const leafEpochMs = 1288834974657

// TestLeafSnowflakeMoveKeepsRising (issue 40; README, "Coming from
// Meituan Leaf"): a Leaf snowflake service moved to leafproxy with Leaf's
// epoch and 41/10/12 layout hands out IDs above every ID Leaf can have
// issued before the move (the largest: this millisecond, worker 1023,
// sequence 4095), over HTTP and SQL, and Leaf's /decodeSnowflakeId
// (leaf_decode_tag) reads them as Leaf would. With leafproxy's default
// epoch (2020-01-01) they would be lower: going backwards.
func TestLeafSnowflakeMoveKeepsRising(t *testing.T) {
	backend := testdb.Start(t)
	cfg := apiConfig(backend)
	cfg.Snowflake.Epoch = "2010-11-04T01:42:54.657Z"
	cfg.Snowflake.TimeBits, cfg.Snowflake.WorkerBits, cfg.Snowflake.SequenceBits = 41, 10, 12
	cfg.IDAPI.LeafDecodeTag = "s"
	leafLast := (time.Now().UnixMilli()-leafEpochMs)<<22 | 1023<<12 | 4095
	r := startAPI(t, cfg)
	c := &http.Client{Timeout: 10 * time.Second}
	code, body := call(t, c, "GET", r.API+"/api/snowflake/get/s", tokA)
	if code != 200 {
		t.Fatalf("HTTP: %d %q", code, body)
	}
	httpID := ids(t, body)[0]
	var sqlID int64
	if err := r.client(t).QueryRow("SELECT NEXTVAL('s')").Scan(&sqlID); err != nil {
		t.Fatal(err)
	}
	for what, id := range map[string]int64{"HTTP": httpID, "SQL": sqlID} {
		if id <= leafLast {
			t.Errorf("%s ID %d not above Leaf's last possible ID %d", what, id, leafLast)
		}
	}
	// Leaf's own decoding of the proxy's ID: its time is now, worker 7.
	code, body = call(t, c, "GET", fmt.Sprintf("%s/decodeSnowflakeId?snowflakeId=%d", r.API, httpID), tokA)
	var d map[string]string
	if err := json.Unmarshal([]byte(body), &d); err != nil || code != 200 || d["workerId"] != "7" {
		t.Fatalf("/decodeSnowflakeId: %d %q %v", code, body, err)
	}
	ms, _, _ := strings.Cut(d["timestamp"], "(")
	if leafMs := httpID>>22 + leafEpochMs; ms != strconv.FormatInt(leafMs, 10) || time.Since(time.UnixMilli(leafMs)).Abs() > time.Hour {
		t.Errorf("/decodeSnowflakeId timestamp %q, Leaf's formula gives %d", d["timestamp"], leafMs)
	}
	// The hazard the configuration avoids: leafproxy's default epoch
	// puts today's IDs below Leaf's.
	def, err := time.Parse(time.RFC3339, config.DefaultSnowflakeEpoch)
	if err != nil {
		t.Fatal(err)
	}
	if withDefault := (time.Now().UnixMilli()-def.UnixMilli())<<22 | 1023<<12 | 4095; withDefault >= leafLast {
		t.Errorf("default epoch's ID %d not below Leaf's %d: the README's warning is wrong", withDefault, leafLast)
	}
}

// TestIDAPIStartedWithStoreDown (issue 40): on a proxy started while the
// store is down, a request for a segment waits sequences.wait_timeout as
// SQL's NEXTVAL does (it was answered 503 in 1-2 ms), for a token naming
// the tag and for a "*" token alike.
func TestIDAPIStartedWithStoreDown(t *testing.T) {
	backend := testdb.Start(t)
	store := testdb.Start(t)
	fwd := testdb.NewForwarder(t, store.Addr)
	cfg := apiConfig(backend)
	cfg.Sequences.Store = config.StoreList{strings.Replace(store.DSN("ids"), store.Addr, fwd.Addr, 1)}
	cfg.Sequences.Tags = map[string]config.Tag{"t": {Generator: "segment", Step: 40}, "s": {Generator: "segment", Step: 40}, "u": {Generator: "segment", Step: 40}}
	// The store's database and tags exist; then the proxy starts without it.
	first := startAPI(t, cfg)
	first.Stop()
	fwd.SetTarget(freeClosedAddr(t))
	r := startAPI(t, cfg)
	c := &http.Client{Timeout: 30 * time.Second}
	wait := cfg.Sequences.WaitTimeout.D()
	for _, tok := range []string{tokA, tokAll} {
		start := time.Now()
		code, body := call(t, c, "GET", r.API+"/api/segment/get/t", tok)
		if took := time.Since(start); code != 503 || took < wait || !strings.Contains(body, "(sequences.wait_timeout)") {
			t.Errorf("token %s: %d %q after %v; want 503 after sequences.wait_timeout (%v)", strings.Split(tok, "-")[1], code, body, took, wait)
		}
	}
}

// freeClosedAddr is a loopback address nothing listens on.
func freeClosedAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestIDAPIMaxNewTags (issue 40): with sequences.auto_create, a "*" token
// brings at most its max_new_tags tags into being; a tag it names, or one
// that exists, costs nothing.
func TestIDAPIMaxNewTags(t *testing.T) {
	backend := testdb.Start(t)
	cfg := apiConfig(backend)
	cfg.Sequences.AutoCreate = true
	two := 2
	cfg.IDAPI.Tokens[1].MaxNewTags = &two
	cfg.IDAPI.Tokens[1].Tags = []string{"*", "named"}
	r := startAPI(t, cfg)
	c := &http.Client{Timeout: 10 * time.Second}
	for _, tc := range []struct {
		tag  string
		code int
	}{{"new1", 200}, {"new1", 200}, {"t", 200}, {"named", 200}, {"new2", 200}, {"new3", 403}} {
		code, body := call(t, c, "GET", r.API+"/api/segment/get/"+tc.tag, tokAll)
		if code != tc.code {
			t.Errorf("%s: %d %q, want %d", tc.tag, code, body, tc.code)
		}
		if code == 403 && !strings.Contains(body, `leafproxy: token "all" may not create sequence 'new3': it has created its 2 (id_api.tokens[].max_new_tags)`) {
			t.Errorf("403 body %q", body)
		}
	}
	var n int
	if err := backend.Open(t, "leafproxy").QueryRow("SELECT COUNT(*) FROM leaf_alloc WHERE biz_tag LIKE 'new%'").Scan(&n); err != nil || n != 2 {
		t.Errorf("tags created: %d (%v), want 2", n, err)
	}
}
