package runway

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/allocator"
	"github.com/leafproxy/leafproxy/allocator/snowflake"
)

func TestColumnMax(t *testing.T) {
	for _, tc := range []struct {
		typ string
		max int64
		ok  bool
	}{
		{"int(11)", math.MaxInt32, true},
		{"int", math.MaxInt32, true},
		{"int(10) unsigned", math.MaxUint32, true},
		{"INT UNSIGNED", math.MaxUint32, true},
		{"tinyint(4)", 127, true},
		{"tinyint(3) unsigned", 255, true},
		{"smallint(6)", 32767, true},
		{"mediumint(8) unsigned", 16777215, true},
		{"bigint(20)", math.MaxInt64, true},
		{"bigint(20) unsigned", math.MaxInt64, true}, // IDs are BIGINT
		{"decimal(10,0)", 9_999_999_999, true},
		{"decimal(20,0) unsigned", math.MaxInt64, true},
		{"numeric(5)", 99999, true},
		{"decimal", 9_999_999_999, true},
		{"decimal(10,2)", 0, false},
		{"varchar(20)", 0, false},
		{"char(36)", 0, false},
	} {
		got, ok := ColumnMax(tc.typ)
		if got != tc.max || ok != tc.ok {
			t.Errorf("%s: %d %v, want %d %v", tc.typ, got, ok, tc.max, tc.ok)
		}
	}
}

func TestSegmentRunway(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	// An INT key at 2147483000 (max_id 2147483001: the next ID): 647 left.
	left, at := Segment(now, 2147483001, math.MaxInt32, 0)
	if left != 647 || !at.IsZero() {
		t.Errorf("no rate: %d %v", left, at)
	}
	left, at = Segment(now, 2147483001, math.MaxInt32, 10)
	if left != 647 || !at.Equal(now.Add(64700*time.Millisecond)) {
		t.Errorf("10/s: %d %v", left, at)
	}
	// A year of runway at 100 IDs per second.
	year := int64(365 * 24 * 3600 * 100)
	if left, at := Segment(now, 1, year, 100); left != year || !at.Equal(now.Add(365*24*time.Hour)) {
		t.Errorf("a year: %d %v", left, at)
	}
	// Beyond the column: nothing left, exhausted now.
	if left, at := Segment(now, math.MaxInt32+10, math.MaxInt32, 5); left != 0 || !at.Equal(now) {
		t.Errorf("past the column: %d %v", left, at)
	}
	// BIGINT at a trickle: no date (hundreds of years).
	if left, at := Segment(now, 1000, math.MaxInt64, 1); left != math.MaxInt64-999 || !at.IsZero() {
		t.Errorf("BIGINT: %d %v", left, at)
	}
}

func TestSnowflakeRunway(t *testing.T) {
	js := snowflake.JSSafeLayout()
	// At the epoch every ID of the layout is left; the time bits end 2^41 ms later.
	left, at := Snowflake(js.Epoch, js, math.MaxInt64)
	if left != 1<<53-1 || !at.Equal(js.End()) || at.Year() != 2089 {
		t.Errorf("js_safe at the epoch: %d %v", left, at)
	}
	now := js.Epoch.Add(1000 * time.Hour)
	left, _ = Snowflake(now, js, math.MaxInt64)
	if want := int64(1<<53-1) - js.Ticks(now)<<12; left != want {
		t.Errorf("js_safe later: %d, want %d", left, want)
	}
	// A default layout into a column of 2^53-1 runs out when the ticks
	// reach 2^31: 24.8 days after the epoch.
	def := snowflake.DefaultLayout()
	_, at = Snowflake(def.Epoch, def, 1<<53-1)
	if want := def.Epoch.Add((1 << 31) * time.Millisecond); !at.Equal(want) {
		t.Errorf("default into 53 bits: %v, want %v", at, want)
	}
	if left, _ := Snowflake(def.End().Add(time.Hour), def, math.MaxInt64); left != 0 {
		t.Errorf("after the end: %d", left)
	}
}

func TestRate(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := NewRate(time.Hour)
	if r.PerSecond() != 0 {
		t.Fatal("rate of nothing")
	}
	for i := range 600 { // a reading every 10 s for 100 minutes, 50 IDs per second
		r.Add(t0.Add(time.Duration(i)*10*time.Second), int64(i)*500)
	}
	if got := r.PerSecond(); math.Abs(got-50) > 0.01 {
		t.Errorf("steady 50/s: %v", got)
	}
	if len(r.samples) > 63 {
		t.Errorf("%d readings kept", len(r.samples))
	}
	// Segment-sized jumps: 1000 IDs every 20 minutes are 0.83/s.
	r = NewRate(time.Hour)
	for i := range 12 {
		r.Add(t0.Add(time.Duration(i)*10*time.Minute), int64(i/2)*1000)
	}
	if got := r.PerSecond(); math.Abs(got-1000.0/1200) > 0.1 {
		t.Errorf("jumps: %v", got)
	}
	// Moved back (dropped and created again): starts over.
	r.Add(t0.Add(3*time.Hour), 5)
	if r.PerSecond() != 0 {
		t.Errorf("after moving back: %v", r.PerSecond())
	}
}

type fakeSource struct {
	mu   sync.Mutex
	rows map[string]allocator.StoreRow
	snow map[string]snowflake.Layout
}

func (f *fakeSource) StoreRows(context.Context) (map[string]allocator.StoreRow, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]allocator.StoreRow{}
	for k, v := range f.rows {
		out[k] = v
	}
	return out, nil
}

func (f *fakeSource) SnowflakeTags() []string {
	var out []string
	for t := range f.snow {
		out = append(out, t)
	}
	return out
}

func (f *fakeSource) Layout(tag string) (snowflake.Layout, bool) {
	l, ok := f.snow[tag]
	return l, ok
}

// TestMonitorWarnsAtStartAndDaily: with an injected clock and a store
// whose max_id moves at a steady rate, the monitor computes ids_left and
// the exhaustion date, warns at the first computation for a tag with less
// than a year left, not again the same day, again a day later; a tag with
// plenty left is never warned about.
func TestMonitorWarnsAtStartAndDaily(t *testing.T) {
	now := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	src := &fakeSource{
		rows: map[string]allocator.StoreRow{"small": {MaxID: 1_000_000_001}, "big": {MaxID: 1}},
		snow: map[string]snowflake.Layout{"web": snowflake.JSSafeLayout()},
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	cols := map[string]Column{"small": {Name: "shop.small.id int(11)", Max: math.MaxInt32}, "web": {Name: "shop.web.id bigint(20)", Max: math.MaxInt64}}
	reads := 0
	m := New(src, func() *allocator.Config { return &allocator.Config{} }, Options{Now: clock, Logger: log,
		Columns: func(context.Context, *allocator.Config) (map[string]Column, error) { reads++; return cols, nil }})
	step := func(d time.Duration, addSmall int64) {
		now = now.Add(d)
		src.mu.Lock()
		r := src.rows["small"]
		r.MaxID += addSmall
		src.rows["small"] = r
		src.mu.Unlock()
		if err := m.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	step(0, 0)
	e, ok := m.Get("small")
	if !ok || e.IDsLeft != math.MaxInt32-1_000_000_000 || e.LimitedBy != "shop.small.id int(11)" || !e.ExhaustedAt.IsZero() {
		t.Fatalf("small at start: %+v", e)
	}
	if strings.Contains(logs.String(), "tag=small") {
		t.Fatalf("warned without a rate:\n%s", logs.String())
	}
	// 1000 IDs a second: 1,147,483,647 left last 13.3 days.
	step(time.Minute, 60_000)
	e, _ = m.Get("small")
	if math.Abs(e.PerSecond-1000) > 1 || e.ExhaustedAt.Sub(now) < 318*time.Hour || e.ExhaustedAt.Sub(now) > 320*time.Hour {
		t.Fatalf("small at 1000/s: %+v", e)
	}
	if n := strings.Count(logs.String(), "tag=small"); n != 1 || !strings.Contains(logs.String(), "runs out of IDs in less than a year") {
		t.Fatalf("%d warnings after the first estimate:\n%s", n, logs.String())
	}
	step(time.Hour, 3_600_000)
	if n := strings.Count(logs.String(), "tag=small"); n != 1 {
		t.Fatalf("warned again within the day (%d):\n%s", n, logs.String())
	}
	step(23*time.Hour, 1000*23*3600)
	if n := strings.Count(logs.String(), "tag=small"); n != 2 {
		t.Fatalf("%d warnings a day later:\n%s", n, logs.String())
	}
	if strings.Contains(logs.String(), "tag=big") || strings.Contains(logs.String(), "tag=web") {
		t.Fatalf("warned about tags with decades left:\n%s", logs.String())
	}
	if b, _ := m.Get("big"); b.IDsLeft != math.MaxInt64 || b.LimitedBy != "BIGINT" {
		t.Errorf("big: %+v", b)
	}
	w, _ := m.Get("web")
	if w.Generator != "snowflake" || w.ExhaustedAt.Year() != 2089 || w.IDsLeft <= 0 || w.IDsLeft >= 1<<53 || !strings.HasPrefix(w.LimitedBy, "layout 41/5/7") {
		t.Errorf("web: %+v", w)
	}
	if reads != 3 { // at start, after 61 minutes and after a day: not every minute
		t.Errorf("column types read %d times", reads)
	}
	// Used up: a warning that says so.
	src.rows["small"] = allocator.StoreRow{MaxID: math.MaxInt32 + 1}
	now = now.Add(25 * time.Hour)
	m.Refresh(context.Background())
	if e, _ := m.Get("small"); e.IDsLeft != 0 || !strings.Contains(logs.String(), "sequence has no IDs left") {
		t.Errorf("used up: %+v\n%s", e, logs.String())
	}
	if len(m.All()) != 3 {
		t.Errorf("All: %v", m.All())
	}
}

// TestMonitorWarnsByWhatIsLeft: a fresh monitor (no rate yet) warns about
// a tag with under 1% of its column's range left, says so in Level, warns
// again at once when the tag runs out, and re-reads the column types
// after Invalidate (a reload, a DDL statement), passing them to Limits.
func TestMonitorWarnsByWhatIsLeft(t *testing.T) {
	now := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	src := &fakeSource{rows: map[string]allocator.StoreRow{"small": {MaxID: math.MaxInt32 - 366}, "mid": {MaxID: 2_000_000_001}}}
	var logs bytes.Buffer
	cols := map[string]Column{
		"small": {Name: "shop.small.id int(11)", Max: math.MaxInt32, Widest: math.MaxInt32, WidestName: "shop.small.id int(11)"},
		"mid":   {Name: "shop.mid.id int(11)", Max: math.MaxInt32, Widest: math.MaxInt64, WidestName: "shop.big.id bigint(20)"},
	}
	var mu sync.Mutex
	reads, limits := 0, map[string]Column(nil)
	m := New(src, func() *allocator.Config { return &allocator.Config{} }, Options{
		Now: func() time.Time { return now }, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Columns: func(context.Context, *allocator.Config) (map[string]Column, error) {
			mu.Lock()
			defer mu.Unlock()
			reads++
			return cols, nil
		},
		Limits: func(c map[string]Column) { limits = c },
	})
	if err := m.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	e, _ := m.Get("small")
	if e.IDsLeft != 367 || e.Level != LevelCritical || !e.ExhaustedAt.IsZero() {
		t.Fatalf("small: %+v", e)
	}
	if !strings.Contains(logs.String(), "less than 1% of its key column's range left") || !strings.Contains(logs.String(), "tag=small") {
		t.Fatalf("no warning for 367 IDs left without a rate:\n%s", logs.String())
	}
	if e, _ := m.Get("mid"); e.Level != LevelLow || !strings.Contains(logs.String(), "less than 10%") {
		t.Fatalf("mid: %+v\n%s", e, logs.String())
	}
	if limits["mid"].Widest != math.MaxInt64 || limits["small"].Widest != math.MaxInt32 {
		t.Fatalf("limits: %+v", limits)
	}
	// Used up within the day: warned again at once.
	src.rows["small"] = allocator.StoreRow{MaxID: math.MaxInt32 + 1}
	now = now.Add(time.Minute)
	m.Refresh(context.Background())
	if e, _ := m.Get("small"); e.Level != LevelExhausted || !strings.Contains(logs.String(), "sequence has no IDs left") {
		t.Fatalf("used up: %+v\n%s", e, logs.String())
	}
	n := strings.Count(logs.String(), "tag=small")
	now = now.Add(time.Minute)
	m.Refresh(context.Background())
	if strings.Count(logs.String(), "tag=small") != n {
		t.Fatalf("warned again within the day:\n%s", logs.String())
	}
	// A reload: the column was widened; read again before ColumnsEvery.
	mu.Lock()
	cols = map[string]Column{"small": {Name: "shop.small.id bigint(20)", Max: math.MaxInt64, Widest: math.MaxInt64}}
	r0 := reads
	mu.Unlock()
	m.Invalidate()
	m.Refresh(context.Background())
	if e, _ := m.Get("small"); reads != r0+1 || e.Level != LevelOK || e.LimitedBy != "shop.small.id bigint(20)" {
		t.Fatalf("after Invalidate (%d reads): %+v", reads-r0, e)
	}
	if _, ok := limits["mid"]; ok {
		t.Fatalf("limits kept a tag without rules: %+v", limits)
	}
}

func TestLevelOf(t *testing.T) {
	for _, tc := range []struct {
		left, limit int64
		want        string
	}{{0, 100, LevelExhausted}, {1, 1000, LevelCritical}, {9, 1000, LevelCritical}, {10, 1000, LevelLow}, {99, 1000, LevelLow}, {100, 1000, LevelOK}, {5, 0, LevelOK}} {
		if got := LevelOf(tc.left, tc.limit); got != tc.want {
			t.Errorf("LevelOf(%d, %d) = %s, want %s", tc.left, tc.limit, got, tc.want)
		}
	}
}
