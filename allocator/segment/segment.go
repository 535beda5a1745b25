// Package segment is the Leaf-segment ID allocator: per tag, a double buffer
// of ID ranges ("segments") drawn from a Store (leaf_alloc), handed out with
// one atomic add per ID.
//
// Where it departs from Leaf:
//   - a request that finds both segments empty waits on a channel (no spin)
//     for at most Options.WaitTimeout, then gets an ExhaustedError naming the
//     tag and the store's last error;
//   - while a buffered segment remains no request ever waits for the store:
//     the next segment is fetched in the background once 10% of the current
//     one is used, by at most Options.MaxLoaders loaders across all tags;
//   - an unknown tag is looked up in the store at once (and the miss cached
//     briefly) instead of on a 60 s refresh;
//   - a per-tag high-water mark refuses any fetched segment that starts
//     below IDs already reserved, so a store that moved back (failover to a
//     stale replica) cannot make this allocator issue duplicates.
//
// IDs from one Allocator for one tag are unique and increasing (for calls
// that do not overlap in time); across Allocators sharing a table they are
// unique because the Store's ranges are disjoint. IDs are always > 0.
package segment

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options tunes an Allocator. Zero values take the documented defaults.
type Options struct {
	// WaitTimeout is the longest a request waits when both segments are
	// empty (default 2s).
	WaitTimeout time.Duration
	// MaxLoaders bounds concurrent store fetches across all tags (default 4).
	MaxLoaders int
	// AutoCreate inserts a missing tag with DefaultStep (default 1000) on
	// first use instead of failing with UnknownTagError.
	AutoCreate  bool
	DefaultStep int64
	// MaxStep caps dynamic step growth (default 1_000_000). A table step
	// above it wins.
	MaxStep int64
	// Clock drives step sizing and the unknown-tag cache (default time.Now).
	Clock func() time.Time
	// Logger receives fetch failures and refused segments (default: none).
	Logger *slog.Logger
	// FetchTimeout bounds one store fetch (default 5s), so that a store that
	// hangs rather than refuses cannot hold a loader forever.
	FetchTimeout time.Duration
	// UnknownTTL is how long a tag found missing is answered from memory
	// before the store is asked again (default 1s).
	UnknownTTL time.Duration
}

func (o Options) withDefaults() Options {
	if o.WaitTimeout <= 0 {
		o.WaitTimeout = 2 * time.Second
	}
	if o.MaxLoaders <= 0 {
		o.MaxLoaders = 4
	}
	if o.DefaultStep <= 0 {
		o.DefaultStep = 1000
	}
	if o.MaxStep <= 0 {
		o.MaxStep = 1_000_000
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.FetchTimeout <= 0 {
		o.FetchTimeout = 5 * time.Second
	}
	if o.UnknownTTL <= 0 {
		o.UnknownTTL = time.Second
	}
	return o
}

// Retry pacing for a failing store: one loader per tag retries while
// requests wait, doubling from retryMin to retryMax, so an outage costs the
// store at most a few queries per second per tag.
const (
	retryMin = 25 * time.Millisecond
	retryMax = time.Second
)

// maxTagLen is leaf_alloc.biz_tag's width: longer names cannot exist, so
// they are refused without asking the store.
const maxTagLen = 128

// segment is one range [start, end) being handed out. next runs past end
// once the segment is used up: whoever gets a value >= end moves on.
type segment struct {
	next    atomic.Int64
	start   int64
	end     int64
	trigger int64         // once next passes it (10% used), the following segment is fetched
	asked   atomic.Uint32 // 1 once the following segment was requested
}

func newSegment(start, end int64) *segment {
	s := &segment{start: start, end: end, trigger: start + (end-start)/10}
	s.next.Store(start)
	return s
}

func (s *segment) exhausted() bool { return s.next.Load() >= s.end }

// tagState is one tag's double buffer. cur is read lock-free; everything
// else is guarded by mu.
type tagState struct {
	name string
	cur  atomic.Pointer[segment]

	mu        sync.Mutex
	next      *segment      // fetched, waiting to become cur
	loading   bool          // a loader goroutine owns the fetch for this tag
	waiters   int           // requests blocked in wait
	changed   chan struct{} // closed and replaced when next arrives or the tag turns out unknown
	step      int64         // step of the last accepted fetch; 0 before the first
	tableStep int64
	lastFetch time.Time
	hwm       int64 // end of the highest segment accepted: nothing below may be served again

	unknownUntil time.Time // misses answered from memory until then
	unknown      *UnknownTagError

	failing     int // consecutive failed fetches (0 once one succeeds)
	lastErr     error
	lastErrAt   time.Time
	fetches     uint64
	fetchErrors uint64
	refused     uint64
}

func newTagState(name string) *tagState {
	t := &tagState{name: name, changed: make(chan struct{})}
	t.cur.Store(newSegment(0, 0)) // empty: the first request goes to the slow path
	return t
}

// Allocator hands out IDs for any number of tags. Safe for concurrent use.
type Allocator struct {
	store Store
	opts  Options
	log   *slog.Logger

	tags   atomic.Pointer[map[string]*tagState] // copy-on-write: tags are added rarely, read on every call
	closed atomic.Bool

	mu      sync.Mutex // serialises copy-on-write of tags
	pruneAt int

	sem    chan struct{} // loader concurrency bound
	ctx    context.Context
	cancel context.CancelFunc
	done   <-chan struct{}

	loadMu  sync.Mutex // orders loader registration against Close's Wait
	stopped bool
	wg      sync.WaitGroup
}

// New returns an Allocator over store. Nothing is fetched until a tag is
// first asked for.
func New(store Store, opts Options) *Allocator {
	opts = opts.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	a := &Allocator{
		store:   store,
		opts:    opts,
		log:     opts.Logger,
		sem:     make(chan struct{}, opts.MaxLoaders),
		ctx:     ctx,
		cancel:  cancel,
		done:    ctx.Done(),
		pruneAt: 64,
	}
	m := map[string]*tagState{}
	a.tags.Store(&m)
	return a
}

// Close stops the loaders and waits for them. Later calls return ErrClosed;
// calls waiting for a segment return ErrClosed at once.
func (a *Allocator) Close() {
	a.closed.Store(true)
	a.loadMu.Lock()
	a.stopped = true
	a.loadMu.Unlock()
	a.cancel()
	a.wg.Wait()
}

// Next returns one ID for tag.
func (a *Allocator) Next(ctx context.Context, tag string) (int64, error) {
	// The fast path: a map read, one atomic add, no lock, no allocation.
	if t := (*a.tags.Load())[tag]; t != nil && !a.closed.Load() {
		seg := t.cur.Load()
		if v := seg.next.Add(1) - 1; v < seg.end {
			if v >= seg.trigger && seg.asked.Load() == 0 {
				a.prefetch(t, seg)
			}
			return v, nil
		}
	}
	return a.nextSlow(ctx, tag)
}

func (a *Allocator) nextSlow(ctx context.Context, tag string) (int64, error) {
	var one [1]int64
	ids, err := a.NextN(ctx, tag, 1, one[:0])
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// NextN appends n IDs for tag to dst, ascending, and returns it. The IDs may
// span segments. On error dst is returned unchanged; IDs taken before the
// error are dropped, never handed out again.
func (a *Allocator) NextN(ctx context.Context, tag string, n int, dst []int64) ([]int64, error) {
	if n <= 0 {
		return dst, nil
	}
	if a.closed.Load() {
		return dst, ErrClosed
	}
	t, err := a.state(tag)
	if err != nil {
		return dst, err
	}
	orig := len(dst)
	dst = slices.Grow(dst, n)
	for n > 0 {
		seg := t.cur.Load()
		want := int64(n)
		v := seg.next.Add(want) - want
		if v < seg.end {
			hi := min(v+want, seg.end)
			if hi > seg.trigger && seg.asked.Load() == 0 {
				a.prefetch(t, seg)
			}
			for id := v; id < hi; id++ {
				dst = append(dst, id)
			}
			n -= int(hi - v)
			continue
		}
		if err := a.advance(ctx, t, seg); err != nil {
			return dst[:orig], err
		}
	}
	return dst, nil
}

// state finds or registers tag.
func (a *Allocator) state(tag string) (*tagState, error) {
	if t := (*a.tags.Load())[tag]; t != nil {
		return t, nil
	}
	if tag == "" || len(tag) > maxTagLen {
		return nil, &UnknownTagError{Tag: strings.Clone(tag)}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	old := *a.tags.Load()
	if t := old[tag]; t != nil {
		return t, nil
	}
	m := make(map[string]*tagState, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	if len(m) >= a.pruneAt {
		a.prune(m)
		a.pruneAt = max(64, 2*len(m))
	}
	// The caller's string may alias a buffer it reuses (the proxy passes
	// tags sliced from the packet): the map and the loader keep a copy.
	tag = strings.Clone(tag)
	t := newTagState(tag)
	m[tag] = t
	a.tags.Store(&m)
	return t, nil
}

// prune drops tags that were looked up, found missing, never served an ID
// and whose miss has expired: a flood of made-up tag names must not grow
// the map without bound. Tags that ever held a segment stay, with their
// high-water mark.
func (a *Allocator) prune(m map[string]*tagState) {
	now := a.opts.Clock()
	for k, t := range m {
		t.mu.Lock()
		drop := t.hwm == 0 && !t.loading && t.waiters == 0 && t.unknown != nil && !now.Before(t.unknownUntil)
		t.mu.Unlock()
		if drop {
			delete(m, k)
		}
	}
}

// prefetch asks for the segment after seg, once per segment.
func (a *Allocator) prefetch(t *tagState, seg *segment) {
	if !seg.asked.CompareAndSwap(0, 1) {
		return
	}
	t.mu.Lock()
	if t.cur.Load() == seg && t.next == nil && !t.loading {
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
		cur := t.cur.Load()
		if cur != seg && !cur.exhausted() {
			t.mu.Unlock()
			return nil // someone else switched already
		}
		seg = cur
		if t.next != nil {
			t.cur.Store(t.next)
			t.next = nil
			t.mu.Unlock()
			return nil
		}
		if t.unknown != nil && a.opts.Clock().Before(t.unknownUntil) {
			err := t.unknown
			t.mu.Unlock()
			return err
		}
		if !t.loading {
			a.startLoad(t)
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
	for {
		now := a.opts.Clock()
		t.mu.Lock()
		step := int64(0) // the row's own step until we know it
		if t.step > 0 {
			step = nextStep(t.step, t.tableStep, a.opts.MaxStep, now.Sub(t.lastFetch))
		}
		t.mu.Unlock()

		r, err := a.fetch(t.name, step)
		var unknown *UnknownTagError
		if errors.As(err, &unknown) && a.opts.AutoCreate && !triedCreate {
			triedCreate = true
			if err = a.create(t.name); err == nil {
				continue
			}
		}

		t.mu.Lock()
		switch {
		case err == nil:
			if err = t.accept(r, a.opts.Clock()); err == nil {
				t.loading = false
				t.mu.Unlock()
				return
			}
			t.refused++
			a.log.Error("segment refused: store moved back", "tag", t.name, "start", r.Start, "end", r.End, "high_water", t.hwm)
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
		t.failing++
		t.fetchErrors++
		t.lastErr, t.lastErrAt = err, time.Now()
		wait := min(retryMin<<min(t.failing-1, 10), retryMax)
		t.mu.Unlock()
		a.log.Warn("segment fetch failed", "tag", t.name, "err", err, "retry_in", wait)

		select {
		case <-time.After(wait):
		case <-a.done:
			t.mu.Lock()
			t.loading = false
			t.mu.Unlock()
			return
		}
		t.mu.Lock()
		if t.waiters == 0 {
			// Nobody is blocked: let the next request past the 10% mark (or
			// the next one to find the buffer empty) ask again, so an idle
			// tag does not poll a dead store.
			t.loading = false
			t.cur.Load().asked.Store(0)
			t.mu.Unlock()
			return
		}
		t.mu.Unlock()
	}
}

// accept validates a fetched range against the high-water mark and buffers
// it. t.mu must be held.
func (t *tagState) accept(r Range, now time.Time) error {
	if r.End <= r.Start {
		return fmt.Errorf("store returned empty segment [%d, %d) for %q", r.Start, r.End, t.name)
	}
	start := max(r.Start, 1) // 0 and negatives are never IDs
	if start < t.hwm {
		return &StaleSegmentError{Tag: t.name, Got: r, HighWater: t.hwm}
	}
	if start >= r.End {
		return fmt.Errorf("store returned segment [%d, %d) for %q: no positive IDs", r.Start, r.End, t.name)
	}
	t.next = newSegment(start, r.End)
	t.hwm = r.End
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

func (a *Allocator) fetch(tag string, step int64) (Range, error) {
	select {
	case a.sem <- struct{}{}:
	case <-a.done:
		return Range{}, ErrClosed
	}
	defer func() { <-a.sem }()
	ctx, cancel := context.WithTimeout(a.ctx, a.opts.FetchTimeout)
	defer cancel()
	r, err := a.store.Fetch(ctx, tag, step)
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

// TagStats is a snapshot of one tag's buffers.
type TagStats struct {
	Tag string
	// Current is the segment being served; NextID the next ID it would give
	// (>= Current.End when used up).
	Current   Range
	NextID    int64
	Remaining int64
	// NextReady says the following segment is buffered (Next holds it).
	NextReady bool
	Next      Range
	Loading   bool
	// Step is the size of the last fetch, TableStep the row's step.
	Step      int64
	TableStep int64
	// HighWater is the end of the highest segment accepted: the floor for
	// any future segment.
	HighWater   int64
	Fetches     uint64
	FetchErrors uint64
	// Refused counts segments rejected by the high-water mark.
	Refused   uint64
	LastErr   error
	LastErrAt time.Time
}

// Tags lists, sorted, the tags asked for so far (including ones found
// missing that have not been pruned yet); Stats reports on each.
func (a *Allocator) Tags() []string {
	m := *a.tags.Load()
	tags := make([]string, 0, len(m))
	for k := range m {
		tags = append(tags, k)
	}
	slices.Sort(tags)
	return tags
}

// Stats reports tag's state; false if the tag was never asked for.
func (a *Allocator) Stats(tag string) (TagStats, bool) {
	t := (*a.tags.Load())[tag]
	if t == nil {
		return TagStats{}, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	cur := t.cur.Load()
	s := TagStats{
		Tag:         tag,
		Current:     Range{Start: cur.start, End: cur.end, TableStep: t.tableStep},
		NextID:      cur.next.Load(),
		Loading:     t.loading,
		Step:        t.step,
		TableStep:   t.tableStep,
		HighWater:   t.hwm,
		Fetches:     t.fetches,
		FetchErrors: t.fetchErrors,
		Refused:     t.refused,
		LastErr:     t.lastErr,
		LastErrAt:   t.lastErrAt,
	}
	s.Remaining = max(0, cur.end-s.NextID)
	if t.next != nil {
		s.NextReady = true
		s.Next = Range{Start: t.next.start, End: t.next.end, TableStep: t.tableStep}
	}
	return s, true
}
