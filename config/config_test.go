package config

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestExampleFileLoads(t *testing.T) {
	c, err := Load("../leafproxy.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Sequences.WaitTimeout.D() != 2*time.Second || c.TagSettings("message").Generator != "snowflake" || len(c.Tables) != 1 {
		t.Fatalf("unexpected: %+v", c)
	}
}

func TestDefaults(t *testing.T) {
	c, err := Parse([]byte(""))
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:3307" || c.Sequences.DefaultStep != 1000 || c.Snowflake.TimeBits != 41 || *c.Snowflake.RandomStart != 100 {
		t.Fatalf("defaults: %+v", c)
	}
	if g := c.TagSettings("unlisted"); g.Generator != "segment" || g.Step != 1000 {
		t.Fatalf("unlisted tag: %+v", g)
	}
	if c.Limits.MaxPlanDepth != 1000 || c.Limits.PlanMemory != 256<<20 {
		t.Fatalf("plan limits: %+v", c.Limits)
	}
}

func TestValidationNamesTheKey(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"listen: nope", "listen:"},
		{"users: [{name: a, password: b}]\nadmins: [root]", "admins: applies only without users"},
		{"admins: [root, '']", "admins[1]: empty"},
		{"lisen: 1.2.3.4:1", `line 1: unknown key "lisen" (did you mean "listen"?)`},
		{"sequences: {wait_timeout: soon}", "not a duration"},
		{"sequences: {tags: {a: {generator: uuid}}}", "sequences.tags.a.generator"},
		{"snowflake: {worker_id: seven}", "snowflake.worker_id"},
		{"snowflake: {epoch: yesterday}", "snowflake.epoch"},
		{"users: [{name: a}, {name: a}]", "listed twice"},
		{"limits: {max_plan_depth: -1}", "limits.max_plan_depth: -1: must be at least 1"},
		{"limits: {plan_memory: 64KiB}", "limits.plan_memory: 65536 bytes: must be at least 1MiB"},
		{"limits: {session_prepared_memory: 1KiB}", "limits.session_prepared_memory: 1024 bytes: must be at least 64KiB"},
		{"limits: {session_prepared_memory: -1}", "limits.session_prepared_memory"},
		{"limits: {prepared_memory: 1MiB, session_prepared_memory: 2MiB}", "limits.prepared_memory: 1048576 bytes: must be at least limits.session_prepared_memory"},
		{"metrics: {listen: 9104}", "metrics.listen"},
		{"metrics: {listen: localhost}", "metrics.listen"},
	} {
		_, err := Parse([]byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want it to mention %q", tc.yaml, err, tc.want)
		}
	}
}

func TestMetricsListen(t *testing.T) {
	c, err := Parse([]byte(""))
	if err != nil || c.Metrics.Listen != "" {
		t.Fatalf("metrics must be off by default: %q, %v", c.Metrics.Listen, err)
	}
	c, err = Parse([]byte("metrics: {listen: \"127.0.0.1:9104\"}"))
	if err != nil || c.Metrics.Listen != "127.0.0.1:9104" {
		t.Fatalf("metrics.listen: %+v, %v", c.Metrics, err)
	}
	if _, err := Parse([]byte("metrics: {listen: \":0\"}")); err != nil {
		t.Fatalf("metrics.listen :0: %v", err)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load("/nonexistent/leafproxy.yaml")
	if err == nil || !os.IsNotExist(unwrapAll(err)) {
		t.Fatalf("err = %v", err)
	}
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}

// A backend on a Unix socket is reached over the socket by the allocation
// store too (sequences.store empty).
func TestStoreDSNOnUnixSocket(t *testing.T) {
	c := Default()
	c.Backend.Addr = "/run/mysqld/mysqld.sock"
	if got := c.StoreDSN(); !strings.Contains(got, "@unix(/run/mysqld/mysqld.sock)/leafproxy") {
		t.Errorf("StoreDSN = %q", got)
	}
	c.Backend.Addr = "127.0.0.1:3306"
	if got := c.StoreDSN(); !strings.Contains(got, "@tcp(127.0.0.1:3306)/leafproxy") {
		t.Errorf("StoreDSN = %q", got)
	}
}

// listen and backend.addr may be Unix socket paths.
func TestSocketPathsValid(t *testing.T) {
	c := Default()
	c.Listen, c.Backend.Addr = "/run/leafproxy/leafproxy.sock", "/run/mysqld/mysqld.sock"
	if err := c.Validate(); err != nil {
		t.Fatalf("socket paths refused: %v", err)
	}
}
