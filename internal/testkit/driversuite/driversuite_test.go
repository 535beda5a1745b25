// Package driversuite runs go-sql-driver/mysql's own test suite twice
// against one throwaway MariaDB: directly, and through a leafproxy (the
// full service: engine installed, no rule tables). A test that passes
// directly and fails through the proxy is a transparency bug.
//
// It is slow (two full driver suites per driver version) and downloads the
// driver's source through the Go module proxy, so it runs only when asked:
//
//	scripts/driver-suite.sh                       # v1.9.3 and v1.10.1
//	LEAFPROXY_DRIVER_VERSIONS=v1.10.1 scripts/driver-suite.sh
//
// The report (per version: passed directly and failed through the proxy,
// and the reverse) is logged and written to $LEAFPROXY_DRIVER_SUITE_OUT
// when set. Tests expectedProxyFailure names are reported but do not fail
// the run.
package driversuite

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/service"
)

// expectedProxyFailure says whether a driver test is expected to fail
// through a proxy whose backend leg is plaintext, and why. TestTLS's
// tls=skip-verify and custom-config runs (subtests #01 and #02) check that
// SHOW STATUS LIKE 'Ssl_cipher' is non-empty: the client's TLS ends at the
// proxy, so the backend session has no cipher. They pass through a proxy
// with backend.tls on, which the suite checks separately.
func expectedProxyFailure(name string) (string, bool) {
	if name == "TestTLS" || strings.HasPrefix(name, "TestTLS/") && (strings.HasSuffix(name, "#01") || strings.HasSuffix(name, "#02")) {
		return "Ssl_cipher is the backend session's; the proxy terminates the client's TLS and its backend leg is plaintext", true
	}
	return "", false
}

func TestMain(m *testing.M) { testdb.Main(m) }

func TestDriverSuite(t *testing.T) {
	if os.Getenv("LEAFPROXY_DRIVER_SUITE") == "" {
		t.Skip("set LEAFPROXY_DRIVER_SUITE=1 (or run scripts/driver-suite.sh) to run go-sql-driver's own suite through the proxy")
	}
	versions := strings.Fields(os.Getenv("LEAFPROXY_DRIVER_VERSIONS"))
	if len(versions) == 0 {
		versions = []string{"v1.9.3", "v1.10.1"}
	}
	// The backend offers TLS (certificates made here), so the driver's TLS
	// tests run directly too. The driver's TestConcurrent (opt-in there,
	// LEAFPROXY_DRIVER_CONCURRENT=1 here) opens @@max_connections
	// connections: a small limit keeps that affordable on two cores.
	certs, err := testdb.MakeCerts(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	backend := testdb.StartWith(t, append(certs.ServerTLSFlags(), "--max-connections=300")...)
	backend.Exec(t, "CREATE DATABASE IF NOT EXISTS gotest")
	proxyAddr := startProxy(t, backend.Addr, config.ClientTLS{})
	// The same with TLS on the backend leg too: the driver's cipher checks
	// then pass through the proxy.
	tlsProxyAddr := startProxy(t, backend.Addr, config.ClientTLS{Enabled: true, CA: certs.CA, ServerName: "localhost"})

	var report strings.Builder
	var unexpected []string
	explained := map[string]bool{}
	for _, v := range versions {
		src := driverSource(t, v)
		direct := runSuite(t, src, backend.Addr, v+" direct")
		via := runSuite(t, src, proxyAddr, v+" via proxy")
		viaTLS := runSuite(t, src, tlsProxyAddr, v+" via proxy with backend.tls", "-run", "^TestTLS$")
		var tlsFailed []string
		for name, st := range viaTLS {
			if st == "fail" {
				tlsFailed = append(tlsFailed, name)
			}
		}
		sort.Strings(tlsFailed)
		fmt.Fprintf(&report, "go-sql-driver/mysql %s TestTLS via proxy with backend.tls: %s\n", v, summary(viaTLS))
		for _, n := range tlsFailed {
			fmt.Fprintf(&report, "  FAILS VIA PROXY WITH backend.tls: %s\n", n)
			unexpected = append(unexpected, v+" "+n+" (backend.tls)")
		}
		var onlyProxy, onlyDirect []string
		for name, st := range direct {
			if st == "pass" && via[name] == "fail" {
				onlyProxy = append(onlyProxy, name)
			}
			if st == "fail" && via[name] == "pass" {
				onlyDirect = append(onlyDirect, name)
			}
		}
		sort.Strings(onlyProxy)
		sort.Strings(onlyDirect)
		fmt.Fprintf(&report, "go-sql-driver/mysql %s: direct %s; via proxy %s\n", v, summary(direct), summary(via))
		for _, n := range onlyProxy {
			if why, expected := expectedProxyFailure(n); expected {
				if !explained[why] {
					explained[why] = true
					fmt.Fprintf(&report, "  (expected below: %s)\n", why)
				}
				fmt.Fprintf(&report, "  fails only via proxy, expected: %s\n", n)
			} else {
				fmt.Fprintf(&report, "  FAILS ONLY VIA PROXY: %s\n", n)
				unexpected = append(unexpected, v+" "+n)
			}
		}
		for _, n := range onlyDirect {
			fmt.Fprintf(&report, "  fails only direct: %s\n", n)
		}
		for name, st := range via {
			if st == "fail" && direct[name] == "fail" {
				fmt.Fprintf(&report, "  fails both ways: %s\n", name)
			}
		}
	}
	t.Log("\n" + report.String())
	if out := os.Getenv("LEAFPROXY_DRIVER_SUITE_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(report.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
	if len(unexpected) > 0 {
		t.Errorf("%d driver tests pass directly and fail through the proxy: %s", len(unexpected), strings.Join(unexpected, ", "))
	}
}

func summary(m map[string]string) string {
	n := map[string]int{}
	for _, st := range m {
		n[st]++
	}
	return fmt.Sprintf("%d pass, %d fail, %d skip", n["pass"], n["fail"], n["skip"])
}

// startProxy runs the full leafproxy service (engine, no rule tables) in
// front of backend. No proxy users: clients log in with the backend's own
// account (root, empty password), as the driver's tests expect.
func startProxy(t *testing.T, backend string, backendTLS config.ClientTLS) string {
	t.Helper()
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.Backend.Addr = backend
	cfg.Backend.TLS = backendTLS
	cfg.Shutdown.Grace = config.Duration(2 * time.Second)
	cfg.Log.Level = "warn"
	// The driver's tests log in with wrong passwords on purpose, all from
	// 127.0.0.1: what they measure is the protocol, not the login
	// throttle (proxy/throttle_login_test.go tests that).
	cfg.Limits.LoginFailures = 100000
	cfg.ApplyDefaults()
	if err := service.ValidateConfig(cfg); err != nil {
		t.Fatal(err)
	}
	var logw = os.Stderr
	if p := os.Getenv("LEAFPROXY_DRIVER_SUITE_LOG"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		logw = f
	}
	log := slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: slog.LevelWarn}))
	svc, err := service.New(context.Background(), cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() }) // waits for Serve and all the service started
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go svc.Serve(context.Background(), l)
	return l.Addr().String()
}

// driverSource downloads the driver module (go mod download) and copies its
// source to a writable temporary directory.
func driverSource(t *testing.T, version string) string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", "github.com/go-sql-driver/mysql@"+version)
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	cmd.Dir = t.TempDir()
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	_ = json.Unmarshal(out, &info)
	if err != nil || info.Dir == "" {
		t.Fatalf("go mod download github.com/go-sql-driver/mysql@%s: %v %s", version, err, info.Error)
	}
	dst := filepath.Join(t.TempDir(), "mysql@"+version)
	if out, err := exec.Command("cp", "-r", info.Dir, dst).CombinedOutput(); err != nil {
		t.Fatalf("copy driver source: %v: %s", err, out)
	}
	if out, err := exec.Command("chmod", "-R", "u+w", dst).CombinedOutput(); err != nil {
		t.Fatalf("chmod: %v: %s", err, out)
	}
	return dst
}

// runSuite runs the driver's tests in src against addr and returns each
// test's (and subtest's) outcome: pass, fail or skip.
func runSuite(t *testing.T, src, addr, label string, args ...string) map[string]string {
	t.Helper()
	start := time.Now()
	timeout := os.Getenv("LEAFPROXY_DRIVER_SUITE_TIMEOUT")
	if timeout == "" {
		timeout = "15m"
	}
	// TestConnectorReturnsTimeout dials 1.1.1.1:1234 and needs that
	// address to be unreachable; where it is not (sandboxes, proxies) the
	// driver panics on a nil logger and the panic ends the whole run. It
	// never talks to the server under test, so it is left out.
	cmd := exec.Command("go", "test", "-json", "-count=1", "-timeout", timeout,
		"-skip", "^TestConnectorReturnsTimeout$")
	cmd.Args = append(append(cmd.Args, args...), ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(),
		"GOFLAGS=-mod=mod", "GOWORK=off",
		"MYSQL_TEST_USER=root", "MYSQL_TEST_PASS=", "MYSQL_TEST_PROT=tcp",
		"MYSQL_TEST_ADDR="+addr, "MYSQL_TEST_DBNAME=gotest",
		"MYSQL_TEST_CONCURRENT="+os.Getenv("LEAFPROXY_DRIVER_CONCURRENT"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, _ := cmd.Output() // a failing suite exits non-zero; the events say why
	res := map[string]string{}
	output := map[string]*strings.Builder{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct{ Action, Test, Output string }
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Test == "" {
			continue
		}
		switch ev.Action {
		case "pass", "fail", "skip":
			res[ev.Test] = ev.Action
		case "output":
			b := output[ev.Test]
			if b == nil {
				b = &strings.Builder{}
				output[ev.Test] = b
			}
			if b.Len() < 4000 {
				b.WriteString(ev.Output)
			}
		}
	}
	if len(res) == 0 {
		t.Fatalf("%s: no test results (%v)\n%s\n%s", label, cmd.ProcessState, stderr.String(), tail(out, 4000))
	}
	t.Logf("%s: %s in %v", label, summary(res), time.Since(start).Round(time.Second))
	for name, st := range res {
		if st == "fail" && output[name] != nil {
			t.Logf("%s: %s failed:\n%s", label, name, output[name].String())
		}
	}
	return res
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
