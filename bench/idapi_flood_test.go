package bench

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
)

// TestIDAPIFloodBench (issue 40) measures what floods at the HTTP ID API
// port, by a client without any token, cost the rest of the proxy: new
// SQL logins (connect, NEXTVAL, close) and /healthz, each timed one at a
// time, with no flood (the baseline, same run), while
// LEAFPROXY_BENCH_FLOOD_CONNS (10,000) connections that each sent one
// token-less keep-alive request are held open, while as many silent
// connections (nothing sent) are, and while
// LEAFPROXY_BENCH_FLOOD_WORKERS (256) clients send token-less requests
// with 4 KB paths as fast as they can (LEAFPROXY_BENCH_DURATION, 5 s,
// before the measuring starts, and on through it); plus the proxy's descriptors,
// resident memory and log growth. The proxy is the leafproxy binary in a
// child process; LEAFPROXY_BENCH_BEFORE (a commit, default 25a1629, the
// last before issue 40, or a binary) is measured the same way in the same
// run.
func TestIDAPIFloodBench(t *testing.T) {
	benchEnabled(t)
	conns := envInt(t, "LEAFPROXY_BENCH_FLOOD_CONNS", 10000)
	workers := envInt(t, "LEAFPROXY_BENCH_FLOOD_WORKERS", 256)
	logins := envInt(t, "LEAFPROXY_BENCH_FLOOD_LOGINS", 200)
	dur := envDuration(t, "LEAFPROXY_BENCH_DURATION", 5*time.Second)
	srv := testdb.Start(t)
	dir := t.TempDir()
	builds := []struct{ name, bin string }{{"this build", buildLeafproxy(t, dir)}}
	if spec := envString("LEAFPROXY_BENCH_BEFORE", "25a1629"); spec != "none" {
		bin, name := beforeBinary(t, dir, spec)
		builds = append(builds, struct{ name, bin string }{"before (" + name + ")", bin})
	}
	var out strings.Builder
	fmt.Fprintf(&out, "\nHTTP ID API floods (issue 40): %d held token-less connections, %d token-less request loops for %v; %d SQL logins and /healthz timed one at a time in each phase\n",
		conns, workers, dur, logins)
	fmt.Fprintf(&out, "| build | phase | SQL login p50 | p99 | failed | /healthz p50 | p99 | failed | proxy fds | proxy RSS | proxy CPU (of one core) | log bytes | API answers/s |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, b := range builds {
		floodRun(t, &out, b.name, b.bin, dir, srv.Addr, conns, workers, logins, dur)
	}
	fmt.Fprintf(&out, "load average at the end: %s\n", loadAvg())
	report(t, out.String())
}

// floodRun measures one build: its three phases, one table row each.
func floodRun(t *testing.T, out *strings.Builder, name, bin, dir, backend string, conns, workers, logins int, dur time.Duration) {
	addr, api, metrics := freeAddr(t), freeAddr(t), freeAddr(t)
	const token = "bench-token-0123456789abcdef"
	cfg := fmt.Sprintf(`listen: %q
backend: {addr: %q, user: root, password: ""}
users: [{name: app, password: secret}]
sequences: {tags: {t: {generator: segment}}}
metrics: {listen: %q}
id_api:
  listen: %q
  tokens: [{name: bench, token: %s, tags: [t]}]
shutdown: {grace: 1s}
log: {level: warn}
`, addr, backend, metrics, api, token)
	tag := strings.NewReplacer(" ", "-", "(", "", ")", "").Replace(name)
	path := filepath.Join(dir, "flood-"+tag+".yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "flood-"+tag+".log")
	pid := startProc(t, "flood-"+tag, nil, []string{"tcp", addr, "tcp", api}, "/bin/sh", "-c", "exec \"$0\" serve --config \"$1\" 2>>\"$2\"", bin, path, logPath)
	mc := mysql.NewConfig()
	mc.User, mc.Passwd, mc.Net, mc.Addr, mc.Timeout = "app", "secret", "tcp", addr, 15*time.Second
	conn, err := mysql.NewConnector(mc)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var answered atomic.Int64
	row := func(phase string) {
		logBefore, cpuBefore, start, answeredBefore := fileSize(logPath), procCPU(pid), time.Now(), answered.Load()
		sqlLat, sqlFail := timeLogins(conn, logins)
		hLat, hFail := timeHealth(hc, "http://"+metrics+"/healthz", logins)
		took := time.Since(start)
		fmt.Fprintf(out, "| %s | %s | %s | %s | %d | %s | %s | %d | %d | %.0f MiB | %.0f%% | %d | %.0f |\n", name, phase,
			pct(sqlLat, 50), pct(sqlLat, 99), sqlFail, pct(hLat, 50), pct(hLat, 99), hFail,
			fdCount(pid), float64(procRSS(t, pid))/(1<<20), 100*(procCPU(pid)-cpuBefore).Seconds()/took.Seconds(),
			fileSize(logPath)-logBefore, float64(answered.Load()-answeredBefore)/took.Seconds())
	}
	row("no flood (baseline)")

	// Held connections: each sends one token-less keep-alive request and
	// keeps its socket, as the attack did.
	var held []net.Conn
	for range conns {
		c, err := net.DialTimeout("tcp", api, 5*time.Second)
		if err != nil {
			break // the client's own limits: what was opened is held
		}
		_, _ = c.Write([]byte("GET /api/segment/get/t HTTP/1.1\r\nHost: x\r\n\r\n"))
		held = append(held, c)
	}
	time.Sleep(2 * time.Second) // let the proxy answer (or refuse) them all
	row(fmt.Sprintf("%d connections held", len(held)))
	for _, c := range held {
		c.Close()
	}

	// Silent connections: opened, nothing sent (held until the header
	// timeout).
	held = held[:0]
	for range conns {
		c, err := net.DialTimeout("tcp", api, 5*time.Second)
		if err != nil {
			break
		}
		held = append(held, c)
	}
	time.Sleep(500 * time.Millisecond) // accepted (or refused) by now
	row(fmt.Sprintf("%d silent connections", len(held)))
	for _, c := range held {
		c.Close()
	}

	// Request loops: token-less requests with 4 KB paths, a new
	// connection whenever the proxy closes one.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	long := "/api/segment/get/" + strings.Repeat("x", 4096)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Timeout: 10 * time.Second}
			for ctx.Err() == nil {
				resp, err := c.Get("http://" + api + long)
				if err != nil {
					continue
				}
				resp.Body.Close()
				answered.Add(1)
			}
		}()
	}
	time.Sleep(dur) // the flood under way
	row(fmt.Sprintf("%d request loops", workers))
	cancel()
	wg.Wait()
}

// timeLogins times n logins one after another: connect, NEXTVAL, close.
func timeLogins(conn driver.Connector, n int) ([]time.Duration, int) {
	db := sql.OpenDB(conn)
	defer db.Close()
	db.SetMaxIdleConns(0)
	var lat []time.Duration
	failed := 0
	for range n {
		start := time.Now()
		var v int64
		if err := db.QueryRow("SELECT NEXTVAL('t')").Scan(&v); err != nil {
			failed++
			continue
		}
		lat = append(lat, time.Since(start))
	}
	return lat, failed
}

// timeHealth times n /healthz requests one after another.
func timeHealth(c *http.Client, url string, n int) ([]time.Duration, int) {
	var lat []time.Duration
	failed := 0
	for range n {
		start := time.Now()
		resp, err := c.Get(url)
		if err != nil {
			failed++
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			failed++
			continue
		}
		lat = append(lat, time.Since(start))
	}
	return lat, failed
}

func pct(d []time.Duration, p int) string {
	if len(d) == 0 {
		return "-"
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)].Round(10 * time.Microsecond).String()
}

func fdCount(pid int) int {
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}
