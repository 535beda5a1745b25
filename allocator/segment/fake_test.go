package segment

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// memStore is an in-memory Store with leaf_alloc's semantics and knobs for
// failures, used where a test needs to control the store precisely (the
// real-database tests are in mysql_test.go).
type memStore struct {
	mu      sync.Mutex
	rows    map[string]*memRow
	steps   []int64 // step argument of every fetch
	fetches int
	tagged  map[string]int // fetches per tag
	fail    error          // returned by Fetch while set
	gate    chan struct{}  // while set, each Fetch waits for one receive
	// after, while set, runs after a Fetch has taken its range, before it
	// returns (outside the lock): to hold a fetch that has its range.
	after       func(step int64)
	stale       *Range // while set, Fetch returns this range whatever the floor (a store that moved back and ignores the floor)
	inflight    int
	maxInflight int
	creates     int
	raises      []int64 // floor of every Raise
	peeks       int
	// conflicts: so many next fetches fail with conflictErr (a store write
	// conflict) and take nothing.
	conflicts   int
	conflictErr error
}

type memRow struct{ maxID, step int64 }

// fetchesOf is how many fetches asked for tag.
func (s *memStore) fetchesOf(tag string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tagged[tag]
}

func newMemStore(tags map[string]int64) *memStore {
	s := &memStore{rows: map[string]*memRow{}}
	for tag, step := range tags {
		s.rows[tag] = &memRow{maxID: 1, step: step}
	}
	return s
}

func (s *memStore) Fetch(ctx context.Context, tag string, step, floor int64) (Range, error) {
	s.mu.Lock()
	s.fetches++
	if s.tagged == nil {
		s.tagged = map[string]int{}
	}
	s.tagged[tag]++
	s.steps = append(s.steps, step)
	s.inflight++
	s.maxInflight = max(s.maxInflight, s.inflight)
	gate := s.gate
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inflight--
		s.mu.Unlock()
	}()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return Range{}, ctx.Err()
		}
	}
	r, err := s.take(tag, step, floor)
	s.mu.Lock()
	after := s.after
	s.mu.Unlock()
	if after != nil {
		after(step)
	}
	return r, err
}

// take is Fetch once through the gate.
func (s *memStore) take(tag string, step, floor int64) (Range, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return Range{}, s.fail
	}
	if s.conflicts > 0 {
		s.conflicts--
		return Range{}, fmt.Errorf("commit leaf_alloc transaction: %w", s.conflictErr)
	}
	row := s.rows[tag]
	if row == nil {
		return Range{}, &UnknownTagError{Tag: tag}
	}
	if s.stale != nil {
		return *s.stale, nil
	}
	if row.maxID < floor {
		return Range{}, &MovedBackError{Tag: tag, MaxID: row.maxID, Floor: floor}
	}
	if step <= 0 {
		step = row.step
	}
	row.maxID += step
	return Range{Start: row.maxID - step, End: row.maxID, TableStep: row.step}, nil
}

func (s *memStore) Create(ctx context.Context, tag string, step int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.creates++
	if s.fail != nil {
		return s.fail
	}
	if s.rows[tag] == nil {
		s.rows[tag] = &memRow{maxID: 1, step: step}
	}
	return nil
}

func (s *memStore) Repair(ctx context.Context, tag string, floor int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.raises = append(s.raises, floor)
	if s.fail != nil {
		return s.fail
	}
	if row := s.rows[tag]; row != nil {
		row.maxID = max(row.maxID, floor)
	}
	return nil
}

func (s *memStore) Peek(ctx context.Context, tags []string) (map[string]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.peeks++
	if s.fail != nil {
		return nil, s.fail
	}
	out := map[string]int64{}
	for _, t := range tags {
		if row := s.rows[t]; row != nil {
			out[t] = row.maxID
		}
	}
	return out, nil
}

func (s *memStore) set(f func(s *memStore)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

func (s *memStore) get(f func(s *memStore)) { s.set(f) }

// fakeClock is an injectable clock that moves only when told.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *fakeClock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

var errStoreDown = errors.New("store is down (test)")
