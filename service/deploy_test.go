package service_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
)

// TestDeployReferencesExportedMetrics: the Grafana dashboard, the alert
// rules and their promtool tests (deploy/) name only metrics the proxy
// exports, every collector included (the HTTP ID API's too), whether or
// not a series exists yet; and the alerts cover what an operator must act
// on.
func TestDeployReferencesExportedMetrics(t *testing.T) {
	backend := testdb.Start(t)
	r := startAPI(t, apiConfig(backend))
	exported := map[string]bool{}
	descs := make(chan *prometheus.Desc, 64)
	go func() {
		r.Svc.Registry().Describe(descs)
		close(descs)
	}()
	fq := regexp.MustCompile(`fqName: "([a-zA-Z0-9_:]+)"`)
	for d := range descs {
		m := fq.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("no name in %s", d)
		}
		exported[m[1]] = true
	}
	if !exported["leafproxy_store_up"] || !exported["leafproxy_id_api_requests_total"] || !exported["process_cpu_seconds_total"] {
		t.Fatalf("the registry describes too little: %v", exported)
	}
	// A histogram's series: name_bucket, name_count, name_sum.
	known := func(name string) bool {
		if exported[name] {
			return true
		}
		for _, sfx := range []string{"_bucket", "_count", "_sum"} {
			if base, ok := strings.CutSuffix(name, sfx); ok && exported[base] {
				return true
			}
		}
		return false
	}
	ref := regexp.MustCompile(`\b(?:leafproxy|go|process)_[a-z0-9_]+`)
	check := func(file, text string) []string {
		var names []string
		for _, n := range ref.FindAllString(text, -1) {
			if !known(n) {
				t.Errorf("%s: %s is not a metric the proxy exports", file, n)
			}
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
		if len(names) == 0 {
			t.Errorf("%s: no metric referenced", file)
		}
		return names
	}

	// The dashboard: every query of every panel.
	b, err := os.ReadFile("../deploy/grafana/leafproxy.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	var exprs []string
	for _, p := range dash.Panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("dashboard panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	used := check("deploy/grafana/leafproxy.json", strings.Join(exprs, "\n"))
	// Every leafproxy metric has a panel.
	for name := range exported {
		if strings.HasPrefix(name, "leafproxy_") && name != "leafproxy_build_info" && !slices.ContainsFunc(used, func(u string) bool { return strings.HasPrefix(u, name) }) {
			t.Errorf("deploy/grafana/leafproxy.json: no panel shows %s", name)
		}
	}

	// The alert rules and their tests.
	rules, err := os.ReadFile("../deploy/prometheus/leafproxy-alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	check("deploy/prometheus/leafproxy-alerts.yml", string(rules))
	tests, err := os.ReadFile("../deploy/prometheus/leafproxy-alerts.test.yml")
	if err != nil {
		t.Fatal(err)
	}
	check("deploy/prometheus/leafproxy-alerts.test.yml", string(tests))
	for _, alert := range []string{"LeafproxyRunwayLow", "LeafproxyStoreDown", "LeafproxyBackendDown", "LeafproxySnowflakeFenced",
		"LeafproxyDuplicateKeyRetries", "LeafproxyClientErrorRateHigh", "LeafproxyIDAPIRefusals", "LeafproxyLoginThrottling"} {
		if !strings.Contains(string(rules), "alert: "+alert+"\n") {
			t.Errorf("no alert %s", alert)
		}
		if !strings.Contains(string(tests), "alertname: "+alert+"\n") {
			t.Errorf("alert %s has no promtool test", alert)
		}
	}
}
