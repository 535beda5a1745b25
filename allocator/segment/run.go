package segment

import (
	"context"
	"errors"

	"github.com/leafproxy/leafproxy/internal/nonblock"
)

// A statement's keys are consecutive. InnoDB gives the rows of one
// multi-row INSERT consecutive AUTO_INCREMENT values, and ORMs without
// RETURNING (GORM's batch insert, Sequelize's bulkCreate on MariaDB) set
// row i's id to insert_id + i. So NextN's n IDs are one run [first,
// first+n), never split across segments, whatever other allocators
// sharing the store take meanwhile:
//
//   - from the current segment when n are left there (one
//     compare-and-swap);
//   - else across the end of the current segment into the buffered next
//     one when that continues it exactly (no other allocator fetched in
//     between) and nothing of it was served yet (join);
//   - else from the buffered next segment when it holds n (it becomes
//     current; what is left of the current one, fewer than n IDs, is
//     dropped, as Block drops it);
//   - else, when a segment of the tag's step would hold n (or no segment
//     was fetched yet), from the next segment once the loader brings it
//     (the wait NEXTVAL waits when both buffers are empty, bounded by
//     WaitTimeout; no wait while a buffered segment can serve; again
//     when other callers used it up first, up to maxRunWaits times);
//   - else from a range of exactly n fetched for this run alone (Block's
//     dedicated range: checked against the high-water mark, the buffers
//     below it dropped so that later IDs are above it).
//
// The IDs skipped (a tail dropped) are never handed out: the IDs stay
// unique and increasing, only denser or sparser. At the tag's end (its
// widest key column, MAXVALUE, the top of int64) a run that does not fit
// takes nothing: the PastEndError says how many IDs were left (Fit),
// which stay for shorter statements, as AUTO_INCREMENT hands out the last
// keys.

// maxRunWaits bounds how many segments run waits for before it fetches a
// range of its own.
const maxRunWaits = 4

// run reserves n > 1 consecutive IDs of t and returns the first.
func (a *Allocator) run(ctx context.Context, t *tagState, n int64) (int64, error) {
	waits := 0
	for {
		seg := t.current.Load()
		v := seg.next.Load()
		if seg.holds(v) && seg.end-v >= n {
			if seg.next.CompareAndSwap(v, v+n) {
				if v+n > seg.trigger && seg.asked.Load() == 0 {
					a.prefetch(t, seg)
				}
				return v, nil
			}
			continue
		}
		first, changed, ok := a.join(t, seg, n)
		if ok {
			if cur := t.current.Load(); first+n > cur.trigger && cur.asked.Load() == 0 {
				a.prefetch(t, cur)
			}
			return first, nil
		}
		if changed {
			continue
		}
		if pe := a.runPastEnd(t); pe != nil {
			return 0, pe
		}
		if step := t.lastStep(); waits < maxRunWaits && (n <= step || step == 0) {
			// The next segment will hold the run (or the tag has
			// none yet: its first fetch says its step): wait for it.
			// Other callers may use up what it brings before this one
			// looks: it waits again, a few times, before it fetches a
			// range of its own (which drops the buffers below it).
			waits++
			if err := a.advance(ctx, t, seg); err != nil {
				return 0, withFit(t, err)
			}
			continue
		}
		break
	}
	if nonblock.Requested(ctx) {
		return 0, nonblock.ErrWouldBlock
	}
	first, err := a.dedicated(ctx, t, n)
	if err != nil {
		return 0, withFit(t, err)
	}
	return first, nil
}

// runPastEnd is t's PastEndError (with Fit) when t is stopped at its end
// (its limit, MAXVALUE or the top of int64): a run that does not fit what
// is left fetches nothing.
func (a *Allocator) runPastEnd(t *tagState) error {
	t.mu.Lock()
	pe := t.pastEnd
	if pe != nil && pe.RunOut && a.retryRunOut(t) {
		pe = nil // MAXVALUE may have been raised: ask the store
	}
	t.mu.Unlock()
	if pe == nil {
		return nil
	}
	return withFit(t, pe)
}

// withFit is err with the IDs left in t's current segment as the Fit of a
// PastEndError: the rows of the statement that would have had keys.
func withFit(t *tagState, err error) error {
	var pe *PastEndError
	if !errors.As(err, &pe) {
		return err
	}
	cp := *pe
	cp.Fit, cp.Counted = 0, true
	cur := t.current.Load()
	if v := cur.next.Load(); cur.holds(v) {
		cp.Fit = cur.end - v
	}
	return &cp
}

// join takes a run of n from the buffered next segment when the current
// one, seg, cannot hold it: across seg's end when the next one continues
// seg exactly and none of it was served, else from the next one alone
// when it holds n. The next segment becomes current with the run already
// taken, before anyone else can draw from it. changed: the current
// segment is no longer seg (the caller looks again). With nothing
// buffered and no fetch under way it starts the loader.
func (a *Allocator) join(t *tagState, seg *segment, n int64) (first int64, changed, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.current.Load() != seg {
		return 0, true, false
	}
	nx := t.next
	if nx == nil {
		if !t.loading && (t.unknown == nil || !a.opts.Clock().Before(t.unknownUntil)) && t.pastEnd == nil {
			a.startLoad(t)
		}
		return 0, false, false
	}
	// nx is not served yet: only a holder of t.mu moves its cursor
	// (Advance), so it stays as read here.
	nv := nx.next.Load()
	if nx.start == seg.end && nv == nx.start {
		for {
			v := seg.next.Load()
			if !seg.holds(v) || seg.end-v+nx.end-nx.start < n {
				break
			}
			if !seg.next.CompareAndSwap(v, seg.end) {
				continue // another caller took some of the tail: look again
			}
			nx.next.Store(nx.start + n - (seg.end - v))
			t.current.Store(nx)
			t.next = nil
			return v, true, true
		}
	}
	if nv < nx.start || nx.end-nv < n {
		return 0, false, false
	}
	nx.next.Store(nv + n)
	seg.next.Store(seg.end) // its tail, fewer than n, is dropped
	t.current.Store(nx)
	t.next = nil
	return nv, true, true
}
