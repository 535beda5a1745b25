package segment

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/leafproxy/leafproxy/internal/conflict"
	"github.com/leafproxy/leafproxy/internal/nonblock"
)

// prefetch asks for the segment after seg, once per segment.
func (a *Allocator) prefetch(t *tagState, seg *segment) {
	if !seg.asked.CompareAndSwap(0, 1) {
		return
	}
	t.mu.Lock()
	if t.current.Load() == seg && t.next == nil && !t.loading {
		a.startLoad(t)
	}
	t.mu.Unlock()
}

// startLoad starts tag's loader. t.mu must be held.
func (a *Allocator) startLoad(t *tagState) {
	a.loadMu.Lock()
	defer a.loadMu.Unlock()
	if a.stopped {
		return
	}
	t.loading = true
	a.wg.Add(1)
	go a.load(t)
}

// advance returns once tag has a current segment other than the exhausted
// seg, waiting for the loader if both buffers are empty.
func (a *Allocator) advance(ctx context.Context, t *tagState, seg *segment) error {
	var (
		timer   *time.Timer
		started time.Time
	)
	t.mu.Lock()
	for {
		if a.closed.Load() {
			t.mu.Unlock()
			return ErrClosed
		}
		cur := t.current.Load()
		if cur != seg && !cur.exhausted() {
			t.mu.Unlock()
			return nil // someone else switched already
		}
		seg = cur
		if t.next != nil {
			t.current.Store(t.next)
			t.next = nil
			t.mu.Unlock()
			return nil
		}
		if t.unknown != nil && a.opts.Clock().Before(t.unknownUntil) {
			err := t.unknown
			t.mu.Unlock()
			return err
		}
		if t.pastEnd != nil && !a.retryRunOut(t) {
			err := t.pastEnd
			t.mu.Unlock()
			return err
		}
		if !t.loading {
			a.startLoad(t)
		}
		if nonblock.Requested(ctx) {
			// An event loop's caller: the fetch is under way; the request
			// is retried where it may wait for it.
			t.mu.Unlock()
			return nonblock.ErrWouldBlock
		}
		if timer == nil {
			started = time.Now()
			timer = time.NewTimer(a.opts.WaitTimeout)
			defer timer.Stop()
		}
		ch := t.changed
		t.waiters++
		t.mu.Unlock()

		var err error
		select {
		case <-ch:
		case <-timer.C:
			err = errTimeout
		case <-ctx.Done():
			err = fmt.Errorf("wait for a segment of %q: %w", t.name, ctx.Err())
		case <-a.done:
			err = ErrClosed
		}
		t.mu.Lock()
		t.waiters--
		if err == errTimeout {
			var last error
			if t.failing > 0 {
				last = t.lastErr
			}
			t.mu.Unlock()
			return &ExhaustedError{Tag: t.name, Waited: time.Since(started), LastErr: last}
		}
		if err != nil {
			t.mu.Unlock()
			return err
		}
	}
}

var errTimeout = errors.New("timeout")

// load is tag's loader: it fetches one segment, retrying with backoff while
// requests wait for it.
func (a *Allocator) load(t *tagState) {
	defer a.wg.Done()
	triedCreate := false
	repaired := 0  // repairs in this run without an accepted segment
	conflicts := 0 // write conflicts in a row in this run
	for {
		now := a.opts.Clock()
		t.mu.Lock()
		step := int64(0) // the row's own step until we know it
		if t.step > 0 {
			step = nextStep(t.step, t.tableStep, a.opts.MaxStep, now.Sub(t.lastFetch))
		}
		// A fetch that starts now, in a store that never moves back,
		// returns a segment at or above everything reserved or read back
		// so far.
		floor := max(t.highWater, t.seen, t.blockEnd)
		if pe := a.pastLimit(t, floor); pe != nil {
			// Every ID of the next segment would be past the widest
			// key column filled from the tag: fetch none.
			a.stopAtEnd(t, pe)
			t.mu.Unlock()
			return
		}
		t.mu.Unlock()

		r, err := a.fetchToTop(t.name, step, floor)
		var unknown *UnknownTagError
		if errors.As(err, &unknown) && a.autoCreate(t.name) && !triedCreate {
			triedCreate = true
			if err = a.create(t.name); err == nil {
				continue
			}
		}

		var ranOut *PastEndError
		if errors.As(err, &ranOut) {
			// The store's max_id is past the tag's MAXVALUE, or at the
			// top of int64 (top.go): nothing taken.
			a.storeAnswered(t.name)
			t.mu.Lock()
			if ranOut.RunOut {
				t.maxValue = ranOut.Limit.Max
			}
			a.stopAtEnd(t, ranOut)
			t.mu.Unlock()
			return
		}
		var moved *MovedBackError
		movedBack := errors.As(err, &moved) // the store refused the floor: nothing was taken
		answered := err == nil || movedBack || errors.As(err, &unknown)
		if answered {
			a.storeAnswered(t.name)
		}
		t.mu.Lock()
		if err == nil {
			r = t.cutAtMax(r)
		}
		if err == nil && (r.End <= t.floor || r.End <= t.blockEnd) {
			// Fetched before a Raise moved the store past it (every ID
			// in it lies below the floor an operator just set), or before
			// a block fetched on its own, which later IDs must follow.
			// Fetch again.
			t.mu.Unlock()
			continue
		}
		if err == nil && r.Start < t.floor {
			r.Start = t.floor
		}
		if err == nil {
			if pe := a.pastLimit(t, max(r.Start, 1)); pe != nil {
				// Another proxy took the IDs up to the limit: this
				// segment holds none of use. Drop it, fetch no more.
				a.stopAtEnd(t, pe)
				t.mu.Unlock()
				return
			}
		}
		var refusedAttrs []any // what the error log says about the refused fetch
		if movedBack {
			t.refused++
			refusedAttrs = []any{"max_id", moved.MaxID, "high_water", moved.Floor}
		} else if err == nil {
			r = a.cutAtLimit(t, r)
			if err = t.accept(r, a.opts.Clock(), floor); err == nil {
				t.loading = false
				t.mu.Unlock()
				return
			}
			t.refused++
			// A store that took the range below the floor anyway (one
			// that ignores it): refused here.
			var stale *StaleSegmentError
			if movedBack = errors.As(err, &stale); movedBack {
				refusedAttrs = []any{"got_start", r.Start, "got_end", r.End, "high_water", stale.HighWater}
			} else {
				a.log.Error("segment refused", "tag", t.name, "start", r.Start, "end", r.End, "err", err)
			}
		}
		switch {
		case movedBack:
			to := addSat(max(t.highWater, t.seen, t.blockEnd), max(a.opts.RepairMargin, 10*t.step))
			t.mu.Unlock()
			a.log.Error("leaf_alloc.max_id moved back below IDs already issued (failover to a stale replica? restored backup? manual edit?); "+
				"segment refused, pushing max_id past the high-water mark",
				append(append([]any{"tag", t.name}, refusedAttrs...), "new_max_id_floor", to)...)
			rerr := a.repair(t.name, to)
			t.mu.Lock()
			if rerr == nil {
				t.repairs++
				if repaired++; repaired <= 3 {
					t.mu.Unlock()
					continue // fetch again at once, above the floor
				}
				// Still stale after repairs: another writer keeps
				// moving it back, or the store ignores the UPDATE.
				// Back off like any failing fetch.
			} else {
				err = fmt.Errorf("%w; repairing it failed: %w", err, rerr)
			}
		case errors.As(err, &unknown):
			t.unknown = &UnknownTagError{Tag: t.name}
			t.unknownUntil = a.opts.Clock().Add(a.opts.UnknownTTL)
			t.loading = false
			t.broadcast()
			t.mu.Unlock()
			a.log.Debug("unknown sequence", "tag", t.name)
			return
		case errors.Is(err, ErrClosed) || a.ctx.Err() != nil:
			t.loading = false
			t.mu.Unlock()
			return
		}
		if a.backOff(t, err, answered, &conflicts) {
			return
		}
	}
}

// backOff records a failed fetch of t (err; answered: the store answered,
// so it is not down), logs it, waits before the next try and reports
// whether the loader stops: the allocator closed, or nobody waits for the
// segment (after a run of write conflicts, conflictTries of them).
// conflicts counts the write conflicts in a row of this loader's run.
// t.mu must be held; it is released.
func (a *Allocator) backOff(t *tagState, err error, answered bool, conflicts *int) (stop bool) {
	t.failing++
	t.lastErr, t.lastErrAt = err, time.Now()
	wait := min(retryMin<<min(t.failing-1, 10), retryMax)
	isConflict := conflict.Is(err)
	if isConflict {
		// A write conflict (deadlock, Galera certification, a node not
		// ready): the store answered and the fetch took nothing. Retried
		// at once, whether or not anyone waits, and counted apart from
		// failures; the store's up/down state is left as it is.
		*conflicts++
		t.conflicts++
		wait = conflictWait(*conflicts)
	} else {
		*conflicts = 0
		t.fetchErrors++
	}
	t.mu.Unlock()
	switch {
	case isConflict:
		a.noteConflict(t.name, "segment fetch", *conflicts, err, wait)
	case !answered:
		a.storeFailed(t.name, err)
	}
	if !isConflict {
		// Every failure at debug level; the store going down and coming
		// back are logged once each (storeFailed, storeAnswered).
		a.log.Debug("segment fetch failed", "tag", t.name, "err", err, "retry_in", wait)
	}

	select {
	case <-time.After(wait):
	case <-a.done:
		t.mu.Lock()
		t.loading = false
		t.mu.Unlock()
		return true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.waiters == 0 && (!isConflict || *conflicts >= conflictTries) {
		// Nobody is blocked: let the next request past the 10% mark (or
		// the next one to find the buffer empty) ask again, so an idle
		// tag does not poll a dead store.
		t.loading = false
		t.current.Load().asked.Store(0)
		return true
	}
	return false
}

// accept validates a fetched range against floor (the high-water mark and
// the max_id read back before the fetch started) and buffers it. t.mu must
// be held.
func (t *tagState) accept(r Range, now time.Time, floor int64) error {
	if r.End <= r.Start {
		return fmt.Errorf("store returned empty segment [%d, %d) for %q", r.Start, r.End, t.name)
	}
	start := max(r.Start, 1) // 0 and negatives are never IDs
	if floor = max(floor, t.highWater); start < floor {
		return &StaleSegmentError{Tag: t.name, Got: r, HighWater: floor}
	}
	if start >= r.End {
		return fmt.Errorf("store returned segment [%d, %d) for %q: no positive IDs", r.Start, r.End, t.name)
	}
	t.next = newSegment(start, r.End)
	t.highWater = r.End
	t.step = r.End - r.Start
	t.tableStep = r.TableStep
	t.lastFetch = now
	t.fetches++
	t.failing = 0
	t.unknown = nil
	t.broadcast()
	return nil
}

// broadcast wakes every waiter. t.mu must be held.
func (t *tagState) broadcast() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// fetch takes a segment of step IDs for tag starting at floor or above
// (Store.Fetch).
func (a *Allocator) fetch(tag string, step, floor int64) (Range, error) {
	select {
	case a.sem <- struct{}{}:
	case <-a.done:
		return Range{}, ErrClosed
	}
	defer func() { <-a.sem }()
	ctx, cancel := context.WithTimeout(a.ctx, a.opts.FetchTimeout)
	defer cancel()
	r, err := a.store.Fetch(ctx, tag, step, floor)
	if err != nil {
		return Range{}, fmt.Errorf("fetch segment for %q: %w", tag, err)
	}
	return r, nil
}

func (a *Allocator) create(tag string) error {
	ctx, cancel := context.WithTimeout(a.ctx, a.opts.FetchTimeout)
	defer cancel()
	if err := a.store.Create(ctx, tag, a.opts.DefaultStep); err != nil {
		return fmt.Errorf("auto-create sequence %q: %w", tag, err)
	}
	a.log.Info("sequence auto-created", "tag", tag, "step", a.opts.DefaultStep)
	return nil
}

// stopAtEnd stops tag's loading at its limit: waiting and later requests
// get pe once the buffered IDs are gone. t.mu must be held.
func (a *Allocator) stopAtEnd(t *tagState, pe *PastEndError) {
	if pe.RunOut {
		if t.pastEnd == nil {
			a.log.Warn("sequence has run out: no ID above its MAXVALUE is handed out", "tag", t.name, "max_value", pe.Limit.Max)
		}
		t.runOutUntil = a.opts.Clock().Add(a.opts.UnknownTTL)
	} else if t.pastEnd == nil && pe.Limit.By == TopBy {
		a.log.Warn("sequence is at its end: leaf_alloc.max_id, a signed BIGINT, is at 2^63-1; no ID past 2^63-2 is handed out",
			"tag", t.name, "limit", pe.Limit.Max)
	} else if t.pastEnd == nil {
		a.log.Warn("sequence is at its end: no segment fetched beyond the widest key column filled from it",
			"tag", t.name, "limit", pe.Limit.Max, "limited_by", pe.Limit.By, "next", pe.Next)
	}
	t.pastEnd = pe
	t.loading = false
	t.broadcast()
}
