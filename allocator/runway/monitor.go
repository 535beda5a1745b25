package runway

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/leafproxy/leafproxy/allocator"
	"github.com/leafproxy/leafproxy/allocator/snowflake"
)

// Estimate is one tag's runway at one instant.
type Estimate struct {
	Tag       string
	Generator string // segment or snowflake
	// Limit is the largest ID the tag may reach; LimitedBy says what sets
	// it: the smallest key column filled from the tag ("db.table.col
	// int(11)"), the snowflake layout, or BIGINT.
	Limit     int64
	LimitedBy string
	IDsLeft   int64
	// PerSecond: IDs per second over the window (segment tags; 0 when
	// max_id did not move).
	PerSecond float64
	// ExhaustedAt: when no ID is left at that rate (a snowflake tag: when
	// its time bits end); zero when never at the current rate.
	ExhaustedAt time.Time
	At          time.Time
	// Level is how near the end the tag is by what is left of Limit,
	// whatever the rate: LevelOK, LevelLow (under 10%), LevelCritical
	// (under 1%) or LevelExhausted (nothing left).
	Level string
}

// The levels of Estimate.Level.
const (
	LevelOK        = "ok"
	LevelLow       = "low"       // under LowFraction of the range left
	LevelCritical  = "critical"  // under CriticalFraction left
	LevelExhausted = "exhausted" // nothing left
)

// The shares of a tag's range (1 to its Limit) under which it is LevelLow
// and LevelCritical.
const (
	LowFraction      = 0.10
	CriticalFraction = 0.01
)

// LevelOf is the level of a tag with left of limit IDs left.
func LevelOf(left, limit int64) string {
	switch {
	case left <= 0:
		return LevelExhausted
	case limit <= 0:
		return LevelOK
	case float64(left) < CriticalFraction*float64(limit):
		return LevelCritical
	case float64(left) < LowFraction*float64(limit):
		return LevelLow
	}
	return LevelOK
}

// levelRank orders the levels, worst last (a "+soon" suffix aside).
func levelRank(l string) int {
	switch strings.TrimSuffix(l, "+soon") {
	case LevelLow:
		return 1
	case LevelCritical:
		return 2
	case LevelExhausted:
		return 3
	}
	return 0
}

// Column is a key column filled from a tag, with the largest value its
// type holds.
type Column struct {
	Name string // db.table.column type
	Max  int64
	// Widest is the largest Max among the tag's key columns (WidestName
	// names it): past it no column filled from the tag holds an ID, so
	// the allocator fetches no segment beyond it (Options.Limits).
	Widest     int64
	WidestName string
}

// Source is what the monitor reads from the allocator
// (*allocator.Sequences).
type Source interface {
	StoreRows(ctx context.Context) (map[string]allocator.StoreRow, error)
	SnowflakeTags() []string
	Layout(tag string) (snowflake.Layout, bool)
}

// Options tunes a Monitor. Zero values take the defaults.
type Options struct {
	Interval     time.Duration // recompute every (default 1 min)
	ColumnsEvery time.Duration // re-read column types every (default 10 min)
	Window       time.Duration // the rate's window (default 1 h)
	WarnBelow    time.Duration // warn when less is left (default 365 days)
	WarnEvery    time.Duration // repeat the warning every (default 24 h)
	Now          func() time.Time
	Logger       *slog.Logger
	// Columns reads the smallest key column of each tag's rule tables;
	// default: information_schema on the backend (ReadColumns).
	Columns func(ctx context.Context, cfg *allocator.Config) (map[string]Column, error)
	// Limits, if set, is given every successful read of the columns, by
	// tag (a tag without rule tables has none): the allocator stops
	// fetching segments past a tag's Widest.
	Limits func(map[string]Column)
}

// Monitor recomputes every tag's runway in the background: the rule
// tables' key column types from information_schema on the backend (its
// own connection, every ColumnsEvery), the store's max_id of every segment
// tag (every Interval), and logs a warning at the first computation and
// every WarnEvery for each tag with less than WarnBelow left.
type Monitor struct {
	src  Source
	cfg  func() *allocator.Config
	opts Options
	log  *slog.Logger
	db   *sql.DB // the backend, for Columns' default

	mu            sync.Mutex
	estimates     map[string]Estimate  // by tag, from the last Refresh
	columns       map[string]Column    // by tag: the smallest key column of its rules' tables
	columnsReadAt time.Time            // when columns was read
	columnsErr    error                // why the last read of columns failed
	columnsStale  bool                 // Invalidate: read them at the next computation
	rates         map[string]*Rate     // by tag: the store's max_id over the window
	warned        map[string]time.Time // by tag: when its runway was last warned about
	warnedLevel   map[string]string    // by tag: the level it was last warned about at
	kick          chan struct{}        // Invalidate asks Run to recompute now
}

// New builds a monitor over src for the allocator configuration cfg
// returns (the one in force: rules change on reload). Run starts it.
func New(src Source, cfg func() *allocator.Config, opts Options) *Monitor {
	if opts.Interval <= 0 {
		opts.Interval = time.Minute
	}
	if opts.ColumnsEvery <= 0 {
		opts.ColumnsEvery = 10 * time.Minute
	}
	if opts.Window <= 0 {
		opts.Window = time.Hour
	}
	if opts.WarnBelow <= 0 {
		opts.WarnBelow = 365 * 24 * time.Hour
	}
	if opts.WarnEvery <= 0 {
		opts.WarnEvery = 24 * time.Hour
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	m := &Monitor{src: src, cfg: cfg, opts: opts, log: opts.Logger,
		estimates: map[string]Estimate{}, rates: map[string]*Rate{}, warned: map[string]time.Time{},
		warnedLevel: map[string]string{}, kick: make(chan struct{}, 1)}
	if opts.Columns == nil {
		m.opts.Columns = m.readColumns
	}
	return m
}

// Run recomputes at once, then every Interval, until ctx ends.
func (m *Monitor) Run(ctx context.Context) {
	defer m.closeDB()
	t := time.NewTicker(m.opts.Interval)
	defer t.Stop()
	for {
		began := time.Now()
		if err := m.Refresh(ctx); err != nil && ctx.Err() == nil {
			m.log.Debug("runway: could not recompute", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-m.kick:
			// At most one recomputation a second however many DDL
			// statements ask for one.
			if wait := time.Second - time.Since(began); wait > 0 {
				pause := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					pause.Stop()
					return
				case <-pause.C:
				}
			}
		}
	}
}

// Invalidate makes the next computation re-read the key column types
// (a configuration reload changed the rules, or a DDL statement went
// through the proxy) and asks Run for it now.
func (m *Monitor) Invalidate() {
	m.mu.Lock()
	m.columnsReadAt = time.Time{}
	m.columnsStale = true
	m.mu.Unlock()
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// Refresh recomputes every tag once.
func (m *Monitor) Refresh(ctx context.Context) error {
	now := m.opts.Now()
	cfg := m.cfg()
	m.mu.Lock()
	stale := m.columns == nil || m.columnsStale || now.Sub(m.columnsReadAt) >= m.opts.ColumnsEvery
	m.columnsStale = false
	m.mu.Unlock()
	if stale {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		cols, err := m.opts.Columns(cctx, cfg)
		cancel()
		m.mu.Lock()
		m.columnsErr = err
		if err == nil || m.columns == nil {
			m.columns, m.columnsReadAt = cols, now
		}
		if err != nil {
			m.columnsStale = true // try again at the next computation
		}
		m.mu.Unlock()
		if err == nil && m.opts.Limits != nil {
			m.opts.Limits(cols)
		}
		if err != nil {
			m.log.Warn("runway: could not read the key column types of the rule tables (information_schema on the backend); "+
				"ids_left counts to BIGINT's maximum until it can", "err", err)
		}
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	rows, err := m.src.StoreRows(sctx)
	cancel()
	if err != nil {
		return fmt.Errorf("read leaf_alloc: %w", err)
	}
	snow := map[string]bool{}
	for _, t := range m.src.SnowflakeTags() {
		snow[t] = true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	est := map[string]Estimate{}
	for tag, row := range rows {
		if snow[tag] {
			continue
		}
		r := m.rates[tag]
		if r == nil {
			r = NewRate(m.opts.Window)
			m.rates[tag] = r
		}
		r.Add(now, row.MaxID)
		e := Estimate{Tag: tag, Generator: "segment", Limit: math.MaxInt64, LimitedBy: "BIGINT", PerSecond: r.PerSecond(), At: now}
		if c, ok := m.columns[tag]; ok {
			e.Limit, e.LimitedBy = c.Max, c.Name
		} else if m.columnsStale && m.columnsErr == nil {
			// Invalidated while this computation ran (a reload added the
			// rule, a DDL went through): the columns just read may not know
			// the tag yet. Keep what was shown, or nothing, rather than
			// claim BIGINT until the next computation reads its column.
			if old, ok := m.estimates[tag]; ok {
				est[tag] = old
			}
			continue
		}
		if row.MaxValue > 0 && row.MaxValue <= e.Limit {
			e.Limit, e.LimitedBy = row.MaxValue, "MAXVALUE"
		}
		e.IDsLeft, e.ExhaustedAt = Segment(now, row.MaxID, e.Limit, e.PerSecond)
		e.Level = LevelOf(e.IDsLeft, e.Limit)
		est[tag] = e
	}
	for tag := range snow {
		l, ok := m.src.Layout(tag)
		if !ok {
			continue
		}
		e := Estimate{Tag: tag, Generator: "snowflake", Limit: l.MaxID(), LimitedBy: "layout " + l.String(), At: now}
		if c, ok := m.columns[tag]; ok && c.Max < e.Limit {
			e.Limit, e.LimitedBy = c.Max, c.Name
		}
		e.IDsLeft, e.ExhaustedAt = Snowflake(now, l, e.Limit)
		e.Level = LevelOK // a snowflake tag's range is time: it warns by date
		if e.IDsLeft == 0 {
			e.Level = LevelExhausted
		}
		est[tag] = e
	}
	for tag := range m.rates {
		if _, ok := est[tag]; !ok {
			delete(m.rates, tag) // dropped
		}
	}
	m.estimates = est
	for _, tag := range slices.Sorted(maps.Keys(est)) {
		m.warn(now, est[tag])
	}
	return nil
}

// warn logs a tag with less than WarnBelow left, or under 10% or 1% of
// its range left (whatever the rate: a fresh proxy has none), at once
// when it reaches a worse level and otherwise at most every WarnEvery.
func (m *Monitor) warn(now time.Time, e Estimate) {
	soon := !e.ExhaustedAt.IsZero() && e.ExhaustedAt.Sub(now) < m.opts.WarnBelow
	if !soon && e.Level == LevelOK {
		delete(m.warned, e.Tag)
		delete(m.warnedLevel, e.Tag)
		return
	}
	last, ok := m.warned[e.Tag]
	was := m.warnedLevel[e.Tag]
	worse := levelRank(e.Level) > levelRank(was) || soon && !strings.HasSuffix(was, "+soon")
	if ok && now.Sub(last) < m.opts.WarnEvery && !worse {
		return
	}
	m.warned[e.Tag], m.warnedLevel[e.Tag] = now, e.Level
	if soon {
		m.warnedLevel[e.Tag] += "+soon" // a date within WarnBelow was warned about
	}
	attrs := []any{"tag", e.Tag, "generator", e.Generator, "ids_left", e.IDsLeft, "limited_by", e.LimitedBy, "level", e.Level}
	if !e.ExhaustedAt.IsZero() {
		attrs = append(attrs, "exhausted_at", e.ExhaustedAt.UTC().Format(time.RFC3339))
	}
	if e.Generator == "segment" {
		attrs = append(attrs, "ids_per_second", fmt.Sprintf("%.3g", e.PerSecond))
	}
	switch {
	case e.LimitedBy == "MAXVALUE" && (e.IDsLeft == 0 || !soon):
		if e.IDsLeft == 0 {
			m.log.Warn("sequence has run out: no ID left below its MAXVALUE, NEXTVAL and inserts fail with 4084; "+
				"raise it with ALTER LEAFPROXY SEQUENCE ... MAXVALUE n", attrs...)
		} else {
			m.log.Warn("sequence is near its MAXVALUE: raise it with ALTER LEAFPROXY SEQUENCE ... MAXVALUE n", attrs...)
		}
	case e.IDsLeft == 0:
		m.log.Warn("sequence has no IDs left: inserts that need a key from it fail with 167; "+
			"widen the key column (e.g. to BIGINT) or move the rule to a new tag", attrs...)
	case soon:
		m.log.Warn(fmt.Sprintf("sequence runs out of IDs in less than %s", humanDays(m.opts.WarnBelow)), attrs...)
	case e.Level == LevelCritical:
		m.log.Warn("sequence has less than 1% of its key column's range left: widen the key column (e.g. to BIGINT) or move the rule to a new tag", attrs...)
	default:
		m.log.Warn("sequence has less than 10% of its key column's range left: widen the key column (e.g. to BIGINT) or move the rule to a new tag", attrs...)
	}
}

func humanDays(d time.Duration) string {
	if days := d / (24 * time.Hour); days >= 365 && days%365 == 0 {
		if days == 365 {
			return "a year"
		}
		return fmt.Sprintf("%d years", days/365)
	}
	return d.String()
}

// Get is tag's last estimate.
func (m *Monitor) Get(tag string) (Estimate, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.estimates[tag]
	return e, ok
}

// All is every tag's last estimate, by tag.
func (m *Monitor) All() []Estimate {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Estimate, 0, len(m.estimates))
	for _, tag := range slices.Sorted(maps.Keys(m.estimates)) {
		out = append(out, m.estimates[tag])
	}
	return out
}
