package runway

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
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
}

// Column is a key column filled from a tag, with the largest value its
// type holds.
type Column struct {
	Name string // db.table.column type
	Max  int64
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
	rates         map[string]*Rate     // by tag: the store's max_id over the window
	warned        map[string]time.Time // by tag: when its runway was last warned about
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
		estimates: map[string]Estimate{}, rates: map[string]*Rate{}, warned: map[string]time.Time{}}
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
		if err := m.Refresh(ctx); err != nil && ctx.Err() == nil {
			m.log.Debug("runway: could not recompute", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Refresh recomputes every tag once.
func (m *Monitor) Refresh(ctx context.Context) error {
	now := m.opts.Now()
	cfg := m.cfg()
	m.mu.Lock()
	stale := m.columns == nil || now.Sub(m.columnsReadAt) >= m.opts.ColumnsEvery
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
		m.mu.Unlock()
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
		}
		e.IDsLeft, e.ExhaustedAt = Segment(now, row.MaxID, e.Limit, e.PerSecond)
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

// warn logs a tag with less than WarnBelow left, at most every WarnEvery.
func (m *Monitor) warn(now time.Time, e Estimate) {
	short := e.IDsLeft == 0 || !e.ExhaustedAt.IsZero() && e.ExhaustedAt.Sub(now) < m.opts.WarnBelow
	if !short {
		delete(m.warned, e.Tag)
		return
	}
	if last, ok := m.warned[e.Tag]; ok && now.Sub(last) < m.opts.WarnEvery {
		return
	}
	m.warned[e.Tag] = now
	attrs := []any{"tag", e.Tag, "generator", e.Generator, "ids_left", e.IDsLeft, "limited_by", e.LimitedBy,
		"exhausted_at", e.ExhaustedAt.UTC().Format(time.RFC3339)}
	if e.Generator == "segment" {
		attrs = append(attrs, "ids_per_second", fmt.Sprintf("%.3g", e.PerSecond))
	}
	if e.IDsLeft == 0 {
		m.log.Warn("sequence has no IDs left: widen the key column (e.g. to BIGINT) or move the rule to a new tag", attrs...)
		return
	}
	m.log.Warn(fmt.Sprintf("sequence runs out of IDs in less than %s", humanDays(m.opts.WarnBelow)), attrs...)
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
