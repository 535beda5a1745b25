package segment

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/leafproxy/leafproxy/internal/conflict"
	"github.com/leafproxy/leafproxy/internal/nonblock"
)

// MaxBlock is the largest block Block reserves at once.
const MaxBlock = 1 << 40

// Block reserves n consecutive IDs of tag, [first, first+n), for one
// caller that numbers rows it cannot see one by one (INSERT ... SELECT,
// an UPDATE giving every row a NEXTVAL): the server computes first+k for
// its k-th row.
//
// The block comes from the current segment when that has n IDs left (one
// compare-and-swap, no store), else from the buffered next segment when
// that has (it becomes current: takeNext), else, when a segment of the
// tag's current step would hold it, from the next segment once it arrives
// (waiting as NEXTVAL waits when both buffers are empty); otherwise the
// store hands out a range of exactly n for this block alone (one fetch, as
// a segment fetch but with its own size), above everything buffered, which
// is dropped (dropBuffersBelow) so that later IDs are above the block.
// Either way the IDs are this caller's alone and never handed out again. A dedicated
// range is checked against the tag's high-water mark like a segment (a
// store that moved back is refused, not served) and raises the marks the
// store watch compares with.
func (a *Allocator) Block(ctx context.Context, tag string, n int64) (int64, error) {
	if n <= 0 || n > MaxBlock {
		return 0, fmt.Errorf("reserve a block of %d IDs for %q: the size must be 1 to %d", n, tag, int64(MaxBlock))
	}
	if a.closed.Load() {
		return 0, ErrClosed
	}
	t, err := a.state(tag)
	if err != nil {
		return 0, err
	}
	waited, retried := false, false
again:
	for {
		seg := t.current.Load()
		v := seg.next.Load()
		if !seg.holds(v) || seg.end-v < n {
			if a.takeNext(t, seg, n) {
				continue
			}
			if step := t.lastStep(); !waited && (n <= step || step == 0) {
				// The next segment will hold the block (or, before the
				// tag's first fetch, may: its step is not known yet):
				// wait for it as NEXTVAL does (bounded by WaitTimeout,
				// and only when nothing buffered can serve), rather than
				// fetch a range of its own, which drops what the loader
				// brings meanwhile: a tag's first use as a block would
				// skip its first segment (issue 40).
				waited = true
				if err := a.advance(ctx, t, seg); err != nil {
					return 0, err
				}
				continue
			}
			break
		}
		if seg.next.CompareAndSwap(v, v+n) {
			if v+n > seg.trigger && seg.asked.Load() == 0 {
				a.prefetch(t, seg)
			}
			return v, nil
		}
	}
	if nonblock.Requested(ctx) {
		return 0, nonblock.ErrWouldBlock
	}
	first, err := a.dedicated(ctx, t, n)
	var pe *PastEndError
	if errors.As(err, &pe) && pe.RunOut && !retried {
		// The loader may have taken the last segment below MAXVALUE
		// meanwhile: the block comes from it when it holds it.
		retried = true
		if err := a.advance(ctx, t, t.current.Load()); err != nil {
			return 0, err
		}
		goto again
	}
	return first, err
}

// takeNext is Block's way to the double buffer: when the current segment
// seg cannot hold a block of n and the buffered next one can, the next
// one becomes current, as when Next uses a segment up (what is left of
// seg, fewer than n IDs, is dropped), so that blocks are served from the
// buffer at memory speed while the loader keeps it filled. When nothing is
// buffered and no fetch is under way (a tag used for blocks alone), it
// starts the loader, so that later blocks find a segment. It reports
// whether the current segment changed (the caller tries again).
func (a *Allocator) takeNext(t *tagState, seg *segment, n int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.current.Load() != seg {
		return true
	}
	nx := t.next
	if nx == nil {
		if !t.loading && (t.unknown == nil || !a.opts.Clock().Before(t.unknownUntil)) {
			a.startLoad(t)
		}
		return false
	}
	if nx.end-nx.next.Load() < n {
		return false
	}
	t.current.Store(nx)
	t.next = nil
	return true
}

// lastStep is the size of t's last segment fetch (0 before the first).
func (t *tagState) lastStep() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.step
}

// dedicated fetches a range of exactly n for t.
func (a *Allocator) dedicated(ctx context.Context, t *tagState, n int64) (int64, error) {
	triedCreate := false
	started, conflicts := time.Now(), 0
	for attempt := 0; ; attempt++ {
		t.mu.Lock()
		if t.unknown != nil && a.opts.Clock().Before(t.unknownUntil) {
			err := t.unknown
			t.mu.Unlock()
			return 0, err
		}
		// Everything below this was reserved or read back before the
		// fetch starts: a store that never moves back answers above it.
		floor := max(t.highWater, t.seen, t.blockEnd, t.floor)
		// A tag that ran out asks the store again after UnknownTTL.
		if pe := a.pastLimit(t, floor); pe != nil && (!pe.RunOut || a.opts.Clock().Before(t.runOutUntil)) {
			t.mu.Unlock()
			return 0, pe
		}
		t.mu.Unlock()

		r, err := a.fetch(t.name, n, floor)
		if overflowed(err) {
			// max_id + n is past the top of int64 (top.go): fewer than n
			// IDs are left, and a block is all or nothing.
			return 0, atTop(t.name)
		}
		if conflict.Is(err) {
			// Nothing was taken: the same fetch is tried again.
			if conflicts++; a.retryConflict(ctx, t, conflicts, err, started) {
				attempt--
				continue
			}
			return 0, err
		}
		var ranOut *PastEndError
		if errors.As(err, &ranOut) {
			t.mu.Lock()
			t.maxValue = ranOut.Limit.Max
			t.runOutUntil = a.opts.Clock().Add(a.opts.UnknownTTL)
			t.mu.Unlock()
			return 0, ranOut
		}
		var unknown *UnknownTagError
		if errors.As(err, &unknown) {
			if a.autoCreate(t.name) && !triedCreate {
				triedCreate = true
				if err = a.create(t.name); err == nil {
					continue
				}
			} else {
				miss := &UnknownTagError{Tag: t.name}
				t.mu.Lock()
				t.unknown = miss
				t.unknownUntil = a.opts.Clock().Add(a.opts.UnknownTTL)
				t.mu.Unlock()
				return 0, miss // not t.unknown: the loader may set it meanwhile
			}
		}
		if err != nil {
			return 0, err
		}
		t.mu.Lock()
		if r.MaxValue > 0 && r.End-1 > r.MaxValue {
			// The block does not fit below MAXVALUE: none of it is
			// handed out (a block is all or nothing).
			t.maxValue = r.MaxValue
			t.blockEnd = max(t.blockEnd, r.End)
			t.runOutUntil = a.opts.Clock().Add(a.opts.UnknownTTL)
			t.mu.Unlock()
			return 0, runOut(t.name, r.MaxValue, r.MaxValue+1)
		}
		if l, ok := a.limitOf(t.name); ok && r.End-1 > l.Max {
			// The block reaches past the widest key column filled from
			// the tag: none of it is handed out (limit.go).
			t.blockEnd = max(t.blockEnd, r.End)
			t.mu.Unlock()
			return 0, &PastEndError{Tag: t.name, Limit: l, Next: max(r.Start, l.Max+1)}
		}
		if r.Start < t.floor && attempt < 3 {
			// Fetched before a SETVAL moved the store past it.
			t.mu.Unlock()
			continue
		}
		if r.Start < floor || r.Start < 1 || r.End-r.Start != n {
			t.refused++
			t.mu.Unlock()
			return 0, fmt.Errorf("reserve a block of %d IDs for %q: %w", n, t.name,
				&StaleSegmentError{Tag: t.name, Got: r, HighWater: floor})
		}
		t.blockEnd = max(t.blockEnd, r.End)
		t.blocks++
		a.dropBuffersBelow(t, r.Start)
		t.mu.Unlock()
		return r.Start, nil
	}
}

// dropBuffersBelow drops the buffered segments that lie below a block
// fetched on its own from start on (all of them, unless another block
// fetched later already replaced them), and starts loading a segment above
// it at once: every ID handed out after the block is then above it, as a
// native sequence's NEXTVAL after a block is, and AUTO_INCREMENT's key
// after an INSERT ... SELECT. (A segment already on its way from the store
// lies below the block too; the loader fetches again, see load.) t.mu
// must be held.
func (a *Allocator) dropBuffersBelow(t *tagState, start int64) {
	if cur := t.current.Load(); cur.end <= start && cur.next.Load() < cur.end {
		cur.next.Store(cur.end)
		t.current.Store(newSegment(0, 0))
	}
	if t.next != nil && t.next.end <= start {
		t.next = nil
	}
	if cur := t.current.Load(); !t.loading && t.next == nil && cur.next.Load() >= cur.end {
		a.startLoad(t)
	}
}

// Advance makes every ID this allocator hands out for tag from now on
// greater than v, as AUTO_INCREMENT's counter moves past an explicit key:
// v is a key written through the proxy, or one a generated key collided
// with. Inside the buffered segments only the cursor moves (no store
// call), so explicit and generated keys interleave exactly as with
// AUTO_INCREMENT; buffered IDs below v are dropped. When v may lie at or
// above the store's max_id (it is not below the highest max_id this
// allocator reserved or read back), the store's max_id is raised to v+1
// in one conditional UPDATE (never lowered), so the next segment starts
// right above v and later explicit keys near v fall inside it (no store
// call); a segment fetched meanwhile is trimmed above v. Other proxies'
// buffered segments are not touched: a key of theirs that collides is
// retried by their engine (1062 on a generated key). An unknown tag is
// left alone.
func (a *Allocator) Advance(ctx context.Context, tag string, v int64) error {
	if v <= 0 || v >= math.MaxInt64-1 || a.closed.Load() {
		return nil
	}
	t := (*a.tags.Load())[tag]
	if t == nil {
		var err error
		if t, err = a.state(tag); err != nil {
			return nil
		}
	}
	for {
		seg := t.current.Load()
		n := seg.next.Load()
		if n < seg.start {
			n = math.MaxInt64 // wrapped past the top: used up (segment.exhausted)
		}
		if v < n {
			return nil // everything still to come is above v
		}
		if v >= seg.end {
			break
		}
		if seg.next.CompareAndSwap(n, v+1) {
			return nil
		}
	}
	t.mu.Lock()
	cur := t.current.Load()
	if cur.next.Load() > v {
		t.mu.Unlock()
		return nil // moved on meanwhile
	}
	if nx := t.next; nx != nil && v < nx.end {
		// The following segment holds v: it is served from above v, and
		// what is left of the current one (below v) is used up.
		if nx.next.Load() <= v {
			nx.next.Store(v + 1) // not served yet: it is swapped in under t.mu
		}
		cur.next.Store(cur.end)
		t.mu.Unlock()
		return nil
	}
	known := max(t.highWater, t.seen, t.blockEnd, t.floor)
	if v < known {
		// Every buffered ID is below v and the store's max_id is at or
		// above known: drop the buffers, the next fetch is above v.
		t.dropBelow(v + 1)
		t.mu.Unlock()
		return nil
	}
	// Never fetched here: the row may not exist yet (a tag auto-created
	// on first use, a per_table tag whose table's first key is explicit).
	// The UPDATE below would then change nothing and the first fetch
	// would create the row below v: create it first.
	fresh := t.highWater == 0 && t.seen == 0 && t.blockEnd == 0 && t.next == nil
	t.mu.Unlock()
	if nonblock.Requested(ctx) {
		return nonblock.ErrWouldBlock
	}
	if fresh && a.autoCreate(t.name) {
		if err := a.create(t.name); err != nil {
			return fmt.Errorf("move sequence %q past the key %d: %w", t.name, v, err)
		}
	}
	to := v + 1
	if err := a.repairCtx(ctx, t.name, to); err != nil {
		return fmt.Errorf("move sequence %q past the key %d: %w", t.name, v, err)
	}
	t.mu.Lock()
	t.seen = max(t.seen, to)
	t.dropBelow(v + 1)
	t.mu.Unlock()
	return nil
}

// dropBelow makes floor the lowest ID handed out from now on, dropping the
// buffered segments (all below it). t.mu must be held.
func (t *tagState) dropBelow(floor int64) {
	t.floor = max(t.floor, floor)
	old := t.current.Load()
	old.next.Store(old.end)
	t.current.Store(newSegment(0, 0))
	t.next = nil
}

// repairCtx raises tag's max_id to floor (never lowers it), bounded by ctx
// and FetchTimeout.
func (a *Allocator) repairCtx(ctx context.Context, tag string, floor int64) error {
	ctx, cancel := context.WithTimeout(ctx, a.opts.FetchTimeout)
	defer cancel()
	return a.store.Repair(ctx, tag, floor)
}

// Known reports whether tag exists: this allocator served IDs of it, or
// leaf_alloc has its row (one read; without AutoCreate a miss is
// remembered for UnknownTTL, as a failed fetch's is). It lets a caller
// tell a tag from another kind of sequence of the same name (the engine:
// MariaDB's native SEQUENCEs).
func (a *Allocator) Known(ctx context.Context, tag string) (bool, error) {
	if t := (*a.tags.Load())[tag]; t != nil {
		t.mu.Lock()
		known := t.highWater > 0 || t.blockEnd > 0 || t.next != nil
		missing := t.unknown != nil && a.opts.Clock().Before(t.unknownUntil)
		t.mu.Unlock()
		if known || missing {
			return known, nil
		}
	}
	if tag == "" || !utf8.ValidString(tag) || utf8.RuneCountInString(tag) > maxTagLen {
		return false, nil
	}
	if nonblock.Requested(ctx) {
		return false, nonblock.ErrWouldBlock
	}
	ctx, cancel := context.WithTimeout(ctx, a.opts.FetchTimeout)
	defer cancel()
	got, err := a.store.Peek(ctx, []string{tag})
	if err != nil {
		return false, fmt.Errorf("look up sequence %q: %w", tag, err)
	}
	if _, ok := got[tag]; ok {
		return true, nil
	}
	if !a.autoCreate(tag) {
		if t, err := a.state(tag); err == nil {
			t.mu.Lock()
			t.unknown = &UnknownTagError{Tag: t.name}
			t.unknownUntil = a.opts.Clock().Add(a.opts.UnknownTTL)
			t.mu.Unlock()
		}
	}
	return false, nil
}
