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
		{"tables: [{table: t, column: id}]", "tables[0].tag"},
		{"tables: [{table: t, column: id, tag: a}, {table: t, column: id, tag: b}]", `tables[1].table: "t" has two rules (tables[0] is the other)`},
		{"snowflake: {time_bits: 50, worker_bits: 10, sequence_bits: 12}", "at most 63"},
		{"snowflake: {time_bits: 1, worker_bits: 10, sequence_bits: 12}", "time bits 1: need at least 16"}, // the layout's limits, at load
		{"snowflake: {time_bits: 41, worker_bits: -1, sequence_bits: 12}", "none may be negative"},
		{"snowflake: {time_unit: 1us}", "time unit 1µs: at least 1ms"},
		{"snowflake: {worker_id: seven}", "snowflake.worker_id"},
		{"snowflake: {epoch: yesterday}", "snowflake.epoch"},
		{"users: [{name: a}, {name: a}]", "listed twice"},
		{"limits: {max_plan_depth: -1}", "limits.max_plan_depth: -1: must be at least 1"},
		{"limits: {plan_memory: 64KiB}", "limits.plan_memory: 65536 bytes: must be at least 1MiB"},
		{"metrics: {listen: 9104}", "metrics.listen"},
		{"metrics: {listen: localhost}", "metrics.listen"},
		{"tables: [{table: t, column: id, tag: " + strings.Repeat("x", 129) + "}]", "tables[0].tag"},
		{"sequences: {tags: {" + strings.Repeat("标", 129) + ": {}}}", "at most 128 characters"},
	} {
		_, err := Parse([]byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want it to mention %q", tc.yaml, err, tc.want)
		}
	}
}

// TestTablePatterns: shell-style patterns in either part of tables[].table
// load; a bad one is refused at load, naming the rule, the part and what is
// wrong; names that differ only in case are two rules (two tables on a
// backend with lower_case_table_names=0).
func TestTablePatterns(t *testing.T) {
	good := "tables:\n" +
		"  - {table: \"shop_*.orders_*\", column: id, tag: order}\n" +
		"  - {table: \"orders_?\", column: id, tag: order}\n" +
		"  - {table: \"arch_[0-9][!a].log\", column: id, tag: log}\n" +
		"  - {table: Mixed, column: id, tag: m}\n" +
		"  - {table: mixed, column: id, tag: m2}\n"
	c, err := Parse([]byte(good))
	if err != nil {
		t.Fatalf("patterns refused: %v", err)
	}
	if len(c.Tables) != 5 || c.Tables[0].Table != "shop_*.orders_*" {
		t.Fatalf("tables: %+v", c.Tables)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"tables:\n  - {table: \"shop_[0-9.orders_*\", column: id, tag: order}",
			`line 2: tables[0].table: "shop_[0-9.orders_*": the database part "shop_[0-9" is not a valid pattern: [ without its ] (write \[ for the character)`},
		{"tables:\n  - {table: a, column: id, tag: a}\n  - {table: \"orders_[]\", column: id, tag: order}",
			`line 3: tables[1].table: "orders_[]": the table part "orders_[]" is not a valid pattern: an empty set []`},
		{"tables:\n  - {table: \"shop.orders_[z-a]\", column: id, tag: order}", "a range [z-a] that runs backwards"},
		{"tables:\n  - {table: 'orders_\\', column: id, tag: order}", `it ends in \`},
		{"tables:\n  - {table: \"orders_*]\", column: id, tag: order}", `] without its [`},
		{"tables:\n  - {table: \"s_*.o_*\", column: id, tag: a}\n  - {table: \"s_*.o_*\", column: k, tag: b}", `tables[1].table: "s_*.o_*" has two rules`},
		{"tables:\n  - {table: \"a.b.c_*\", column: id, tag: a}", "must be table or db.table"},
	} {
		_, err := Parse([]byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want it to mention %q", tc.yaml, err, tc.want)
		}
	}
}

// Tag names of up to 128 characters (not bytes) in any script are valid.
func TestTagNamesInAnyScript(t *testing.T) {
	long := strings.Repeat("标", 128)
	if _, err := Parse([]byte("sequences: {tags: {订单: {}, " + long + ": {}}}\ntables: [{table: t, column: id, tag: 订单}]")); err != nil {
		t.Errorf("non-latin1 tag names refused: %v", err)
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
