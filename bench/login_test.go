package bench

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
)

// TestLoginLatency (issue 30) measures what a login costs through the
// proxy against a direct one, one connection at a time: the first byte
// (connect until the greeting's first byte has arrived) and the whole
// login (go-sql-driver's Connect: connect, greeting, authentication, OK).
// Three targets, taken in turn within each round so that the machine's
// load falls on all alike: MariaDB directly, leafproxy in backend-account
// mode (no users: the backend connection is opened before the client is
// greeted, with the backend thread's id) and leafproxy with users (the
// backend login follows the client's). LEAFPROXY_BENCH_LOGINS logins per
// target (default 2,000). When haproxy is installed it is measured too (a
// plain TCP relay in between), and LEAFPROXY_BENCH_BASE_BIN adds another
// build's backend-account mode (e.g. the build before issue 30).
func TestLoginLatency(t *testing.T) {
	benchEnabled(t)
	n := envInt(t, "LEAFPROXY_BENCH_LOGINS", 2000)
	srv := testdb.Start(t)
	dir := t.TempDir()
	bin := os.Getenv("LEAFPROXY_BENCH_PROXY_BIN")
	if bin == "" {
		bin = buildLeafproxy(t, dir)
	}
	usersAddr := freeAddr(t)
	startLeafProcess(t, bin, dir, "tcp", usersAddr, srv.Addr)
	acctAddr := freeAddr(t)
	cfg := fmt.Sprintf("listen: %q\nbackend:\n  addr: %q\n  user: root\n  password: \"\"\nshutdown:\n  grace: 1s\nlog:\n  level: warn\n", acctAddr, srv.Addr)
	path := filepath.Join(dir, "leafproxy-accounts.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	startProc(t, "leafproxy-accounts", nil, []string{"tcp", acctAddr}, bin, "serve", "--config", path)

	type target struct {
		name, addr, user, pass string
		first, login           []time.Duration
	}
	targets := []*target{
		{name: "direct", addr: srv.Addr, user: "root"},
		{name: "backend-account mode", addr: acctAddr, user: "root"},
		{name: "users mode", addr: usersAddr, user: "app", pass: "secret"},
	}
	// haproxy in TCP mode, when installed: what any relay in between costs.
	if hp, err := exec.LookPath("haproxy"); err == nil {
		hpAddr := freeAddr(t)
		startHaproxy(t, hp, dir, hpAddr, srv.Addr, filepath.Join(dir, "hp.sock"), filepath.Join(srv.Dir, "mysqld.sock"))
		targets = append(targets, &target{name: "haproxy " + haproxyVersion(hp) + " (TCP)", addr: hpAddr, user: "root"})
	}
	// LEAFPROXY_BENCH_BASE_BIN: the same two modes of another build.
	if base := os.Getenv("LEAFPROXY_BENCH_BASE_BIN"); base != "" {
		baseAddr := freeAddr(t)
		bcfg := strings.Replace(cfg, acctAddr, baseAddr, 1)
		bpath := filepath.Join(dir, "leafproxy-base.yaml")
		if err := os.WriteFile(bpath, []byte(bcfg), 0o644); err != nil {
			t.Fatal(err)
		}
		startProc(t, "leafproxy-base", nil, []string{"tcp", baseAddr}, base, "serve", "--config", bpath)
		targets = append(targets, &target{name: "backend-account mode, " + filepath.Base(base), addr: baseAddr, user: "root"})
	}
	ctx := context.Background()
	firstByte := func(addr string) time.Duration {
		start := time.Now()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var b [1]byte
		if _, err := c.Read(b[:]); err != nil {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	login := func(tg *target) time.Duration {
		c := mysql.NewConfig()
		c.Net, c.Addr, c.User, c.Passwd = "tcp", tg.addr, tg.user, tg.pass
		conn, err := mysql.NewConnector(c)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		dc, err := conn.Connect(ctx)
		d := time.Since(start)
		if err != nil {
			t.Fatalf("%s: %v", tg.name, err)
		}
		dc.Close()
		return d
	}
	for _, tg := range targets { // warm up: the probe login, pools, caches
		for range 20 {
			firstByte(tg.addr)
			login(tg)
		}
	}
	for i := range n {
		for j := range targets {
			tg := targets[(i+j)%len(targets)] // the order turns each round
			tg.first = append(tg.first, firstByte(tg.addr))
			tg.login = append(tg.login, login(tg))
		}
	}
	pct := func(ds []time.Duration, p float64) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[min(len(s)-1, int(p*float64(len(s))))]
	}
	us := func(d time.Duration) string { return fmt.Sprintf("%.0f", float64(d)/float64(time.Microsecond)) }
	var out strings.Builder
	fmt.Fprintf(&out, "\n%d logins per target, one at a time, load average %s\n\n", n, loadAvg())
	fmt.Fprintln(&out, "| target | first byte p50 / p90 / p99 (us) | vs direct (p50) | login p50 / p90 / p99 (us) | vs direct (p50) |")
	fmt.Fprintln(&out, "|---|---|---|---|---|")
	d := targets[0]
	for _, tg := range targets {
		fmt.Fprintf(&out, "| %s | %s / %s / %s | %.2fx | %s / %s / %s | %.2fx |\n", tg.name,
			us(pct(tg.first, .5)), us(pct(tg.first, .9)), us(pct(tg.first, .99)),
			float64(pct(tg.first, .5))/float64(pct(d.first, .5)),
			us(pct(tg.login, .5)), us(pct(tg.login, .9)), us(pct(tg.login, .99)),
			float64(pct(tg.login, .5))/float64(pct(d.login, .5)))
	}
	t.Log(out.String())
}
