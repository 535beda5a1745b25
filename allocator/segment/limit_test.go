package segment

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestLimitStopsFetching: a tag whose widest key column holds at most 250
// hands out IDs up to 250 (the segment that holds it is cut there: issue
// 38 item 9, NEXTVAL stops at the column's end as inserts do), then
// answers PastEndError (167) without fetching another segment; a raised
// limit (the column widened) serves it again, above the store's max_id.
func TestLimitStopsFetching(t *testing.T) {
	store := newMemStore(map[string]int64{"t": 100})
	a := New(store, Options{MaxStep: 100, WaitTimeout: time.Hour})
	defer a.Close()
	a.SetLimits(map[string]Limit{"t": {Max: 250, By: "db.t.id tinyint(3) unsigned"}})
	ctx := context.Background()
	var last int64
	var err error
	for range 1000 {
		var id int64
		if id, err = a.Next(ctx, "t"); err != nil {
			break
		}
		last = id
	}
	var pe *PastEndError
	if !errors.As(err, &pe) || pe.Code() != 167 || pe.SQLState() != "22003" || pe.Limit.Max != 250 {
		t.Fatalf("after %d: %v", last, err)
	}
	if last != 250 {
		t.Errorf("last ID handed out %d, want 250 (the column's end)", last)
	}
	store.mu.Lock()
	fetches := store.fetches
	store.mu.Unlock()
	if fetches != 3 {
		t.Errorf("%d fetches, want 3: none past the limit", fetches)
	}
	if _, err := a.Next(ctx, "t"); !errors.As(err, &pe) || a.PastEnd("t") == nil {
		t.Fatalf("again: %v", err)
	}
	a.SetLimits(map[string]Limit{"t": {Max: 65535, By: "db.t.id smallint(5) unsigned"}})
	if id, err := a.Next(ctx, "t"); err != nil || id != 301 || a.PastEnd("t") != nil {
		t.Fatalf("after widening: %d %v", id, err)
	}
}

// maxStore is a Store whose fetches carry a MAXVALUE as leaf_alloc's
// (cut there; nothing taken once max_id is past it).
type maxStore struct {
	*memStore
	maxValue int64
}

func (s *maxStore) Fetch(ctx context.Context, tag string, step, floor int64) (Range, error) {
	s.mu.Lock()
	row := s.rows[tag]
	past := row != nil && row.maxID > s.maxValue
	next := int64(0)
	if row != nil {
		next = row.maxID
	}
	s.mu.Unlock()
	if past {
		return Range{}, runOut(tag, s.maxValue, next)
	}
	r, err := s.memStore.Fetch(ctx, tag, step, floor)
	r.MaxValue = s.maxValue
	return r, err
}

// TestLimitIsTheSmallerOfColumnAndMaxValue: the tag stops at the smaller
// of its key column's end and its MAXVALUE, answering 4084 at MAXVALUE
// (no ID above it, the segment cut there) and 167 at the column's end.
func TestLimitIsTheSmallerOfColumnAndMaxValue(t *testing.T) {
	ctx := context.Background()
	drain := func(a *Allocator) (int64, error) {
		var last int64
		for range 1000 {
			id, err := a.Next(ctx, "t")
			if err != nil {
				return last, err
			}
			last = id
		}
		return last, nil
	}
	// MAXVALUE 130 below the column's 250: 4084 after exactly 130.
	a := New(&maxStore{memStore: newMemStore(map[string]int64{"t": 100}), maxValue: 130}, Options{MaxStep: 100, WaitTimeout: time.Hour})
	defer a.Close()
	a.SetLimits(map[string]Limit{"t": {Max: 250, By: "db.t.id tinyint(3) unsigned"}})
	last, err := drain(a)
	var pe *PastEndError
	if !errors.As(err, &pe) || pe.Code() != ErrCodeRunOut || pe.SQLState() != "HY000" || last != 130 {
		t.Fatalf("MAXVALUE 130, column 250: last %d, %v", last, err)
	}
	if _, err := a.Block(ctx, "t", 2); !errors.As(err, &pe) || pe.Code() != ErrCodeRunOut {
		t.Fatalf("block after MAXVALUE: %v", err)
	}
	// MAXVALUE 900 above the column's 250: 167 as before.
	b := New(&maxStore{memStore: newMemStore(map[string]int64{"t": 100}), maxValue: 900}, Options{MaxStep: 100, WaitTimeout: time.Hour})
	defer b.Close()
	b.SetLimits(map[string]Limit{"t": {Max: 250, By: "db.t.id tinyint(3) unsigned"}})
	if _, err := drain(b); !errors.As(err, &pe) || pe.Code() != 167 {
		t.Fatalf("MAXVALUE 900, column 250: %v, want 167", err)
	}
	// A block that does not fit below MAXVALUE is refused whole.
	c := New(&maxStore{memStore: newMemStore(map[string]int64{"t": 10}), maxValue: 25}, Options{MaxStep: 10, WaitTimeout: time.Hour})
	defer c.Close()
	if first, err := c.Block(ctx, "t", 10); err != nil || first != 1 {
		t.Fatalf("block of 10 below MAXVALUE 25: %d %v", first, err)
	}
	if _, err := c.Block(ctx, "t", 50); !errors.As(err, &pe) || pe.Code() != ErrCodeRunOut {
		t.Fatalf("block of 50 past MAXVALUE 25: %v", err)
	}
}
