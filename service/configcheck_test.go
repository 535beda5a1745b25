package service_test

import (
	"strings"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/allocator/snowflake"
	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/service"
)

// The rules the domain packages own, run at load by DomainRules: each
// problem names its key and line as the config package's own do.

// TestTagLayouts: a snowflake tag names its layout (js_safe, default, or
// explicit bits) and epoch; what it does not set comes from the snowflake
// section. Mistakes are refused at load, naming the key.
func TestTagLayouts(t *testing.T) {
	c, err := service.ParseConfig([]byte(`
snowflake: {epoch: "2021-01-01T00:00:00Z", time_bits: 40, worker_bits: 11, sequence_bits: 12}
sequences:
  tags:
    web: {generator: snowflake, layout: js_safe}
    web2024: {generator: snowflake, layout: js_safe, epoch: "2024-01-01T00:00:00Z"}
    big: {generator: snowflake, time_bits: 42, worker_bits: 8, sequence_bits: 13, time_unit: 10ms}
    plain: {generator: snowflake}
    std: {generator: snowflake, layout: default}
`))
	if err != nil {
		t.Fatal(err)
	}
	e2021 := time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)
	ac, err := service.AllocatorConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	for tag, want := range map[string]struct {
		l   snowflake.Layout
		own bool
	}{
		"web":     {snowflake.Layout{TimeBits: 41, WorkerBits: 5, SequenceBits: 7, Unit: time.Millisecond, Epoch: e2021}, true},
		"web2024": {snowflake.Layout{TimeBits: 41, WorkerBits: 5, SequenceBits: 7, Unit: time.Millisecond, Epoch: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}, true},
		"big":     {snowflake.Layout{TimeBits: 42, WorkerBits: 8, SequenceBits: 13, Unit: 10 * time.Millisecond, Epoch: e2021}, true},
		"plain":   {snowflake.Layout{TimeBits: 40, WorkerBits: 11, SequenceBits: 12, Unit: time.Millisecond, Epoch: e2021}, false},
		"std":     {snowflake.Layout{TimeBits: 41, WorkerBits: 10, SequenceBits: 12, Unit: time.Millisecond, Epoch: e2021}, true},
	} {
		l, err := service.TagLayout(c, tag)
		if err != nil || !snowflake.SameLayout(l, want.l) {
			t.Errorf("%s: %v, %v; want %v", tag, l, err, want.l)
		}
		if at := ac.Tags[tag]; at.Generator != "snowflake" || !snowflake.SameLayout(at.Layout, want.l) || at.OwnLayout != want.own {
			t.Errorf("%s as the allocator's: %+v; want layout %v, own %v", tag, at, want.l, want.own)
		}
	}
	if l, _ := service.TagLayout(c, "web"); l.MaxID() >= 1<<53 || l.Name() != "js_safe" {
		t.Errorf("js_safe: largest ID %d, name %s", l.MaxID(), l.Name())
	}

	for _, tc := range []struct{ yaml, want string }{
		{"sequences: {tags: {a: {layout: js_safe}}}", "sequences.tags.a: layout, time_bits, worker_bits, sequence_bits, time_unit and epoch apply to snowflake tags only"},
		{"sequences: {tags: {a: {generator: snowflake, layout: js}}}", `sequences.tags.a: layout "js" is not default or js_safe`},
		{"sequences: {tags: {a: {generator: snowflake, layout: js_safe, time_bits: 41}}}", "exclude each other"},
		{"sequences: {tags: {a: {generator: snowflake, time_bits: 41}}}", "set all three"},
		{"sequences: {tags: {a: {generator: snowflake, time_bits: 50, worker_bits: 10, sequence_bits: 12}}}", "sequences.tags.a: invalid snowflake layout: time+worker+sequence bits = 72: at most 63"},
		{"sequences: {tags: {a: {generator: snowflake, epoch: soon}}}", `sequences.tags.a: epoch: "soon" is not an RFC 3339 time`},
		{"sequences: {tags: {a: {generator: snowflake, layout: js_safe}}}\nsnowflake: {worker_id: 40}", "snowflake.worker_id: 40 does not fit the layout of sequences.tags.a (5 worker bits: 0 to 31)"},
		{"sequences: {tags: {a: {generator: snowflake, layot: js_safe}}}", `unknown key "layot" (did you mean "layout"?)`},
	} {
		_, err := service.ParseConfig([]byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want it to mention %q", tc.yaml, err, tc.want)
		}
	}
	if _, err := service.ParseConfig([]byte("sequences: {tags: {a: {generator: snowflake, layout: js_safe}}}\nsnowflake: {worker_id: 31}")); err != nil {
		t.Errorf("worker 31 under js_safe: %v", err)
	}
}

// TestDomainRulesNameTheKey: table rules, tag names and the snowflake
// section's layout are refused at load, each naming its key; a
// configuration without DomainRules (config.Parse alone) takes them.
func TestDomainRulesNameTheKey(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"tables: [{table: t, column: id}]", "tables[0].tag"},
		{"tables: [{table: t, column: id, tag: a}, {table: t, column: id, tag: b}]", `tables[1].table: "t" has two rules (tables[0] is the other)`},
		{"snowflake: {time_bits: 50, worker_bits: 10, sequence_bits: 12}", "at most 63"},
		{"snowflake: {time_bits: 1, worker_bits: 10, sequence_bits: 12}", "time bits 1: need at least 16"}, // the layout's limits, at load
		{"snowflake: {time_bits: 41, worker_bits: -1, sequence_bits: 12}", "none may be negative"},
		{"snowflake: {time_unit: 1us}", "time unit 1µs: at least 1ms"},
		{"tables: [{table: t, column: id, tag: " + strings.Repeat("x", 129) + "}]", "tables[0].tag"},
		{"sequences: {tags: {" + strings.Repeat("标", 129) + ": {}}}", "at most 128 characters"},
	} {
		_, err := service.ParseConfig([]byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want it to mention %q", tc.yaml, err, tc.want)
		}
		if _, err := config.Parse([]byte(tc.yaml)); err != nil {
			t.Errorf("%q: config.Parse alone: %v", tc.yaml, err)
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
	c, err := service.ParseConfig([]byte(good))
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
		_, err := service.ParseConfig([]byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want it to mention %q", tc.yaml, err, tc.want)
		}
	}
}

// Tag names of up to 128 characters (not bytes) in any script are valid.
func TestTagNamesInAnyScript(t *testing.T) {
	long := strings.Repeat("标", 128)
	if _, err := service.ParseConfig([]byte("sequences: {tags: {订单: {}, " + long + ": {}}}\ntables: [{table: t, column: id, tag: 订单}]")); err != nil {
		t.Errorf("non-latin1 tag names refused: %v", err)
	}
}
