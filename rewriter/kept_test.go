package rewriter

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

// A kept prepared plan is a few dozen bytes a row (issue 29: ~205 before),
// and rendering one by mistake is an error, not a crash.
func TestKeptPlanCompact(t *testing.T) {
	env := testEnv(t, Mode{})
	const rows = 1000
	text := "INSERT INTO orders (v) VALUES (?)" + strings.Repeat(", (?)", rows-1)
	p, err := PlanPrepare(text, env)
	if err != nil || p.Kind != Rewrite || len(p.Slots) != rows {
		t.Fatalf("plan: %v %v %d slots", err, p.Kind, len(p.Slots))
	}
	full := p.Size()
	k := p.Keep()
	kept := k.Size()
	t.Logf("1,000-row (?) INSERT: plan %d bytes, kept %d (%d a row)", full, kept, kept/rows)
	if kept/rows > 64 {
		t.Errorf("kept plan: %d bytes a row, want at most 64", kept/rows)
	}
	if len(k.Slots) != rows || k.Params != p.Params || k.ClientParams != p.ClientParams || len(k.Tags) != 1 || k.Tags[0].N != rows {
		t.Fatalf("kept plan lost what an EXECUTE reads: %+v", k.Tags)
	}
	var rerr *Error
	if out, err := k.Render([]byte("x"), text, nil); !errors.As(err, &rerr) || rerr.Code() != CodeUnknown || string(out) != "x" ||
		!strings.Contains(err.Error(), "kept plan") {
		t.Errorf("Render of a kept plan: %q, %v; want dst untouched and a 1105 naming the kept plan", out, err)
	}
	var w strings.Builder
	if _, err := k.WriteTo(&w, nil, text, nil); !errors.As(err, &rerr) || rerr.Code() != CodeUnknown || w.Len() != 0 {
		t.Errorf("WriteTo of a kept plan: wrote %d bytes, %v; want nothing and a 1105", w.Len(), err)
	}
}

func TestAppendID(t *testing.T) {
	for _, v := range []int64{0, 1, 9, 10, 99, 100, 101, 999, 1000, 12345, 1 << 31, 1<<63 - 1, -1, -10, -1 << 63, 1_000_000_000_000_000_000} {
		want := strconv.AppendInt([]byte("x"), v, 10)
		if got := appendID([]byte("x"), v); string(got) != string(want) {
			t.Errorf("appendID(%d) = %q, want %q", v, got, want)
		}
		if got := intLen(v); got != len(want)-1 {
			t.Errorf("intLen(%d) = %d, want %d", v, got, len(want)-1)
		}
	}
}
