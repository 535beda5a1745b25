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
// requests wait for it. Each try (loadOnce) takes the same steps in order:
// plan the fetch (nextFetch), fetch it, auto-create an unknown tag
// (createUnknown), stop at the tag's end (stopIfRanOut), read the answer
// (classify), trim the segment to what may be handed out (vetFetched),
// install it (install), or else repair a store that moved back, give up
// on an unknown tag or wait and try again (retry).
func (a *Allocator) load(t *tagState) {
	defer a.wg.Done()
	run := &loadRun{}
	for {
		if a.loadOnce(t, run) {
			return
		}
	}
}

// loadRun is what one run of a tag's loader (from startLoad until load
// returns) carries from one try to the next.
type loadRun struct {
	triedCreate bool // the tag was auto-created (or tried) in this run: never twice
	repaired    int  // repairs in this run without an accepted segment
	conflicts   int  // write conflicts in a row in this run
}

// fetched is one try's fetch and what the loader learned of it.
type fetched struct {
	floor int64 // the floor asked for: at or above every ID reserved or read back before the fetch
	r     Range
	err   error // the fetch's error; later why the segment was refused
	// moved is the store's refusal of the floor (nothing was taken).
	moved *MovedBackError
	// movedBack: the store's max_id is below IDs already issued (it
	// refused the floor, or returned a range below it): nothing of use
	// was taken, and the store is repaired before the next fetch.
	movedBack    bool
	answered     bool  // the store answered, so it is not down
	refusedAttrs []any // what the error log says about the refused fetch
}

// loadOnce makes one try at a segment for t and reports whether the
// loader's run is over: a segment installed, the tag at its end or
// unknown, the allocator closed, or nobody waiting any more. On false the
// loader tries again, at once or after retry's wait.
func (a *Allocator) loadOnce(t *tagState, run *loadRun) (done bool) {
	step, floor, stop := a.nextFetch(t)
	if stop {
		return true
	}
	r, err := a.fetchToTop(t.name, step, floor)
	created, err := a.createUnknown(t.name, run, err)
	if created {
		return false // fetch again, from the new row
	}
	if a.stopIfRanOut(t, err) {
		return true
	}
	f := a.classify(t.name, floor, r, err)
	t.mu.Lock()
	if again, stop := a.vetFetched(t, &f); again || stop {
		t.mu.Unlock()
		return stop
	}
	if a.install(t, &f) {
		t.mu.Unlock()
		return true
	}
	return a.retry(t, run, &f)
}

// nextFetch plans t's next fetch: the step to ask for (the row's own, 0,
// until a segment was fetched; then nextStep's) and the floor, at or above
// everything reserved or read back so far, so that a fetch starting now,
// in a store that never moves back, returns a segment above them all.
// stop: every ID of the next segment would be past the widest key column
// filled from the tag, so none is fetched and the loader stops
// (stopAtEnd). It takes and releases t.mu.
func (a *Allocator) nextFetch(t *tagState) (step, floor int64, stop bool) {
	now := a.opts.Clock()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.step > 0 {
		step = nextStep(t.step, t.tableStep, a.opts.MaxStep, now.Sub(t.lastFetch))
	}
	floor = max(t.highWater, t.seen, t.blockEnd)
	if pe := a.pastLimit(t, floor); pe != nil {
		a.stopAtEnd(t, pe)
		return 0, 0, true
	}
	return step, floor, false
}

// createUnknown auto-creates tag's row when the fetch found none
// (UnknownTagError) and the tag may be auto-created, once per loader run.
// created: the row was created; fetch again. Otherwise err is the fetch's
// error, or the failed create's.
func (a *Allocator) createUnknown(tag string, run *loadRun, err error) (created bool, _ error) {
	var unknown *UnknownTagError
	if !errors.As(err, &unknown) || !a.autoCreate(tag) || run.triedCreate {
		return false, err
	}
	run.triedCreate = true
	if err = a.create(tag); err == nil {
		return true, nil
	}
	return false, err
}

// stopIfRanOut stops the loader when the fetch found the store's max_id
// past the tag's MAXVALUE, or at the top of int64 (top.go): nothing was
// taken, and requests get the PastEndError once the buffered IDs are gone.
func (a *Allocator) stopIfRanOut(t *tagState, err error) bool {
	var ranOut *PastEndError
	if !errors.As(err, &ranOut) {
		return false
	}
	a.storeAnswered(t.name)
	t.mu.Lock()
	if ranOut.RunOut {
		t.maxValue = ranOut.Limit.Max
	}
	a.stopAtEnd(t, ranOut)
	t.mu.Unlock()
	return true
}

// classify reads a fetch's answer: whether the store refused the floor
// (its max_id moved back: nothing was taken) and whether it answered at
// all, which it notes (storeAnswered) so that a store marked down is up
// again.
func (a *Allocator) classify(tag string, floor int64, r Range, err error) fetched {
	f := fetched{floor: floor, r: r, err: err}
	var unknown *UnknownTagError
	f.movedBack = errors.As(err, &f.moved)
	f.answered = err == nil || f.movedBack || errors.As(err, &unknown)
	if f.answered {
		a.storeAnswered(tag)
	}
	return f
}

// vetFetched trims a fetched segment to what may be handed out: cut at
// the tag's MAXVALUE (cutAtMax) and started at the operator's floor
// (Raise). again: the segment was fetched before a Raise moved the store
// past it (every ID in it lies below the floor an operator just set), or
// before a block fetched on its own, which later IDs must follow: fetch
// again. stop: another proxy took the IDs up to the limit, so the segment
// holds none of use; it is dropped and the loader stops (stopAtEnd). A
// failed fetch is left as it is. t.mu must be held.
func (a *Allocator) vetFetched(t *tagState, f *fetched) (again, stop bool) {
	if f.err != nil {
		return false, false
	}
	f.r = t.cutAtMax(f.r)
	if f.r.End <= t.floor || f.r.End <= t.blockEnd {
		return true, false
	}
	if f.r.Start < t.floor {
		f.r.Start = t.floor
	}
	if pe := a.pastLimit(t, max(f.r.Start, 1)); pe != nil {
		a.stopAtEnd(t, pe)
		return false, true
	}
	return false, false
}

// install cuts a vetted segment at the tag's limit (cutAtLimit) and
// buffers it as the next one (accept), which ends the loader's run. When
// the fetch failed, or accept refuses the segment, it counts the refusal
// and leaves why in f: f.err, and f.movedBack for a range below IDs
// already issued (a store that took it below the floor anyway, ignoring
// it), so that retry repairs the store. t.mu must be held.
func (a *Allocator) install(t *tagState, f *fetched) (installed bool) {
	if f.movedBack {
		t.refused++
		f.refusedAttrs = []any{"max_id", f.moved.MaxID, "high_water", f.moved.Floor}
		return false
	}
	if f.err != nil {
		return false
	}
	f.r = a.cutAtLimit(t, f.r)
	if f.err = t.accept(f.r, a.opts.Clock(), f.floor); f.err == nil {
		t.loading = false
		return true
	}
	t.refused++
	var stale *StaleSegmentError
	if f.movedBack = errors.As(f.err, &stale); f.movedBack {
		f.refusedAttrs = []any{"got_start", f.r.Start, "got_end", f.r.End, "high_water", stale.HighWater}
	} else {
		a.log.Error("segment refused", "tag", t.name, "start", f.r.Start, "end", f.r.End, "err", f.err)
	}
	return false
}

// retry decides what follows a try that installed no segment, and reports
// whether the loader's run is over: a store whose max_id moved back is
// repaired and fetched from again at once (up to 3 times a run, then
// backed off like any failure); an unknown tag is remembered for
// UnknownTTL and the run ends; so it does when the allocator closes;
// anything else waits (backOff). t.mu must be held; it is released.
func (a *Allocator) retry(t *tagState, run *loadRun, f *fetched) (done bool) {
	var unknown *UnknownTagError
	switch {
	case f.movedBack:
		if a.repairMovedBack(t, run, f) {
			t.mu.Unlock()
			return false // fetch again at once, above the floor
		}
		// Still stale after repairs: another writer keeps moving it
		// back, or the store ignores the UPDATE; or the repair failed.
		// Back off like any failing fetch.
	case errors.As(f.err, &unknown):
		t.unknown = &UnknownTagError{Tag: t.name}
		t.unknownUntil = a.opts.Clock().Add(a.opts.UnknownTTL)
		t.loading = false
		t.broadcast()
		t.mu.Unlock()
		a.log.Debug("unknown sequence", "tag", t.name)
		return true
	case errors.Is(f.err, ErrClosed) || a.ctx.Err() != nil:
		t.loading = false
		t.mu.Unlock()
		return true
	}
	return a.backOff(t, f.err, f.answered, &run.conflicts)
}

// repairMovedBack pushes the store's max_id past the high-water mark
// (plus a margin) after it moved back below IDs already issued (failover
// to a stale replica, a restored backup, a manual edit), and reports
// whether to fetch again at once: the repair worked and this run has made
// at most 3. A failed repair is added to f.err. t.mu must be held; it is
// released during the repair and held again on return.
func (a *Allocator) repairMovedBack(t *tagState, run *loadRun, f *fetched) (again bool) {
	to := addSat(max(t.highWater, t.seen, t.blockEnd), max(a.opts.RepairMargin, 10*t.step))
	t.mu.Unlock()
	a.log.Error("leaf_alloc.max_id moved back below IDs already issued (failover to a stale replica? restored backup? manual edit?); "+
		"segment refused, pushing max_id past the high-water mark",
		append(append([]any{"tag", t.name}, f.refusedAttrs...), "new_max_id_floor", to)...)
	rerr := a.repair(t.name, to)
	t.mu.Lock()
	if rerr != nil {
		f.err = fmt.Errorf("%w; repairing it failed: %w", f.err, rerr)
		return false
	}
	t.repairs++
	run.repaired++
	return run.repaired <= 3
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
