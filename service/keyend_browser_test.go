package service_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

// TestStatusPageTagAtEnd: a tag whose INT key column is full (its table
// holds 2^31-1, so the tag starts past it) is shown "at end" on the status
// page, whose health card says "degraded" and names it, not "healthy".
func TestStatusPageTagAtEnd(t *testing.T) {
	bin := chromium(t)
	backend := testdb.Start(t)
	backend.Exec(t, "CREATE DATABASE shop", "CREATE TABLE shop.small (id INT PRIMARY KEY, v INT)",
		"INSERT INTO shop.small VALUES (2147483647, 1)")
	cfg := testConfig(backend)
	cfg.Sequences.Tags = map[string]config.Tag{"small": {Generator: "segment"}}
	cfg.Tables = []config.Table{{Table: "shop.small", Column: "id", Tag: "small"}}
	cfg.ApplyDefaults()
	r := startService(t, cfg)
	// The runway's first computation runs as the service starts.
	testwait.For(t, "small at its end", func() bool {
		st := r.Svc.Status(t.Context())
		return len(st.Tags) == 1 && st.Tags[0].State == "at end"
	}, testwait.Detail(func() string { return fmt.Sprintf("%+v", r.Svc.Status(t.Context()).Tags) }))

	dom := runChromium(t, bin, r.Base+"/", "--virtual-time-budget=5000", "--dump-dom")
	for _, want := range []string{`data-tag="small"`, ">at end<", ">degraded<", "tag 'small' has no ID left that shop.small.id int(11) holds"} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered page lacks %q", want)
		}
	}
	if strings.Contains(dom, ">healthy<") {
		t.Errorf("the page says healthy while small is at its end")
	}
	if t.Failed() {
		t.Logf("DOM:\n%s", tail(dom, 6000))
	}
}
