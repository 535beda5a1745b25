package service_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

// TestStatusPageProblemsFirst: the status page opens with the problems,
// one line each with what to do (here: none, then the backend and the
// store down), and reads well from 1,000 to 1,920 pixels wide: nothing
// wider than the window at either width, checked on the rendered page and
// in screenshots (LEAFPROXY_SCREENSHOT_DIR keeps them).
func TestStatusPageProblemsFirst(t *testing.T) {
	bin := chromium(t)
	backend := testdb.Start(t)
	cfg := testConfig(backend)
	r := startService(t, cfg)
	db := r.client(t)
	for _, q := range []string{"SELECT NEXTVAL('t')", "SELECT NEXTVAL('s')"} {
		if err := db.QueryRow(q).Scan(new(int64)); err != nil {
			t.Fatal(err)
		}
	}
	dir := os.Getenv("LEAFPROXY_SCREENSHOT_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	load := func(width string) string {
		t.Helper()
		dom := runChromium(t, bin, r.Base+"/", "--virtual-time-budget=5000", "--window-size="+width+",900", "--dump-dom")
		if m := regexp.MustCompile(`data-updates="(\d+)"`).FindStringSubmatch(dom); m == nil || m[1] == "0" {
			t.Fatalf("the page's script did not render status.json:\n%s", tail(dom, 3000))
		}
		if !strings.Contains(dom, `data-overflow="0"`) {
			t.Errorf("at %s px the page is wider than the window", width)
		}
		// Problems come before the tags and the workers.
		p, tags, workers := strings.Index(dom, `id="problems"`), strings.Index(dom, `id="tags"`), strings.Index(dom, `id="workers"`)
		if p < 0 || tags < p || workers < tags {
			t.Errorf("order: problems at %d, tags at %d, workers at %d", p, tags, workers)
		}
		return dom
	}
	for _, width := range []string{"1000", "1280", "1920"} {
		dom := load(width)
		for _, want := range []string{`data-problem="none"`, "No problems", `data-worker="default: 1 sign + 41 time + 10 worker + 12 sequence bits`, "worker 7", "fixed in the configuration", `data-tag="t"`} {
			if !strings.Contains(dom, want) {
				t.Errorf("at %s px the page lacks %q", width, want)
			}
		}
		shot := filepath.Join(dir, "status-"+width+".png")
		runChromium(t, bin, r.Base+"/", "--virtual-time-budget=5000", "--window-size="+width+",900", "--screenshot="+shot)
		if st, err := os.Stat(shot); err != nil || st.Size() == 0 {
			t.Fatalf("screenshot %s: %v", shot, err)
		}
	}

	backend.Stop(t)
	// The page reads /status.json, whose health is cached for a second:
	// load it once the proxy has seen the backend down (a loaded machine
	// may have probed while the server was still stopping).
	testwait.For(t, "status.json to report the backend down", func() bool {
		resp, err := http.Get(r.Base + "/status.json")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var st struct {
			Health struct {
				Backend struct{ OK bool } `json:"backend"`
			} `json:"health"`
		}
		return json.NewDecoder(resp.Body).Decode(&st) == nil && !st.Health.Backend.OK
	})
	dom := load("1000")
	for _, want := range []string{`data-problem="backend"`, "Clients get 1429 until it answers", `data-problem="store"`, "fix sequences.store"} {
		if !strings.Contains(dom, want) {
			t.Errorf("with the backend stopped the page lacks %q", want)
		}
	}
	if strings.Contains(dom, `data-problem="none"`) {
		t.Error("with the backend stopped the page says there are no problems")
	}
	if t.Failed() {
		t.Logf("DOM:\n%s", tail(dom, 6000))
	}
	backend.Restart(t) // the service's Close releases the worker lease there
}
