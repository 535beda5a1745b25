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
//     stale replica) cannot make this allocator issue duplicates; the fetch
//     is conditional on the mark, so a refused fetch takes nothing (it
//     cannot lift the stale max_id into ranges other allocators hold); and the
//     allocator that sees it repairs the store (max_id pushed past its mark
//     plus Options.RepairMargin, in one conditional UPDATE) so that other
//     allocators stop receiving re-issued ranges too (what it cannot
//     protect is written down in the README's "Guarantees").
//
// IDs from one Allocator for one tag are unique and increasing (for calls
// that do not overlap in time); across Allocators sharing a table they are
// unique because the Store's ranges are disjoint. IDs are always > 0. The
// IDs of one NextN call are consecutive, one run, whatever other
// Allocators take meanwhile (run.go).
package segment

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/leafproxy/leafproxy/internal/edge"
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
	AutoCreate bool
	// Creates, if set, names tags that are created on first use whatever
	// AutoCreate says (a per_table rule's tags: one per table, made as
	// tables are).
	Creates     func(tag string) bool
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
	// RepairMargin: when a fetched segment starts below the tag's
	// high-water mark (the store moved back), the store's max_id is raised
	// to the mark plus this margin (at least 10 steps) before fetching
	// again. It must cover the IDs other allocators were given after this
	// one's last fetch, which this allocator cannot see. Default
	// 10*MaxStep (10,000,000).
	RepairMargin int64
	// WatchEvery is how often the max_id of every tag this allocator has
	// served is read back (one query for all tags). A value below what was
	// seen before means the store moved back: it is repaired at once, even
	// if this allocator is not fetching, which protects the IDs other
	// allocators were given up to the last read, not only this one's.
	// Default 1s; negative disables.
	WatchEvery time.Duration
}

// Defaults of Options' zero values. The configuration file's defaults
// are the same values (a test in service keeps them equal).
const (
	DefaultStep        = 1000
	DefaultWaitTimeout = 2 * time.Second
	DefaultMaxLoaders  = 4
)

func (o Options) withDefaults() Options {
	if o.WaitTimeout <= 0 {
		o.WaitTimeout = DefaultWaitTimeout
	}
	if o.MaxLoaders <= 0 {
		o.MaxLoaders = DefaultMaxLoaders
	}
	if o.DefaultStep <= 0 {
		o.DefaultStep = DefaultStep
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
	if o.RepairMargin <= 0 {
		o.RepairMargin = 10 * o.MaxStep
	}
	if o.WatchEvery == 0 {
		o.WatchEvery = time.Second
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

// maxTagLen is leaf_alloc.biz_tag's width in characters (utf8mb4): longer
// names, and bytes that are not UTF-8, cannot exist, so they are refused
// without asking the store.
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

// exhausted reports whether s has no ID left. next below start means it
// wrapped past math.MaxInt64 (requests keep adding to it once it is used
// up, and a segment may end at the top of int64): used up as well.
func (s *segment) exhausted() bool {
	n := s.next.Load()
	return n >= s.end || n < s.start
}

// holds reports whether v, a value taken from s.next, is an ID of s.
func (s *segment) holds(v int64) bool { return v < s.end && v >= s.start }

// tagState is one tag's double buffer. current is read lock-free; everything
// else is guarded by mu.
type tagState struct {
	name    string
	current atomic.Pointer[segment] // the segment IDs are drawn from

	mu        sync.Mutex
	next      *segment      // fetched, waiting to become current
	loading   bool          // a loader goroutine owns the fetch for this tag
	waiters   int           // requests blocked in wait
	changed   chan struct{} // closed and replaced when next arrives or the tag turns out unknown
	step      int64         // step of the last accepted fetch; 0 before the first
	tableStep int64
	lastFetch time.Time
	highWater int64 // end of the highest segment accepted: nothing below may be served again
	floor     int64 // raised by Raise (SETVAL): segments ending at or below it are dropped
	seen      int64 // highest max_id read back by the watch: no later fetch may start below it
	blockEnd  int64 // end of the highest range fetched for a Block (not a segment: highWater stays the segments')
	blocks    uint64

	unknownUntil time.Time // misses answered from memory until then
	unknown      *UnknownTagError
	pastEnd      *PastEndError // the tag is at its Limit: no fetch (limit.go)
	maxValue     int64         // the store's MAXVALUE for the tag as the last fetch read it; 0: none (maxvalue.go)
	runOutUntil  time.Time     // a pastEnd at MAXVALUE is answered from memory until then

	failing     int // consecutive failed fetches (0 once one succeeds)
	lastErr     error
	lastErrAt   time.Time
	fetches     uint64
	fetchErrors uint64
	conflicts   uint64 // fetches that met a store write conflict (conflict.go), not in fetchErrors
	refused     uint64
	repairs     uint64
}

func newTagState(name string) *tagState {
	t := &tagState{name: name, changed: make(chan struct{})}
	t.current.Store(newSegment(0, 0)) // empty: the first request goes to the slow path
	return t
}

// Allocator hands out IDs for any number of tags. Safe for concurrent use.
type Allocator struct {
	store Store
	opts  Options
	log   *slog.Logger

	tags      atomic.Pointer[map[string]*tagState] // copy-on-write: tags are added rarely, read on every call
	limits    atomic.Pointer[map[string]Limit]     // by tag: SetLimits (limit.go)
	closed    atomic.Bool
	storeDown edge.Tracker // the last fetch found the store unreachable (storestate.go)

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
	if opts.WatchEvery > 0 {
		a.wg.Add(1)
		go a.watch()
	}
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
		seg := t.current.Load()
		if v := seg.next.Add(1) - 1; seg.holds(v) {
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

// NextN appends n IDs for tag to dst, ascending, and returns it. They are
// consecutive, [first, first+n), as InnoDB's for a multi-row INSERT, so a
// caller that counts a statement's keys from its first (an ORM reading
// insert_id + i) gets them right: see run. On error dst is returned
// unchanged; IDs taken before the error are dropped, never handed out
// again.
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
	if n == 1 {
		for {
			seg := t.current.Load()
			if v := seg.next.Add(1) - 1; seg.holds(v) {
				if v >= seg.trigger && seg.asked.Load() == 0 {
					a.prefetch(t, seg)
				}
				return append(dst, v), nil
			}
			if err := a.advance(ctx, t, seg); err != nil {
				return dst, err
			}
		}
	}
	first, err := a.run(ctx, t, int64(n))
	if err != nil {
		return dst, err
	}
	dst = slices.Grow(dst, n)
	for id := first; id < first+int64(n); id++ {
		dst = append(dst, id)
	}
	return dst, nil
}

// state finds or registers tag.
func (a *Allocator) state(tag string) (*tagState, error) {
	if t := (*a.tags.Load())[tag]; t != nil {
		return t, nil
	}
	if tag == "" || !utf8.ValidString(tag) || utf8.RuneCountInString(tag) > maxTagLen {
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
	// tag is the caller's to keep: the engine copies tags out of packet
	// buffers before they reach an ID source (engine: state.own).
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
		drop := t.highWater == 0 && t.blockEnd == 0 && !t.loading && t.waiters == 0 && t.unknown != nil && !now.Before(t.unknownUntil)
		t.mu.Unlock()
		if drop {
			delete(m, k)
		}
	}
}

// autoCreate reports whether tag is created on first use when missing.
func (a *Allocator) autoCreate(tag string) bool {
	return a.opts.AutoCreate || a.opts.Creates != nil && a.opts.Creates(tag)
}
