package layering

import (
	"bufio"
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/leafproxy/leafproxy"

// mayImport is, for each package of the product, the packages of this
// module it may import directly: the table of docs/ARCHITECTURE.md. A
// package of the product missing here fails the test, so a new one is
// placed in the layering when it is made. Test programs (integration,
// bench, loadgen, cmd/leafbench) and the test harnesses under
// internal/testkit import as needed.
var mayImport = map[string][]string{
	"config":              {"internal/nearname"},
	"allocator/schema":    nil,
	"allocator/segment":   {"allocator/schema", "internal/conflict", "internal/edge", "internal/nonblock"},
	"allocator/snowflake": {"internal/conflict", "internal/edge", "internal/nonblock"},
	"allocator": {"allocator/schema", "allocator/segment", "allocator/snowflake",
		"internal/conflict", "internal/errstyle", "internal/nearname", "internal/nonblock", "internal/sqltext", "internal/tablematch"},
	"allocator/runway":  {"allocator", "allocator/snowflake", "internal/tablematch"},
	"rewriter":          {"internal/errstyle", "internal/sqltext", "internal/tablematch", "rewriter/loadfile"},
	"rewriter/loadfile": nil,
	"proxy":             {"internal/edge", "internal/errstyle", "internal/killsql", "internal/metric", "internal/nonblock", "internal/raw", "internal/sqltext", "proxy/backend", "proxy/cmdstats", "proxy/eventloop", "proxy/frontdoor", "proxy/idle", "proxy/intercept", "proxy/kill", "proxy/lane", "proxy/login", "proxy/relay", "proxy/sessionend", "proxy/wire"},
	"proxy/backend":     {"internal/edge", "proxy/login", "proxy/wire"},
	"proxy/cmdstats":    {"internal/metric"},
	"proxy/idle":        {"proxy/wire"},
	"proxy/intercept":   {"proxy/wire"},
	"proxy/sessionend":  {"proxy/idle", "proxy/wire"},
	"proxy/kill":        {"internal/killsql", "internal/sqltext", "proxy/wire"},
	"proxy/login":       {"proxy/wire"},
	"proxy/wire":        {"internal/raw"},
	"proxy/eventloop":   {"internal/nonblock", "internal/raw"},
	"proxy/frontdoor":   {"proxy/eventloop", "proxy/login", "proxy/sessionend", "proxy/wire"},
	"proxy/lane":        {"proxy/eventloop", "proxy/wire"},
	"proxy/relay":       {"proxy/wire"},
	"engine":            {"internal/errstyle", "internal/metric", "internal/raw", "internal/sqltext", "proxy", "proxy/wire", "rewriter", "rewriter/loadfile"},
	"admin": {"allocator", "allocator/runway", "allocator/schema", "allocator/segment",
		"allocator/snowflake", "internal/sqltext", "proxy"},
	"service": {"admin", "allocator", "allocator/runway", "allocator/schema", "allocator/snowflake",
		"config", "engine", "idapi", "internal/buildinfo", "internal/metric", "internal/sqltext", "internal/tablematch", "proxy", "rewriter"},
	"idapi":               {"internal/errstyle"},
	"cmd/leafproxy":       {"allocator/snowflake", "config", "internal/buildinfo", "service"},
	"cmd/leafproxy-demo":  {"demo", "internal/buildinfo", "service"},
	"demo":                {"config", "service"},
	"internal/buildinfo":  nil,
	"internal/conflict":   nil,
	"internal/edge":       nil,
	"internal/errstyle":   nil,
	"internal/killsql":    {"internal/sqltext"},
	"internal/layering":   nil,
	"internal/metric":     nil,
	"internal/nearname":   nil,
	"internal/nonblock":   nil,
	"internal/raw":        nil,
	"internal/sqltext":    nil,
	"internal/tablematch": nil,
}

// asNeeded are the test programs: they may import anything. So may the
// harnesses under testkit (see testOnly).
var asNeeded = []string{"integration", "bench", "loadgen", "cmd/leafbench"}

// testkit is the folder of the test harnesses (internal/testkit/doc.go):
// packages only tests import. They may import anything; no non-test file
// outside the folder may import them (TestTestkitOnlyInTests).
const testkit = "internal/testkit"

// inTestkit reports whether path (relative to the module) is the testkit
// folder or a package under it.
func inTestkit(path string) bool {
	return path == testkit || strings.HasPrefix(path, testkit+"/")
}

// domain packages must not import config, not even in their tests: they
// take their own options, which the service builds from the YAML.
var domain = []string{"allocator", "allocator/runway", "allocator/schema", "allocator/segment",
	"allocator/snowflake", "proxy", "proxy/backend", "proxy/cmdstats", "proxy/eventloop", "proxy/frontdoor", "proxy/idle", "proxy/intercept", "proxy/kill", "proxy/lane", "proxy/login", "proxy/relay", "proxy/sessionend", "proxy/wire", "engine", "rewriter", "rewriter/loadfile", "admin"}

// pkg is one package as go list reports it, its imports of this module
// only, relative to the module ("" for none).
type pkg struct {
	path        string
	imports     []string // non-test files
	testImports []string // _test.go files, in-package and external
}

// goList runs go list -f format over every package of the module.
func goList(t *testing.T, format string) []byte {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the imports: %v", err)
	}
	cmd := exec.Command(gobin, "list", "-f", format, module+"/...")
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	return out
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	out := goList(t, "{{.ImportPath}}|{{join .Imports \" \"}}|{{join .TestImports \" \"}} {{join .XTestImports \" \"}}")
	own := func(list string) []string {
		var rel []string
		for _, p := range strings.Fields(list) {
			if r, ok := strings.CutPrefix(p, module+"/"); ok && !slices.Contains(rel, r) {
				rel = append(rel, r)
			}
		}
		slices.Sort(rel)
		return rel
	}
	var pkgs []pkg
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), "|", 3)
		if len(parts) != 3 {
			t.Fatalf("go list line %q", sc.Text())
		}
		path, _ := strings.CutPrefix(parts[0], module+"/")
		pkgs = append(pkgs, pkg{path: path, imports: own(parts[1]), testImports: own(parts[2])})
	}
	if len(pkgs) < len(mayImport) {
		t.Fatalf("go list found %d packages, fewer than the %d of the table", len(pkgs), len(mayImport))
	}
	return pkgs
}

// TestImportsRunOneWay: every package imports only what the table allows
// (so config imports no domain package and no domain package imports
// config), and no domain package's tests import config either.
func TestImportsRunOneWay(t *testing.T) {
	for _, p := range listPackages(t) {
		if slices.Contains(asNeeded, p.path) || inTestkit(p.path) {
			continue
		}
		allowed, ok := mayImport[p.path]
		if !ok {
			t.Errorf("package %s is not in the layering table (internal/layering and docs/ARCHITECTURE.md): place it there", p.path)
			continue
		}
		for _, imp := range p.imports {
			if !slices.Contains(allowed, imp) {
				t.Errorf("%s imports %s, which it may not (allowed: %v); see docs/ARCHITECTURE.md", p.path, imp, allowed)
			}
		}
		if slices.Contains(domain, p.path) && slices.Contains(p.testImports, "config") {
			t.Errorf("%s's tests import config: a domain package is tested through its own options", p.path)
		}
	}
}

// TestTestkitOnlyInTests: the harnesses under internal/testkit (throwaway
// MariaDB servers, the in-memory store, child-process proxies, waiting on
// conditions) are for tests only. A non-test file outside the folder that
// imports one would link a harness into the product (and fakestore imports
// allocator: the arrow would run back up the house).
func TestTestkitOnlyInTests(t *testing.T) {
	harnesses := 0
	for _, p := range listPackages(t) {
		if inTestkit(p.path) {
			harnesses++
			continue
		}
		for _, imp := range p.imports {
			if inTestkit(imp) {
				t.Errorf("%s imports %s in a non-test file: production code never imports %s/... (only _test.go files may)", p.path, imp, testkit)
			}
		}
	}
	if harnesses == 0 {
		t.Errorf("go list found no package under %s: the check would pass vacuously", testkit)
	}
}

// TestOneUnsafePackage: internal/raw is the only package of the module
// whose files (tests included) import unsafe, so every use of it sits
// behind one small, documented function.
func TestOneUnsafePackage(t *testing.T) {
	out := goList(t, "{{.ImportPath}} {{join .Imports \" \"}} {{join .TestImports \" \"}} {{join .XTestImports \" \"}}")
	var users []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) > 0 && slices.Contains(fields[1:], "unsafe") {
			users = append(users, strings.TrimPrefix(fields[0], module+"/"))
		}
	}
	if len(users) != 1 || users[0] != "internal/raw" {
		t.Errorf("packages importing unsafe: %v; only internal/raw may (put the use behind a function there)", users)
	}
}
