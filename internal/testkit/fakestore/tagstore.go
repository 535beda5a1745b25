package fakestore

import (
	"context"
	"sort"
	"sync"

	"github.com/leafproxy/leafproxy/allocator"
	"github.com/leafproxy/leafproxy/allocator/snowflake"
)

var _ allocator.TagStore = (*Store)(nil)

// Schema is the store's tables as InitStore makes them (CreateSchema):
// how often they were created, and what the next creation reports as
// migrated in place.
type Schema struct {
	mu       sync.Mutex
	created  int
	migrated []string
	fail     error
}

// Created is how many times CreateSchema ran.
func (s *Schema) Created() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.created
}

// SetMigrated sets what the next CreateSchema reports as converted or
// migrated (schema.Migrate's names), once.
func (s *Schema) SetMigrated(tables ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.migrated = tables
}

// SetFail makes CreateSchema fail with err (nil: none), as a store account
// without the CREATE privilege.
func (s *Schema) SetFail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = err
}

// CreateSchema creates the tables (they always exist here) and reports
// the migrations set with SetMigrated.
func (st *Store) CreateSchema(ctx context.Context) ([]string, error) {
	s := st.Schema
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return nil, s.fail
	}
	s.created++
	m := s.migrated
	s.migrated = nil
	return m, nil
}

// HasTag says tag has a leaf_alloc row or a snowflake tag's row.
func (st *Store) HasTag(ctx context.Context, tag string) (bool, error) {
	if ok, err := st.Segments.Has(ctx, tag); ok || err != nil {
		return ok, err
	}
	_, ok, err := st.Snowflakes.TagLayout(ctx, tag)
	return ok, err
}

// SegmentTags lists leaf_alloc's tags, sorted.
func (st *Store) SegmentTags(ctx context.Context) ([]string, error) {
	rows, err := st.Segments.Rows(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(rows))
	for t := range rows {
		out = append(out, t)
	}
	sort.Strings(out)
	return out, nil
}

// TagLayouts reads the snowflake tags' rows.
func (st *Store) TagLayouts(ctx context.Context) (map[string]snowflake.LayoutRecord, error) {
	return st.Snowflakes.TagLayouts(ctx)
}

// EnsureTag inserts tag's row at first (at least 1) when it has none, as
// INSERT IGNORE.
func (st *Store) EnsureTag(ctx context.Context, tag string, step, first int64, description string) (bool, error) {
	s := st.Segments
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return false, s.fail
	}
	if s.rows[tag] != nil {
		return false, nil
	}
	s.rows[tag] = &Row{MaxID: max(first, 1), Step: step, Description: description}
	return true, nil
}

// RaiseTag moves tag's max_id up to first when it is lower.
func (st *Store) RaiseTag(ctx context.Context, tag string, first int64) (before, after int64, err error) {
	s := st.Segments
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return 0, 0, s.fail
	}
	row := s.rows[tag]
	if row == nil {
		return 0, 0, nil
	}
	before = row.MaxID
	row.MaxID = max(row.MaxID, first)
	return before, row.MaxID, nil
}
