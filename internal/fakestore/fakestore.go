// Package fakestore is an in-memory allocation store for tests of the
// allocator and of what is built on it (admin): leaf_alloc (Segments) and
// leaf_snowflake_layout with the worker-id spaces (Snowflakes), with the
// semantics of the MySQL store that the allocator relies on, and a knob
// for failures. No SQL, no network: allocator.Open takes it through
// allocator.WithStores (Store.Options).
package fakestore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/leafproxy/leafproxy/allocator"
	"github.com/leafproxy/leafproxy/allocator/segment"
	"github.com/leafproxy/leafproxy/allocator/snowflake"
)

// Store is one allocation store: its leaf_alloc and its snowflake tables.
type Store struct {
	Segments   *Segments
	Snowflakes *Snowflakes
}

// New is an empty store.
func New() *Store {
	sn := &Snowflakes{rows: map[string]snowflake.LayoutRecord{}, held: map[string]map[int64]bool{}, acquired: map[string]int{}}
	return &Store{Segments: &Segments{rows: map[string]*Row{}, fetches: map[string]int{}, snow: sn}, Snowflakes: sn}
}

// Options are the allocator.Open options that put this store (and keys,
// the rule tables' largest keys, if any) in place of the MySQL one.
func (s *Store) Options(keys ...allocator.KeyServer) []allocator.Option {
	return []allocator.Option{allocator.WithStores(s.Segments, s.Snowflakes), allocator.WithKeyServers(keys...)}
}

// Row is a leaf_alloc row.
type Row struct {
	MaxID, Step int64
	MaxValue    int64 // 0: none
	Description string
}

// Segments is leaf_alloc (an allocator.SegmentStore, with every optional
// interface of segment.Store). Safe for concurrent use.
type Segments struct {
	mu      sync.Mutex
	rows    map[string]*Row
	fetches map[string]int
	fail    error
	floor   func(ctx context.Context, tag string) (int64, error)
	snow    *Snowflakes
}

var (
	_ allocator.SegmentStore = (*Segments)(nil)
	_ segment.Raiser         = (*Segments)(nil)
	_ segment.Describer      = (*Segments)(nil)
	_ segment.Starter        = (*Segments)(nil)
	_ segment.Bounder        = (*Segments)(nil)
)

// Put sets tag's row.
func (s *Segments) Put(tag string, r Row) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows[tag] = &r
}

// Get reads tag's row.
func (s *Segments) Get(tag string) (Row, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.rows[tag]; r != nil {
		return *r, true
	}
	return Row{}, false
}

// SetFail makes every call fail with err (nil: none), as a store that is
// down.
func (s *Segments) SetFail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = err
}

// Fetches is how many fetches asked for tag.
func (s *Segments) Fetches(tag string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fetches[tag]
}

// Fetch advances tag's max_id by step (<= 0: the row's step).
func (s *Segments) Fetch(ctx context.Context, tag string, step, floor int64) (segment.Range, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fetches[tag]++
	if s.fail != nil {
		return segment.Range{}, s.fail
	}
	row := s.rows[tag]
	switch {
	case row == nil:
		return segment.Range{}, &segment.UnknownTagError{Tag: tag}
	case floor > 0 && row.MaxID < floor:
		return segment.Range{}, &segment.MovedBackError{Tag: tag, MaxID: row.MaxID, Floor: floor}
	case row.MaxValue > 0 && row.MaxID > row.MaxValue:
		return segment.Range{}, &segment.PastEndError{Tag: tag, Limit: segment.Limit{Max: row.MaxValue, By: "MAXVALUE"}, Next: row.MaxID, RunOut: true}
	}
	used := step
	if used <= 0 {
		used = row.Step
	}
	if used <= 0 {
		return segment.Range{}, fmt.Errorf("leaf_alloc row %q has step %d: must be positive", tag, row.Step)
	}
	row.MaxID += used
	return segment.Range{Start: row.MaxID - used, End: row.MaxID, TableStep: row.Step, MaxValue: row.MaxValue}, nil
}

// Create is auto_create's insert.
func (s *Segments) Create(ctx context.Context, tag string, step int64) error {
	return s.CreateDescribed(ctx, tag, step, "created by leafproxy auto_create")
}

// CreateDescribed inserts tag at 1 (or above its create floor).
func (s *Segments) CreateDescribed(ctx context.Context, tag string, step int64, description string) error {
	return s.CreateStarting(ctx, tag, step, 1, description)
}

// CreateStarting inserts tag at start (or above its create floor) when it
// is missing and not a snowflake tag of the store, as INSERT IGNORE.
func (s *Segments) CreateStarting(ctx context.Context, tag string, step, start int64, description string) error {
	return s.CreateBounded(ctx, tag, step, start, 0, description)
}

// CreateBounded is CreateStarting with a MAXVALUE (0: none).
func (s *Segments) CreateBounded(ctx context.Context, tag string, step, start, m int64, description string) error {
	first, err := s.first(ctx, tag, start)
	if err != nil {
		return err
	}
	if m > 0 && first > m {
		return &segment.OptionsError{Tag: tag, Why: fmt.Sprintf("its first ID would be %d, above its MAXVALUE %d", first, m)}
	}
	if _, ok := s.snow.get("tag:" + tag); ok {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	if s.rows[tag] == nil {
		s.rows[tag] = &Row{MaxID: first, Step: step, MaxValue: m, Description: description}
	}
	return nil
}

func (s *Segments) first(ctx context.Context, tag string, start int64) (int64, error) {
	s.mu.Lock()
	floorOf := s.floor
	s.mu.Unlock()
	first := max(start, 1)
	if floorOf != nil {
		floor, err := floorOf(ctx, tag)
		if err != nil {
			return 0, fmt.Errorf("create tag %q in leaf_alloc: %w", tag, err)
		}
		first = max(first, floor+1)
	}
	return first, nil
}

// SetCreateFloor sets what creating a tag asks for the keys in use.
func (s *Segments) SetCreateFloor(f func(ctx context.Context, tag string) (int64, error)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.floor = f
}

// Raise moves max_id up to floor; a max_id above it is BelowIssuedError.
func (s *Segments) Raise(ctx context.Context, tag string, floor int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	row := s.rows[tag]
	switch {
	case row == nil:
		return &segment.UnknownTagError{Tag: tag}
	case row.MaxID > floor:
		return &segment.BelowIssuedError{Tag: tag, Floor: floor, MaxID: row.MaxID}
	}
	row.MaxID = floor
	return nil
}

// Repair moves max_id up to floor if below.
func (s *Segments) Repair(ctx context.Context, tag string, floor int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	if row := s.rows[tag]; row != nil {
		row.MaxID = max(row.MaxID, floor)
	}
	return nil
}

// Peek reads max_id of tags.
func (s *Segments) Peek(ctx context.Context, tags []string) (map[string]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return nil, s.fail
	}
	out := map[string]int64{}
	for _, t := range tags {
		if row := s.rows[t]; row != nil {
			out[t] = row.MaxID
		}
	}
	return out, nil
}

// SetMaxValue sets tag's MAXVALUE, not below the IDs handed out.
func (s *Segments) SetMaxValue(ctx context.Context, tag string, m int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	row := s.rows[tag]
	switch {
	case row == nil:
		return &segment.UnknownTagError{Tag: tag}
	case m > 0 && row.MaxID-1 > m && row.MaxValue != m:
		return &segment.OptionsError{Tag: tag, Why: fmt.Sprintf(
			"IDs up to %d were handed to proxies already (leaf_alloc.max_id %d): MAXVALUE must be at least that", row.MaxID-1, row.MaxID)}
	}
	row.MaxValue = max(m, 0)
	return nil
}

// Has says tag has a row.
func (s *Segments) Has(ctx context.Context, tag string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return false, s.fail
	}
	return s.rows[tag] != nil, nil
}

// Rows reads every row.
func (s *Segments) Rows(ctx context.Context) (map[string]allocator.StoreRow, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return nil, s.fail
	}
	out := map[string]allocator.StoreRow{}
	for t, r := range s.rows {
		out[t] = allocator.StoreRow{MaxID: r.MaxID, Step: r.Step, Description: r.Description, MaxValue: r.MaxValue}
	}
	return out, nil
}

// SetStep sets tag's step.
func (s *Segments) SetStep(ctx context.Context, tag string, step int64) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return false, s.fail
	}
	row := s.rows[tag]
	if row == nil {
		return false, nil
	}
	row.Step = step
	return true, nil
}

// Delete deletes tag's row.
func (s *Segments) Delete(ctx context.Context, tag string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return false, s.fail
	}
	found := s.rows[tag] != nil
	delete(s.rows, tag)
	return found, nil
}

// Snowflakes is leaf_snowflake_layout and the worker-id spaces (an
// allocator.SnowflakeStore). Worker ids are held until released and
// never expire (TTL 0: no fencing). Safe for concurrent use.
type Snowflakes struct {
	mu       sync.Mutex
	rows     map[string]snowflake.LayoutRecord // by row name: "default", "tag:<tag>"
	held     map[string]map[int64]bool         // by space: "" (global) or the layout's key
	acquired map[string]int
	fail     error
}

var _ allocator.SnowflakeStore = (*Snowflakes)(nil)

// SetFail makes every call fail with err (nil: none). A store that cannot
// be reached fails with an error wrapping snowflake.ErrStoreUnavailable.
func (s *Snowflakes) SetFail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = err
}

// PutTag records tag's row as CREATE LEAFPROXY SEQUENCE ... SNOWFLAKE on
// another proxy does.
func (s *Snowflakes) PutTag(tag string, l snowflake.Layout, description string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows["tag:"+tag] = snowflake.LayoutRecord{Name: "tag:" + tag, Layout: l, RecordedBy: "fakestore", RecordedAt: time.Now(), Description: description}
}

// DeleteTag deletes tag's row as DROP on another proxy does.
func (s *Snowflakes) DeleteTag(tag string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.rows, "tag:"+tag)
}

// Default is the recorded global layout.
func (s *Snowflakes) Default() (snowflake.Layout, bool) {
	r, ok := s.get(snowflake.DefaultLayoutName)
	return r.Layout, ok
}

// PutDefault records the global layout.
func (s *Snowflakes) PutDefault(l snowflake.Layout) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows[snowflake.DefaultLayoutName] = snowflake.LayoutRecord{Name: snowflake.DefaultLayoutName, Layout: l, RecordedBy: "fakestore", RecordedAt: time.Now()}
}

// Held is how many worker ids of layout l's space (global: the global
// layout's) are held now, and how many were ever acquired.
func (s *Snowflakes) Held(l snowflake.Layout, global bool) (held, acquired int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	space := spaceOf(l, global)
	return len(s.held[space]), s.acquired[space]
}

func spaceOf(l snowflake.Layout, global bool) string {
	if global {
		return ""
	}
	return snowflake.LayoutKey(l)
}

func (s *Snowflakes) get(name string) (snowflake.LayoutRecord, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rows[name]
	return r, ok
}

// check records l under name, or compares it with the row there.
func (s *Snowflakes) check(name string, l snowflake.Layout, description, tag, source string) (snowflake.LayoutCheck, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return snowflake.LayoutCheck{}, s.fail
	}
	if r, ok := s.rows[name]; ok {
		if !snowflake.SameLayout(r.Layout, l) {
			return snowflake.LayoutCheck{}, &snowflake.LayoutMismatchError{Layout: l, Tag: tag, Source: source, Store: r}
		}
		return snowflake.LayoutCheck{Record: r, MaxPriorWorker: -1}, nil
	}
	r := snowflake.LayoutRecord{Name: name, Layout: l, RecordedBy: "fakestore", RecordedAt: time.Now(), Description: description}
	s.rows[name] = r
	return snowflake.LayoutCheck{Record: r, Recorded: true, MaxPriorWorker: -1}, nil
}

// CheckLayout records the global layout or compares it.
func (s *Snowflakes) CheckLayout(ctx context.Context, l snowflake.Layout) (snowflake.LayoutCheck, error) {
	return s.check(snowflake.DefaultLayoutName, l, "", "", "")
}

// CheckTagLayout records tag's layout or compares it.
func (s *Snowflakes) CheckTagLayout(ctx context.Context, tag string, l snowflake.Layout, description, source string, global snowflake.Layout) (snowflake.LayoutCheck, error) {
	return s.check("tag:"+tag, l, description, tag, source)
}

// TagLayout reads tag's row (Name: the tag).
func (s *Snowflakes) TagLayout(ctx context.Context, tag string) (snowflake.LayoutRecord, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return snowflake.LayoutRecord{}, false, s.fail
	}
	r, ok := s.rows["tag:"+tag]
	r.Name = tag
	return r, ok, nil
}

// TagLayouts reads every tag's row, by tag.
func (s *Snowflakes) TagLayouts(ctx context.Context) (map[string]snowflake.LayoutRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return nil, s.fail
	}
	out := map[string]snowflake.LayoutRecord{}
	for name, r := range s.rows {
		if len(name) > 4 && name[:4] == "tag:" {
			r.Name = name[4:]
			out[name[4:]] = r
		}
	}
	return out, nil
}

// DeleteTagLayout deletes tag's row.
func (s *Snowflakes) DeleteTagLayout(ctx context.Context, tag string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return false, s.fail
	}
	_, ok := s.rows["tag:"+tag]
	delete(s.rows, "tag:"+tag)
	return ok, nil
}

// Workers hands out worker ids of l's space: the lowest free one, or the
// fixed one unless another holder has it.
func (s *Snowflakes) Workers(l, global snowflake.Layout, lease bool, fixed int64) snowflake.WorkerSource {
	return &workers{s: s, space: spaceOf(l, snowflake.SameLayout(l, global)), lease: lease, fixed: fixed}
}

type workers struct {
	s     *Snowflakes
	space string
	lease bool
	fixed int64
}

func (w *workers) Acquire(ctx context.Context, maxWorker int64, _ time.Time) (snowflake.Lease, error) {
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return snowflake.Lease{}, s.fail
	}
	held := s.held[w.space]
	if held == nil {
		held = map[int64]bool{}
		s.held[w.space] = held
	}
	id := w.fixed
	if w.lease {
		for id = 0; held[id]; id++ {
		}
	}
	switch {
	case id > maxWorker && w.lease:
		return snowflake.Lease{}, snowflake.ErrNoFreeWorker
	case id > maxWorker:
		return snowflake.Lease{}, fmt.Errorf("worker id %d does not fit (0 to %d)", id, maxWorker)
	case held[id]:
		return snowflake.Lease{}, &snowflake.WorkerHeldError{Worker: id, Owner: "fakestore"}
	}
	held[id] = true
	s.acquired[w.space]++
	return snowflake.Lease{Worker: id, Token: fmt.Sprint(id)}, nil
}

func (w *workers) Renew(context.Context, snowflake.Lease, time.Time) error { return nil }

func (w *workers) Release(_ context.Context, l snowflake.Lease, _ time.Time) error {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	delete(w.s.held[w.space], l.Worker)
	return nil
}

func (w *workers) TTL() time.Duration { return 0 }

// Keys is one server's rule tables' largest keys, by the rules' table
// (an allocator.KeyReader). Safe for concurrent use.
type Keys struct {
	mu      sync.Mutex
	largest map[string]int64
	reads   int
	fail    error
}

var _ allocator.KeyReader = (*Keys)(nil)

// Put sets the largest key of the tables named table (as a rule names them).
func (k *Keys) Put(table string, key int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.largest == nil {
		k.largest = map[string]int64{}
	}
	k.largest[table] = key
}

// SetFail makes every read fail with err (nil: none).
func (k *Keys) SetFail(err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.fail = err
}

// Reads is how many reads were made.
func (k *Keys) Reads() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.reads
}

// LargestKey is the key Put for r.Table (0 when none).
func (k *Keys) LargestKey(ctx context.Context, r allocator.Rule) (int64, string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.reads++
	if k.fail != nil {
		return 0, "", k.fail
	}
	v, ok := k.largest[r.Table]
	if !ok || v <= 0 {
		return 0, "", nil
	}
	return v, r.Table + "." + r.Column, nil
}
