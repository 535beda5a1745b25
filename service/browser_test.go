package service_test

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
)

// chromium finds a headless-capable Chromium; scripts/test.sh installs
// Debian's when missing and run as root.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium not found: the status page's browser test needs it " +
		"(scripts/test.sh installs Debian's chromium when run as root; or apt-get install chromium)")
	return ""
}

// runChromium runs a headless Chromium with args plus the URL, killing its
// whole process group if it outlives the timeout, and returns its stdout.
func runChromium(t *testing.T, bin, url string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--no-first-run", "--no-default-browser-check", "--hide-scrollbars",
		"--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, bin, append(append(base, args...), url)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // helpers left behind, if any
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, tail(stderr.String(), 2000))
	}
	return string(out)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// TestStatusPageInBrowser loads the status page in headless Chromium, lets
// its script fetch status.json and render, and checks what a person would
// see: version, health, sessions, the worker, and each tag with its buffer
// drawn as a bar of the right width. LEAFPROXY_SCREENSHOT=file.png also
// saves a screenshot (docs/status-page.png is made so).
func TestStatusPageInBrowser(t *testing.T) {
	bin := chromium(t)
	backend := testdb.Start(t)
	cfg := testConfig(backend)
	cfg.Sequences.Tags = map[string]config.Tag{
		"order": {Generator: "segment"}, "invoice": {Generator: "segment", Step: 200},
		"message": {Generator: "snowflake"},
	}
	cfg.Tables = []config.Table{{Table: "shop.orders", Column: "id", Tag: "order"}, {Table: "shop.invoices", Column: "id", Tag: "invoice"}}
	cfg.ApplyDefaults()
	r := startService(t, cfg)
	db := r.client(t)
	db.SetMaxOpenConns(1)
	draw := func(tag string, n int) {
		for range n {
			var id int64
			if err := db.QueryRow("SELECT NEXTVAL('" + tag + "')").Scan(&id); err != nil {
				t.Fatal(err)
			}
		}
	}
	draw("order", 250)  // 75% of a 1000-ID segment left
	draw("message", 3)  // snowflake: no buffer
	draw("invoice", 10) // step 200: 95% left
	if err := db.QueryRow("SELECT NEXTVAL('audit')").Scan(new(int64)); err == nil {
		t.Fatal("NEXTVAL of a tag missing from leaf_alloc succeeded")
	}

	dom := runChromium(t, bin, r.Base+"/", "--virtual-time-budget=5000", "--dump-dom")
	if m := regexp.MustCompile(`data-updates="(\d+)"`).FindStringSubmatch(dom); m == nil || m[1] == "0" {
		t.Fatalf("the page's script did not render status.json:\n%s", tail(dom, 3000))
	}
	for _, want := range []string{
		"version 9.9.9-test", ">healthy<", "1 open", "worker 7", "fixed in the configuration",
		`data-tag="order"`, `data-tag="invoice"`, `data-tag="message"`, "fills shop.orders",
		`data-fill="75.0" style="width: 75%;"`, `data-fill="95.0"`, "750 of 1,000 left",
		"no buffer (time-based)", "listening on " + r.Addr, backend.Addr + "/leafproxy",
		// A snowflake tag's layout and worker, each tag's runway.
		`data-layout="default 41/10/12 x 1ms, epoch 2020-01-01T00:00:00Z"`, "· worker 7",
		`data-runway="order"`, " IDs left", "limit: BIGINT", "runs out 2089-09-06 15:47:35 UTC",
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered page lacks %q", want)
		}
	}
	if strings.Contains(dom, `data-tag="audit"`) {
		t.Errorf("a tag that was only looked up and found missing is listed")
	}
	if t.Failed() {
		t.Logf("DOM:\n%s", tail(dom, 6000))
	}

	if shot := os.Getenv("LEAFPROXY_SCREENSHOT"); shot != "" {
		runChromium(t, bin, r.Base+"/", "--virtual-time-budget=5000", "--window-size=1280,640", "--screenshot="+shot)
		if st, err := os.Stat(shot); err != nil || st.Size() == 0 {
			t.Fatalf("screenshot %s: %v", shot, err)
		}
	}
}
