package segment

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestLimitStopsFetching: a tag whose widest key column holds at most 250
// hands out IDs up to the end of the segment that holds 250, then answers
// PastEndError (167) without fetching another segment; a raised limit
// (the column widened) serves it again.
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
	if last != 300 {
		t.Errorf("last ID handed out %d, want 300 (the end of the segment holding 250)", last)
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
