// Package runway tells how long each tag's IDs last: how many are left
// before the smallest key column filled from the tag overflows (or, for a
// snowflake tag, before its time bits end), and, at the rate the IDs are
// used, when that will be.
//
// The arithmetic is here (ColumnMax, Segment, Snowflake, Rate); Monitor
// recomputes every tag in the background (column types from
// information_schema, the store's max_id), never on a statement's path.
//
// What "used" means: for a segment tag, leaf_alloc.max_id, the end of the
// last segment any proxy fetched. It is what runs out: IDs below it are
// never handed out again, whether a proxy issued them, holds them
// buffered or lost them in a restart, and it counts every proxy sharing
// the store, not only this one. So ids_left = limit - (max_id - 1), and
// the rate is how fast max_id moved over the window (segments, explicit
// keys past the counter and SETVAL all move it). For a snowflake tag the
// ID grows with the clock whatever the traffic: it runs out when the tick
// of now no longer fits the time bits (or, below them, the key column).
package runway

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/leafproxy/leafproxy/allocator/snowflake"
)

// ColumnMax is the largest value a key column of information_schema type
// columnType (COLUMN_TYPE, e.g. "int(11)", "int(10) unsigned",
// "bigint(20)", "decimal(20,0)") can hold, at most math.MaxInt64 (IDs are
// BIGINT); false for a type that holds no IDs.
func ColumnMax(columnType string) (int64, bool) {
	t := strings.ToLower(strings.TrimSpace(columnType))
	unsigned := strings.Contains(t, "unsigned")
	base := t
	if i := strings.IndexAny(base, "( "); i >= 0 {
		base = base[:i]
	}
	signedBits := map[string]uint{"tinyint": 7, "smallint": 15, "mediumint": 23, "int": 31, "integer": 31, "bigint": 63}
	if b, ok := signedBits[base]; ok {
		if unsigned {
			b++
		}
		if b >= 63 {
			return math.MaxInt64, true
		}
		return 1<<b - 1, true
	}
	if base == "decimal" || base == "numeric" {
		m := decimalArgs.FindStringSubmatch(t)
		if m == nil {
			return 9_999_999_999, true // DECIMAL is DECIMAL(10,0)
		}
		p, _ := strconv.Atoi(m[1])
		if m[2] != "" && m[2] != "0" || p <= 0 {
			return 0, false
		}
		if p >= 19 {
			return math.MaxInt64, true
		}
		return int64(math.Pow10(p)) - 1, true
	}
	return 0, false
}

var decimalArgs = regexp.MustCompile(`^(?:decimal|numeric)\((\d+)(?:,\s*(\d+))?\)`)

// maxSeconds bounds a date so far away that it is no date (year ~2270).
const maxSeconds = 300 * 365 * 24 * 3600

// Segment is a segment tag's runway: maxID is leaf_alloc.max_id (IDs below
// it may have been handed out), limit the largest ID the tag may reach,
// rate IDs per second. exhaustedAt is zero when the tag is not used (rate
// 0) or would last beyond ~300 years; when nothing is left it is now.
func Segment(now time.Time, maxID, limit int64, rate float64) (left int64, exhaustedAt time.Time) {
	last := max(maxID-1, 0)
	if last >= limit {
		return 0, now
	}
	left = limit - last
	if rate <= 0 {
		return left, time.Time{}
	}
	secs := float64(left) / rate
	if secs > maxSeconds {
		return left, time.Time{}
	}
	return left, now.Add(time.Duration(secs * float64(time.Second)))
}

// Snowflake is a snowflake tag's runway: the IDs between the lowest ID of
// now's tick and limit (the smaller of the layout's largest ID and the
// key column's), and the first instant whose tick no longer fits.
func Snowflake(now time.Time, l snowflake.Layout, limit int64) (left int64, exhaustedAt time.Time) {
	shift := l.WorkerBits + l.SequenceBits
	limit = min(limit, l.MaxID())
	// The last tick all of whose IDs fit under limit.
	low := int64(1)<<shift - 1
	lastTick := int64(-1)
	if limit >= low {
		lastTick = min(l.MaxTicks(), (limit-low)>>shift)
	}
	exhaustedAt = l.TickStart(lastTick + 1)
	tick := l.Ticks(now)
	if tick > lastTick {
		return 0, exhaustedAt
	}
	return limit - max(tick, 0)<<shift, exhaustedAt
}

// sample is one reading of a counter.
type sample struct {
	at    time.Time
	value int64
}

// Rate is how fast a counter (a tag's max_id) moved over a window, from
// readings taken at any pace; it keeps at most ~60 of them.
type Rate struct {
	window  time.Duration
	samples []sample
}

// NewRate is a Rate over window.
func NewRate(window time.Duration) *Rate { return &Rate{window: window} }

// Add records reading v at t. A counter that moved back (a tag dropped
// and created again) starts over.
func (r *Rate) Add(t time.Time, v int64) {
	n := len(r.samples)
	if n > 0 && (v < r.samples[n-1].value || t.Before(r.samples[n-1].at)) {
		r.samples = r.samples[:0]
		n = 0
	}
	switch {
	case n >= 2 && r.samples[n-1].at.Sub(r.samples[n-2].at) < r.window/60:
		r.samples[n-1] = sample{t, v} // the latest reading replaces one too close to the last kept
	default:
		r.samples = append(r.samples, sample{t, v})
	}
	// Keep one reading at or before the window's start.
	for len(r.samples) > 2 && !r.samples[1].at.After(t.Add(-r.window)) {
		r.samples = r.samples[1:]
	}
}

// PerSecond is the rate over the readings in the window: 0 with fewer
// than two, or none apart in time.
func (r *Rate) PerSecond() float64 {
	n := len(r.samples)
	if n < 2 {
		return 0
	}
	first, last := r.samples[0], r.samples[n-1]
	d := last.at.Sub(first.at).Seconds()
	if d <= 0 {
		return 0
	}
	return float64(last.value-first.value) / d
}
