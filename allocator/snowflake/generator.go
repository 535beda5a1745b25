package snowflake

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/leafproxy/leafproxy/internal/edge"
	"github.com/leafproxy/leafproxy/internal/nonblock"
)

// Defaults for Options' zero values. The configuration file's defaults
// are the same values (a test in service keeps them equal).
const (
	DefaultRandomStart  = 100
	DefaultMaxBackward  = 5 * time.Second
	DefaultPersistEvery = time.Second
)

// holdLimit is the longest wait done with the generator's lock held (a
// sequence overflow waits less than one tick). Longer waits release it so
// other callers can give up on their own contexts.
const holdLimit = 2 * time.Millisecond

// spinLimit is the longest busy wait: below it timers are too coarse on a
// loaded machine (they overshoot by up to a millisecond, which would cap
// throughput well under the sequence limit); above it a timer sleeps.
const spinLimit = time.Millisecond

// Options configures a Generator. Zero values take the documented defaults.
type Options struct {
	// Layout: zero bit counts mean 41/10/12, zero Unit 1ms, zero Epoch
	// DefaultEpoch.
	Layout Layout
	// Clock: nil means a MonotonicClock started by New.
	Clock Clock
	// RandomStart: each tick's sequence starts at a random number in
	// [0, RandomStart), clamped to the sequence space, so that id % N
	// spreads evenly when traffic is low. 0 means DefaultRandomStart (100,
	// as Leaf); 1 or negative means always start at 0.
	RandomStart int
	// MaxBackward is the longest the generator waits when the clock is
	// behind the high-water mark, at start (persisted mark) or at run time
	// (a clock that stepped back); further behind is refused with
	// ErrClockBackward. 0 means DefaultMaxBackward; negative never waits.
	MaxBackward time.Duration
	// Worker is where the worker id comes from: FixedWorker or a leaser.
	Worker WorkerSource
	// StateFile, when set, remembers the worker id and a high-water mark
	// across restarts (atomically replaced). For a fixed worker it is the
	// only record of issued time: the mark is written ahead of use (a
	// reservation PersistEvery*3 ahead) and nothing is issued past it.
	StateFile string
	Logger    *slog.Logger
	// RenewEvery is the heartbeat of a leased worker id: default TTL/3.
	RenewEvery time.Duration
	// FenceMargin: a leased generator stops issuing FenceMargin before its
	// lease could expire, counted on the local clock from when the last
	// successful renewal was sent. Default TTL/5.
	FenceMargin time.Duration
	// PersistEvery is how often a fixed worker's reservation in StateFile is
	// pushed forward. Default 1s.
	PersistEvery time.Duration
	// StoreTimeout bounds each call New makes to the worker source
	// (acquire, first renewal), so that a stalled store cannot hold a
	// start for longer. 0: only ctx bounds them.
	StoreTimeout time.Duration
}

// Generator issues snowflake IDs for one worker id. Safe for concurrent use.
// IDs from one Generator strictly increase.
type Generator struct {
	layout      Layout
	unit        int64 // ns per tick
	tickShift   uint
	workerPart  int64 // worker << SequenceBits
	maxTicks    int64
	maxSeq      int64
	randomStart int64
	maxBackward time.Duration

	clock      Clock
	sleeper    Sleeper
	mono       *MonotonicClock // fast path when the clock is ours
	monoOffset time.Duration   // mono.start - epoch

	src          WorkerSource
	lease        Lease
	ttl          time.Duration
	renewEvery   time.Duration
	margin       time.Duration
	persistEvery time.Duration
	stateFile    string
	log          *slog.Logger

	mu        sync.Mutex
	lastTick  int64
	seq       int64
	rng       *rand.Rand
	deadline  time.Duration // since epoch: nothing is issued at or after it
	renewedAt time.Duration // since epoch: when the last good renewal was sent
	lost      error         // permanent
	closed    bool

	fileMu sync.Mutex
	fileHW int64 // unix ms last written to the state file

	// Upkeep's logging (the loop goroutine's, and start's before it).
	renewFailing int          // renewals failed in a row
	fence        edge.Tracker // fenced, as logged (noteFence)

	stop chan struct{}
	done chan struct{}
}

// New acquires a worker id, checks the clock against the persisted
// high-water marks (waiting up to MaxBackward when behind, refusing when
// further), makes the first renewal or reservation, and starts the heartbeat.
func New(ctx context.Context, opts Options) (*Generator, error) {
	l := defaultLayout(opts.Layout)
	if err := l.Validate(); err != nil {
		return nil, err
	}
	if opts.Worker == nil {
		return nil, errors.New("snowflake: no worker id source (FixedWorker or a leaser)")
	}
	g, err := newGenerator(l, opts)
	if err != nil {
		return nil, err
	}
	var st state
	var haveState bool
	if g.stateFile != "" {
		if st, haveState, err = readState(g.stateFile); err != nil {
			return nil, err
		}
		g.fileHW = st.HighWaterUnixMs
	}
	lease, err := g.acquire(ctx, opts.StoreTimeout, st, haveState)
	if err != nil {
		return nil, err
	}
	g.lease = lease
	g.workerPart = lease.Worker << l.SequenceBits
	hw := lease.HighWater
	if haveState && st.Worker == lease.Worker && st.highWater().After(hw) {
		hw = st.highWater()
	}
	if err := g.start(ctx, hw, opts.StoreTimeout); err != nil {
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if !hw.IsZero() {
			g.src.Release(rctx, lease, hw)
		} else {
			g.src.Release(rctx, lease, l.Epoch)
		}
		return nil, err
	}
	if g.ttl > 0 || g.stateFile != "" {
		go g.loop()
	} else {
		close(g.done)
	}
	g.log.Info("snowflake generator started", "worker", lease.Worker, "leased", g.ttl > 0,
		"high_water", hw, "layout", l.String())
	return g, nil
}

// defaultLayout fills in l's unset parts: the default bit split when no
// width is set, the default unit and DefaultEpoch.
func defaultLayout(l Layout) Layout {
	if l.TimeBits == 0 && l.WorkerBits == 0 && l.SequenceBits == 0 {
		d := DefaultLayout()
		l.TimeBits, l.WorkerBits, l.SequenceBits = d.TimeBits, d.WorkerBits, d.SequenceBits
	}
	if l.Unit == 0 {
		l.Unit = DefaultLayout().Unit
	}
	if l.Epoch.IsZero() {
		l.Epoch = DefaultEpoch
	}
	return l
}

// newGenerator builds the generator for the valid layout l from opts, the
// options' defaults filled in; it holds no worker id yet. It fails when
// the renewals could not keep a lease alive.
func newGenerator(l Layout, opts Options) (*Generator, error) {
	g := &Generator{
		layout:      l,
		unit:        int64(l.Unit),
		tickShift:   l.WorkerBits + l.SequenceBits,
		maxTicks:    l.MaxTicks(),
		maxSeq:      l.MaxSequence(),
		maxBackward: opts.MaxBackward,
		src:         opts.Worker,
		ttl:         opts.Worker.TTL(),
		stateFile:   opts.StateFile,
		log:         opts.Logger,
		rng:         rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
		stop:        make(chan struct{}),
		done:        make(chan struct{}),
	}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	switch rs := opts.RandomStart; {
	case rs == 0:
		g.randomStart = DefaultRandomStart
	case rs < 1:
		g.randomStart = 1
	default:
		g.randomStart = int64(rs)
	}
	g.randomStart = min(g.randomStart, g.maxSeq+1)
	if g.maxBackward == 0 {
		g.maxBackward = DefaultMaxBackward
	}
	if opts.Clock == nil {
		m := NewMonotonicClock()
		g.clock, g.mono, g.monoOffset = m, m, m.start.Sub(l.Epoch)
	} else {
		g.clock = opts.Clock
		g.sleeper, _ = opts.Clock.(Sleeper)
	}
	if g.ttl > 0 {
		g.renewEvery = cmp0(opts.RenewEvery, g.ttl/3)
		g.margin = cmp0(opts.FenceMargin, g.ttl/5)
		if g.renewEvery >= g.ttl-g.margin {
			return nil, fmt.Errorf("snowflake: renewals every %v cannot keep a lease of TTL %v with fence margin %v alive", g.renewEvery, g.ttl, g.margin)
		}
	}
	g.persistEvery = cmp0(opts.PersistEvery, DefaultPersistEvery)
	return g, nil
}

// acquire checks the layout against the store's, then takes a worker id
// from the source, each call bounded by storeTimeout. st (when haveState)
// is the state file's memory, named in the error: a leased id is never
// reused without the store.
func (g *Generator) acquire(ctx context.Context, storeTimeout time.Duration, st state, haveState bool) (Lease, error) {
	// Ids whose history lies further ahead of this clock than it may wait
	// are passed over by sources that choose (one such row must not stop
	// every start).
	notAfter := g.clock.Now().Add(max(g.maxBackward, 0))
	// The layout is checked against the store's first: a worker id is
	// taken only under the layout every holder uses.
	err := g.checkLayout(ctx, storeTimeout)
	if errors.Is(err, ErrLayoutMismatch) {
		return Lease{}, err
	}
	var lease Lease
	if err == nil {
		actx, cancel := storeCtx(ctx, storeTimeout)
		lease, err = g.src.Acquire(actx, g.layout.MaxWorker(), notAfter)
		cancel()
	}
	if err != nil {
		if g.ttl > 0 && haveState {
			// Reusing the remembered id without the store is not safe: the
			// old lease may have expired and passed to another process,
			// which only the store knows. Refusing is; the caller retries.
			return Lease{}, fmt.Errorf("acquire snowflake worker id: %w (the state file %s remembers worker %d, but a leased id is never reused without the store)",
				err, g.stateFile, st.Worker)
		}
		return Lease{}, fmt.Errorf("acquire snowflake worker id: %w", err)
	}
	return lease, nil
}

// storeCtx bounds ctx by d when d is positive.
func storeCtx(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d > 0 {
		return context.WithTimeout(ctx, d)
	}
	return ctx, func() {}
}

func cmp0(v, def time.Duration) time.Duration {
	if v > 0 {
		return v
	}
	return def
}

// start positions the generator after hw and makes the first renewal or
// reservation, before which nothing is issued.
func (g *Generator) start(ctx context.Context, hw time.Time, storeTimeout time.Duration) error {
	g.lastTick, g.seq = -1, g.maxSeq
	if !hw.IsZero() {
		if need := hw.Sub(g.layout.Epoch); need > 0 {
			// seq = maxSeq makes the tick before the first allowed one
			// count as used up.
			g.lastTick = ceilDiv(int64(need), g.unit) - 1
		}
	}
	now := g.since()
	if now < 0 {
		return fmt.Errorf("snowflake: clock %s is before the epoch %s", g.clock.Now().UTC().Format(time.RFC3339Nano),
			g.layout.Epoch.UTC().Format(time.RFC3339Nano))
	}
	if first := time.Duration((g.lastTick + 1) * g.unit); now < first {
		behind := first - now
		// A bound id's mark is its own identity's reservation (a renewal,
		// or the state file through a store outage, reaches one lease TTL
		// ahead): waited out up to that, not refused as a clock behind.
		allowed := g.maxBackward
		if g.lease.Bound && allowed >= 0 {
			allowed = max(allowed, g.ttl)
		}
		if allowed < 0 || behind > allowed {
			return fmt.Errorf("snowflake worker %d: clock %s is %v behind the high-water mark %s left by earlier IDs (max_backward %v): %w",
				g.lease.Worker, g.timeAt(now), behind, g.timeAt(first), max(allowed, 0), ErrClockBackward)
		}
		g.log.Warn("snowflake clock behind the persisted high-water mark; waiting",
			"worker", g.lease.Worker, "now", g.timeAt(now), "high_water", g.timeAt(first), "wait", behind)
		if err := g.wait(ctx, first); err != nil {
			return fmt.Errorf("snowflake worker %d: wait for the clock to pass the high-water mark %s: %w", g.lease.Worker, g.timeAt(first), err)
		}
	}
	if g.ttl == 0 && g.stateFile == "" {
		g.deadline = math.MaxInt64
		return nil
	}
	rctx, cancel := storeCtx(ctx, storeTimeout)
	defer cancel()
	if err := g.refresh(rctx); err != nil {
		return fmt.Errorf("snowflake worker %d: first renewal: %w", g.lease.Worker, err)
	}
	return nil
}

// Worker is the worker id in use.
func (g *Generator) Worker() int64 { return g.lease.Worker }

// Health reports, without issuing anything, whether the generator would
// refuse right now: fenced (a leased worker past its renewal deadline, until
// a renewal succeeds) or lost (the lease went to another process; permanent).
func (g *Generator) Health() (fenced, lost bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ttl > 0 && g.since() >= g.deadline, g.lost != nil
}

// Layout is the layout in use (with defaults filled in).
func (g *Generator) Layout() Layout { return g.layout }

// Next returns a new ID.
func (g *Generator) Next(ctx context.Context) (int64, error) {
	if !g.lock(ctx) {
		return 0, nonblock.ErrWouldBlock
	}
	id, err := g.nextLocked(ctx)
	g.mu.Unlock()
	return id, err
}

// lock takes g.mu. A caller that must not wait (an event loop's) spins
// briefly instead: the lock is held for tens of nanoseconds per ID, but
// also across a wait for the next tick (up to holdLimit) and a state-file
// write, which such a caller must not sit out. false: not taken.
func (g *Generator) lock(ctx context.Context) bool {
	if !nonblock.Requested(ctx) {
		g.mu.Lock()
		return true
	}
	for range 200 {
		if g.mu.TryLock() {
			return true
		}
	}
	return false
}

// NextN appends n new IDs to dst. Up to a tick's sequence space (4,096
// with the default layout) they are consecutive, one run in one tick, as
// InnoDB's keys of a multi-row INSERT are: a tick with fewer left than n
// is left behind (the call waits for the next tick, less than one, as
// when a tick's sequence runs out). More than that are such runs, one
// per tick. On error it returns dst as it was given (the IDs drawn so
// far are skipped, never reissued).
func (g *Generator) NextN(ctx context.Context, n int, dst []int64) ([]int64, error) {
	orig := len(dst)
	if !g.lock(ctx) {
		return dst, nonblock.ErrWouldBlock
	}
	defer g.mu.Unlock()
	run := g.maxSeq + 1
	for left := int64(n); left > 0; {
		k := min(left, run)
		first, err := g.runLocked(ctx, k)
		if err != nil {
			return dst[:orig], err
		}
		for id := first; id < first+k; id++ {
			dst = append(dst, id)
		}
		left -= k
	}
	return dst, nil
}

func (g *Generator) since() time.Duration {
	if g.mono != nil {
		return g.monoOffset + time.Since(g.mono.start)
	}
	return g.clock.Now().Sub(g.layout.Epoch)
}

func (g *Generator) timeAt(d time.Duration) string {
	return g.layout.Epoch.Add(d).UTC().Format(time.RFC3339Nano)
}

// nextLocked runs with g.mu held; long waits release it in between.
func (g *Generator) nextLocked(ctx context.Context) (int64, error) { return g.runLocked(ctx, 1) }

// runLocked issues n consecutive IDs (1 <= n <= maxSeq+1) in one tick and
// returns the first. It runs with g.mu held; long waits release it in
// between.
func (g *Generator) runLocked(ctx context.Context, n int64) (int64, error) {
	for {
		if g.closed {
			return 0, ErrClosed
		}
		if g.lost != nil {
			return 0, g.lost
		}
		now := g.since()
		if now < 0 {
			return 0, fmt.Errorf("snowflake: clock %s is before the epoch: %w", g.timeAt(now), ErrClockBackward)
		}
		if now >= g.deadline {
			if g.ttl == 0 && nonblock.Requested(ctx) {
				return 0, nonblock.ErrWouldBlock // extending the reservation writes the state file
			}
			if err := g.fenceLocked(ctx, now); err != nil {
				return 0, err
			}
			continue
		}
		tick := int64(now) / g.unit
		switch {
		case tick > g.lastTick:
			if tick > g.maxTicks {
				return 0, g.overflow(tick)
			}
			g.lastTick = tick
			first := int64(0)
			if g.randomStart > 1 {
				first = min(g.rng.Int64N(g.randomStart), g.maxSeq+1-n)
			}
			g.seq = first + n - 1
			return tick<<g.tickShift | g.workerPart | first, nil
		case tick == g.lastTick:
			if g.maxSeq-g.seq >= n {
				first := g.seq + 1
				g.seq += n
				return tick<<g.tickShift | g.workerPart | first, nil
			}
			if tick >= g.maxTicks {
				return 0, g.overflow(tick + 1)
			}
			// Sequence used up (fewer than n left): wait for the next
			// tick (less than one).
			if nonblock.Requested(ctx) {
				return 0, nonblock.ErrWouldBlock
			}
			if err := g.waitLocked(ctx, time.Duration((tick+1)*g.unit)); err != nil {
				return 0, fmt.Errorf("snowflake: wait for the next tick after the sequence ran out: %w", err)
			}
		default:
			last := time.Duration(g.lastTick * g.unit)
			behind := last - now
			if g.maxBackward < 0 || behind > g.maxBackward {
				return 0, fmt.Errorf("snowflake worker %d: clock %s moved back %v behind the last issued tick %s (max_backward %v): %w",
					g.lease.Worker, g.timeAt(now), behind, g.timeAt(last), max(g.maxBackward, 0), ErrClockBackward)
			}
			if nonblock.Requested(ctx) {
				return 0, nonblock.ErrWouldBlock
			}
			if err := g.waitLocked(ctx, last); err != nil {
				return 0, fmt.Errorf("snowflake: wait %v for a clock that moved back: %w", behind, err)
			}
		}
	}
}

func (g *Generator) overflow(tick int64) error {
	return fmt.Errorf("snowflake: tick %d does not fit %d time bits: the layout ran out at %s (epoch %s, unit %v): %w",
		tick, g.layout.TimeBits, g.layout.End().UTC().Format(time.RFC3339), g.layout.Epoch.UTC().Format(time.RFC3339),
		g.layout.Unit, ErrTimeOverflow)
}

// fenceLocked runs when now has reached the deadline: a leased generator
// refuses until a renewal succeeds; a fixed one pushes its reservation in the
// state file forward itself (the background loop normally does it first).
func (g *Generator) fenceLocked(ctx context.Context, now time.Duration) error {
	if g.ttl > 0 {
		return fmt.Errorf("snowflake worker %d: last renewal sent at %s, lease TTL %v, fence margin %v, now %s: %w",
			g.lease.Worker, g.timeAt(g.renewedAt), g.ttl, g.margin, g.timeAt(now), ErrFenced)
	}
	written, err := g.persist(g.ceilMs(now+3*g.persistEvery), false)
	if err != nil {
		return fmt.Errorf("snowflake worker %d: extend the reservation in the state file: %w", g.lease.Worker, err)
	}
	g.deadline = max(g.deadline, time.UnixMilli(written).Sub(g.layout.Epoch))
	return nil
}

// ceilMs is the unix millisecond at or after epoch+d: high-water marks round
// up so they never fall inside an issued tick.
func (g *Generator) ceilMs(d time.Duration) int64 { return ceilMs(g.layout.Epoch.Add(d)) }

func ceilMs(t time.Time) int64 {
	ms := t.UnixMilli()
	if t.After(time.UnixMilli(ms)) {
		ms++
	}
	return ms
}
