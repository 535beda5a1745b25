package config

import (
	"strings"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/allocator/snowflake"
)

// TestTagLayouts (issue 20, item 3): a snowflake tag names its layout
// (js_safe, default, or explicit bits) and epoch; what it does not set
// comes from the snowflake section. Mistakes are refused at load, naming
// the key.
func TestTagLayouts(t *testing.T) {
	c, err := Parse([]byte(`
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
	for tag, want := range map[string]struct {
		l      snowflake.Layout
		source string
	}{
		"web":     {snowflake.Layout{TimeBits: 41, WorkerBits: 5, SequenceBits: 7, Unit: time.Millisecond, Epoch: e2021}, "this proxy's sequences.tags.web"},
		"web2024": {snowflake.Layout{TimeBits: 41, WorkerBits: 5, SequenceBits: 7, Unit: time.Millisecond, Epoch: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}, "sequences.tags.web2024"},
		"big":     {snowflake.Layout{TimeBits: 42, WorkerBits: 8, SequenceBits: 13, Unit: 10 * time.Millisecond, Epoch: e2021}, "sequences.tags.big"},
		"plain":   {snowflake.Layout{TimeBits: 40, WorkerBits: 11, SequenceBits: 12, Unit: time.Millisecond, Epoch: e2021}, "snowflake section, which sequences.tags.plain uses"},
		"std":     {snowflake.Layout{TimeBits: 41, WorkerBits: 10, SequenceBits: 12, Unit: time.Millisecond, Epoch: e2021}, "sequences.tags.std"},
	} {
		l, src, err := c.TagLayout(tag)
		if err != nil || !snowflake.SameLayout(l, want.l) || !strings.Contains(src, want.source) {
			t.Errorf("%s: %v (%s), %v; want %v (%s)", tag, l, src, err, want.l, want.source)
		}
	}
	if l, _, _ := c.TagLayout("web"); l.MaxID() >= 1<<53 || l.Name() != "js_safe" {
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
		_, err := Parse([]byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want it to mention %q", tc.yaml, err, tc.want)
		}
	}
	if _, err := Parse([]byte("sequences: {tags: {a: {generator: snowflake, layout: js_safe}}}\nsnowflake: {worker_id: 31}")); err != nil {
		t.Errorf("worker 31 under js_safe: %v", err)
	}
}
