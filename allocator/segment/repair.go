package segment

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// repair raises the store's max_id for tag to floor after the store moved
// back (the caller has logged it at error level: whatever moved the store
// back may have made other processes re-issue IDs before anyone noticed,
// which operators must look into).
func (a *Allocator) repair(tag string, floor int64) error {
	ctx, cancel := context.WithTimeout(a.ctx, a.opts.FetchTimeout)
	defer cancel()
	if err := a.store.Repair(ctx, tag, floor); err != nil {
		a.log.Error("could not repair leaf_alloc.max_id", "tag", tag, "floor", floor, "err", err)
		return err
	}
	return nil
}

// watch reads back max_id of every tag that has served IDs, every
// WatchEvery. A value below the tag's high-water mark or an earlier read
// means the store moved back: logged at error level, repaired at once.
func (a *Allocator) watch() {
	defer a.wg.Done()
	tick := time.NewTicker(a.opts.WatchEvery)
	defer tick.Stop()
	var tags []string
	var floors []int64
	for {
		select {
		case <-a.done:
			return
		case <-tick.C:
		}
		tags, floors = tags[:0], floors[:0]
		m := *a.tags.Load()
		for name, t := range m {
			t.mu.Lock()
			if f := max(t.highWater, t.seen, t.blockEnd); f > 0 {
				tags, floors = append(tags, name), append(floors, f)
			}
			t.mu.Unlock()
		}
		if len(tags) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(a.ctx, a.opts.FetchTimeout)
		got, err := a.store.Peek(ctx, tags)
		cancel()
		if err != nil {
			a.log.Debug("read back leaf_alloc.max_id failed", "err", err)
			continue
		}
		for i, name := range tags {
			v, ok := got[name]
			t := m[name]
			if !ok || t == nil {
				continue
			}
			if v >= floors[i] {
				t.mu.Lock()
				t.seen = max(t.seen, v)
				t.mu.Unlock()
				continue
			}
			t.mu.Lock()
			to := addSat(max(t.highWater, t.seen, t.blockEnd), max(a.opts.RepairMargin, 10*t.step))
			t.mu.Unlock()
			a.log.Error("leaf_alloc.max_id moved back below IDs already issued (failover to a stale replica? restored backup? manual edit?); "+
				"pushing it past the high-water mark",
				"tag", name, "max_id", v, "high_water", floors[i], "new_max_id_floor", to)
			if err := a.repair(name, to); err != nil {
				continue
			}
			t.mu.Lock()
			t.repairs++
			t.mu.Unlock()
		}
	}
}

// Raise makes floor the lowest ID this allocator hands out for tag from
// now on (SETVAL): the store's max_id is raised to floor in one
// conditional UPDATE, then this allocator's buffered segments, all below
// it, are dropped. Other processes keep what they have buffered (at most
// two segments each) until they use it up. A floor below IDs that may
// have been handed out is refused (*BelowIssuedError); an unknown tag is
// created first when AutoCreate is on. The store must be a Raiser.
func (a *Allocator) Raise(ctx context.Context, tag string, floor int64) error {
	if a.closed.Load() {
		return ErrClosed
	}
	r, ok := a.store.(Raiser)
	if !ok {
		return fmt.Errorf("raise sequence %q: the segment store (%T) cannot raise a tag", tag, a.store)
	}
	t, err := a.state(tag)
	if err != nil {
		return err
	}
	err = r.Raise(ctx, t.name, floor)
	var unknown *UnknownTagError
	if errors.As(err, &unknown) && a.autoCreate(tag) {
		if err = a.create(t.name); err == nil {
			err = r.Raise(ctx, t.name, floor)
		}
	}
	if errors.As(err, &unknown) {
		// Remembered as a miss, so that prune can drop a made-up name.
		t.mu.Lock()
		t.unknown = &UnknownTagError{Tag: t.name}
		t.unknownUntil = a.opts.Clock().Add(a.opts.UnknownTTL)
		t.mu.Unlock()
		return t.unknown
	}
	if err != nil {
		return fmt.Errorf("raise sequence %q to %d: %w", t.name, floor, err)
	}
	t.mu.Lock()
	t.floor = max(t.floor, floor)
	// A request holding the old segment may still take an ID from it while
	// this runs (it began before the SETVAL); none can after: the segment
	// is marked used up, and a fetch still under way is dropped by load.
	old := t.current.Load()
	old.next.Store(old.end)
	t.current.Store(newSegment(0, 0))
	t.next = nil
	t.unknown = nil
	t.mu.Unlock()
	return nil
}
