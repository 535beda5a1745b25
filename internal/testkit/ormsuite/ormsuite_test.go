// Package ormsuite runs GORM's own test suite (the tests module of
// github.com/go-gorm/gorm, MySQL dialect) twice against one throwaway
// MariaDB: directly, and through a leafproxy whose one table rule is a
// per_table pattern over the whole test database, the way an ORM team
// adopts the proxy (issue 39). A test that passes directly and fails
// through the proxy is a defect, or a difference README names.
//
// It is slow and needs GORM's source (the tests module is not part of the
// gorm.io/gorm module in the Go module cache) and its dependencies through
// the Go module proxy, so it runs only when asked:
//
//	git clone https://github.com/go-gorm/gorm /tmp/gorm
//	LEAFPROXY_GORM_SRC=/tmp/gorm scripts/gorm-suite.sh
//
// The report is logged and written to $LEAFPROXY_ORM_SUITE_OUT when set.
package ormsuite

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

// expectedProxyFailure says why a GORM test is expected to fail through
// the proxy with keys filled ("" and false: not expected).
func expectedProxyFailure(name string) (string, bool) {
	return "", false
}

func TestMain(m *testing.M) { testdb.Main(m) }

func TestGORMSuite(t *testing.T) {
	src := os.Getenv("LEAFPROXY_GORM_SRC")
	if src == "" {
		t.Skip("set LEAFPROXY_GORM_SRC to a checkout of github.com/go-gorm/gorm (or run scripts/gorm-suite.sh) to run GORM's own suite through the proxy")
	}
	tests := filepath.Join(src, "tests")
	backend := testdb.StartWith(t, "--max-connections=300")
	// Both runs use database gorm (some tests name it), fresh for each.
	backend.Exec(t, "CREATE DATABASE gorm")
	proxyAddr := startProxy(t, backend.Addr, "gorm")

	direct := runSuite(t, tests, backend.Addr, "gorm", "direct")
	backend.Exec(t, "DROP DATABASE gorm", "CREATE DATABASE gorm")
	via := runSuite(t, tests, proxyAddr, "gorm", "via proxy, per_table pattern gorm.*")
	compare(t, "GORM tests (MySQL dialect, MariaDB)", `{table: "gorm.*", column: id, tag: app, per_table: true}`, direct, via)
}

// compare reports the tests that pass one way only and fails the test
// for one that passes directly and fails through the proxy, unless
// expectedProxyFailure explains it.
func compare(t *testing.T, suite, rule string, direct, via map[string]string) {
	t.Helper()
	var report strings.Builder
	var onlyProxy, onlyDirect, both []string
	for name, st := range direct {
		switch {
		case st == "pass" && via[name] == "fail":
			onlyProxy = append(onlyProxy, name)
		case st == "fail" && via[name] == "pass":
			onlyDirect = append(onlyDirect, name)
		case st == "fail" && via[name] == "fail":
			both = append(both, name)
		}
	}
	for name, st := range via {
		if _, ok := direct[name]; !ok && st == "fail" {
			onlyProxy = append(onlyProxy, name+" (not run directly)")
		}
	}
	sort.Strings(onlyProxy)
	sort.Strings(onlyDirect)
	sort.Strings(both)
	fmt.Fprintf(&report, "%s: direct %s; via proxy with %s %s\n", suite, summary(direct), rule, summary(via))
	var unexpected []string
	for _, n := range onlyProxy {
		if why, ok := expectedProxyFailure(n); ok {
			fmt.Fprintf(&report, "  fails only via proxy, expected (%s): %s\n", why, n)
			continue
		}
		fmt.Fprintf(&report, "  FAILS ONLY VIA PROXY: %s\n", n)
		unexpected = append(unexpected, n)
	}
	for _, n := range onlyDirect {
		fmt.Fprintf(&report, "  fails only direct: %s\n", n)
	}
	for _, n := range both {
		fmt.Fprintf(&report, "  fails both ways: %s\n", n)
	}
	t.Log("\n" + report.String())
	if out := os.Getenv("LEAFPROXY_ORM_SUITE_OUT"); out != "" {
		f, err := os.OpenFile(out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			_, err = f.WriteString(report.String())
			f.Close()
		}
		if err != nil {
			t.Error(err)
		}
	}
	if len(unexpected) > 0 {
		t.Errorf("%d tests pass directly and fail through the proxy: %s", len(unexpected), strings.Join(unexpected, ", "))
	}
}

func summary(m map[string]string) string {
	n := map[string]int{}
	for _, st := range m {
		n[st]++
	}
	return fmt.Sprintf("%d pass, %d fail, %d skip", n["pass"], n["fail"], n["skip"])
}

// startProxy runs the full leafproxy service in front of backend with one
// rule: every table of database db, a tag of its own per table, and the
// allocation store on another server. No
// proxy users: clients log in with the backend's own account (root).
func startProxy(t *testing.T, backend, db string) string {
	t.Helper()
	// The allocation store on a server of its own: the suites drop every
	// database they find (Sequelize's dropAllSchemas), the store's too
	// when it is on the backend.
	store := testdb.Start(t)
	cfg := config.Default()
	cfg.Sequences.Store = config.StoreList{store.DSN("leafproxy")}
	cfg.Listen = "127.0.0.1:0"
	cfg.Backend.Addr = backend
	cfg.Shutdown.Grace = config.Duration(2 * time.Second)
	cfg.Log.Level = "warn"
	cfg.Limits.LoginFailures = 100000
	cfg.Sequences.Tags = map[string]config.Tag{"app": {Generator: "segment"}}
	cfg.Tables = []config.Table{{Table: db + ".*", Column: "id", Tag: "app", PerTable: true}}
	cfg.ApplyDefaults()
	if err := service.ValidateConfig(cfg); err != nil {
		t.Fatal(err)
	}
	logw := os.Stderr
	if p := os.Getenv("LEAFPROXY_ORM_SUITE_LOG"); p != "" {
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
	t.Cleanup(func() { svc.Close() })
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go svc.Serve(context.Background(), l)
	return l.Addr().String()
}

// runSuite runs GORM's tests in dir against addr's database db and
// returns each test's (and subtest's) outcome: pass, fail or skip. A test
// binary that dies (a panic) ends the run: the tests it did not reach are
// missing, and the run is reported as a failure of "(panic)".
func runSuite(t *testing.T, dir, addr, db, label string) map[string]string {
	t.Helper()
	start := time.Now()
	timeout := os.Getenv("LEAFPROXY_ORM_SUITE_TIMEOUT")
	if timeout == "" {
		timeout = "20m"
	}
	cmd := exec.Command("go", "test", "-json", "-count=1", "-p=1", "-timeout", timeout, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "GORM_DIALECT=mysql",
		"GORM_DSN=root:@tcp("+addr+")/"+db+"?charset=utf8&parseTime=True&loc=Local")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, _ := cmd.Output()
	res := map[string]string{}
	output := map[string]*strings.Builder{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	panicked := false
	for sc.Scan() {
		var ev struct{ Action, Test, Output string }
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		if strings.HasPrefix(ev.Output, "panic: ") {
			panicked = true
		}
		if ev.Test == "" {
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
	if panicked {
		res["(panic)"] = "fail"
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

// TestSequelizeSuite runs Sequelize's integration suite (a checkout of
// github.com/sequelize/sequelize, branch v6, dependencies installed and
// built: LEAFPROXY_SEQUELIZE_SRC; see scripts/sequelize-suite.sh) with
// the MariaDB dialect, directly and through a leafproxy with one
// per_table pattern over its database, as TestGORMSuite.
func TestSequelizeSuite(t *testing.T) {
	src := os.Getenv("LEAFPROXY_SEQUELIZE_SRC")
	if src == "" {
		t.Skip("set LEAFPROXY_SEQUELIZE_SRC to a built checkout of github.com/sequelize/sequelize v6 (scripts/sequelize-suite.sh)")
	}
	backend := testdb.StartWith(t, "--max-connections=300")
	// The suite logs in as sequelize_test/sequelize_test (its defaults).
	backend.Exec(t, "CREATE DATABASE sequelize_test", "CREATE USER 'sequelize_test'@'%' IDENTIFIED BY 'sequelize_test'",
		"GRANT ALL ON *.* TO 'sequelize_test'@'%' WITH GRANT OPTION")
	proxyAddr := startProxy(t, backend.Addr, "sequelize_test")
	direct := runMocha(t, src, backend.Addr, "direct")
	backend.Exec(t, "DROP DATABASE sequelize_test", "CREATE DATABASE sequelize_test")
	via := runMocha(t, src, proxyAddr, "via proxy, per_table pattern sequelize_test.*")
	compare(t, "Sequelize v6 integration tests (mariadb dialect)", `{table: "sequelize_test.*", column: id, tag: app, per_table: true}`, direct, via)
}

// runMocha runs Sequelize's integration tests in src against addr with
// mocha's JSON reporter and returns each test's outcome by full title.
func runMocha(t *testing.T, src, addr, label string) map[string]string {
	t.Helper()
	start := time.Now()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(src, "node_modules", ".bin", "mocha"), "-r", "./test/registerEsbuild", "--reporter", "json",
		"test/integration/**/*.test.[tj]s")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "DIALECT=mariadb", "SEQ_MARIADB_HOST="+host, "SEQ_MARIADB_PORT="+port)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, _ := cmd.Output()
	i := bytes.Index(out, []byte("{\n  \"stats\""))
	if i < 0 {
		t.Fatalf("%s: no mocha report (%v)\n%s\n%s", label, cmd.ProcessState, tail(stderr.Bytes(), 4000), tail(out, 4000))
	}
	var rep struct {
		Tests []struct {
			FullTitle string
			Err       struct{ Message string }
		}
		Pending  []struct{ FullTitle string }
		Failures []struct {
			FullTitle string
			Err       struct{ Message string }
		}
	}
	if err := json.Unmarshal(out[i:], &rep); err != nil {
		t.Fatalf("%s: mocha report: %v", label, err)
	}
	res := map[string]string{}
	for _, x := range rep.Tests {
		res[x.FullTitle] = "pass"
	}
	for _, x := range rep.Pending {
		res[x.FullTitle] = "skip"
	}
	for _, x := range rep.Failures {
		res[x.FullTitle] = "fail"
		t.Logf("%s: %s failed: %s", label, x.FullTitle, firstLine(x.Err.Message))
	}
	t.Logf("%s: %s in %v", label, summary(res), time.Since(start).Round(time.Second))
	return res
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
