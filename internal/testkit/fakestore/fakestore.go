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
	"math"
	"sync"

	"github.com/leafproxy/leafproxy/allocator"
	"github.com/leafproxy/leafproxy/allocator/segment"
	"github.com/leafproxy/leafproxy/allocator/snowflake"
)

// Store is one allocation store: its leaf_alloc and its snowflake tables
// (and, as an allocator.TagStore, what InitStore and CheckTags see of
// them: tagstore.go).
type Store struct {
	Segments   *Segments
	Snowflakes *Snowflakes
	Schema     *Schema
}

// New is an empty store.
func New() *Store {
	sn := &Snowflakes{rows: map[string]snowflake.LayoutRecord{}, held: map[string]map[int64]bool{}, acquired: map[string]int{}}
	return &Store{Segments: &Segments{rows: map[string]*Row{}, fetches: map[string]int{}, snow: sn}, Snowflakes: sn, Schema: &Schema{}}
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
	if row.MaxID > math.MaxInt64-used {
		// MariaDB's 1690 on max_id + step past BIGINT's range.
		return segment.Range{}, fmt.Errorf("advance leaf_alloc.max_id of %q by %d from %d: %w", tag, used, row.MaxID, segment.ErrMaxIDOverflow)
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
