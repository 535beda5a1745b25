// Package allocator hands out IDs per tag: each tag is served by the
// Leaf-segment allocator (allocator/segment, over leaf_alloc) or by the
// snowflake generator (allocator/snowflake), as the configuration says. It
// knows nothing of SQL text or the MySQL protocol.
package allocator

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/allocator/schema"
	"github.com/leafproxy/leafproxy/allocator/segment"
	"github.com/leafproxy/leafproxy/allocator/snowflake"
)

// Sequences routes each tag to its generator. Safe for concurrent use.
//
// Snowflake tags are served by one generator per distinct layout
// (snowflakes.go): the configured tags' generators are started at Open,
// tags created in SQL on any proxy (a "tag:<tag>" row of
// leaf_snowflake_layout) are learned from the store at Open and on first
// use, their generator started then.
//
// Start-up does not depend on the store: when it is down or stalled, Open
// returns anyway (segment tags then fail per request until a segment
// arrives) and snowflake tags are fenced with an UnavailableError until a
// worker id is obtained, which a background loop retries. Only definitive
// answers from a reachable store (a fixed worker id held by another live
// process, every id taken, a clock behind the id's history, a snowflake
// layout other than the one recorded in leaf_snowflake_layout, globally
// or for a tag) fail Open. A layout mismatch found by the background loop
// fences the configured snowflake tags until a restart (the process keeps
// serving relay and segment tags).
type Sequences struct {
	segments *segment.Allocator
	db       *sql.DB
	pool     *StorePool // db's connector: the store's nodes (nil with WithStores)
	log      *slog.Logger
	cfg      Config

	// snowflakeTags maps each snowflake tag to its generator
	// (copy-on-write: tags are added rarely, read on every call).
	snowflakeTags atomic.Pointer[map[string]*snowTag]
	global        snowflake.Layout // Config.Snowflake.Layout
	leaser        SnowflakeStore
	store         SegmentStore

	mu              sync.Mutex
	snowflakeGens   map[string]*snowGen  // one per layout in use, by snowflake.LayoutKey
	storeDefault    *snowflake.Layout    // the store's 'default' row, once read
	snowflakeMisses map[string]time.Time // tags found without a leaf_snowflake_layout row, until
	closed          bool
	stop            chan struct{}
	done            chan struct{} // closed when the background loop ends (or never ran)
	syncDone        chan struct{} // closed when syncLoop ends
	// closeFloors releases the backend pool used to read rule tables'
	// largest keys when auto_create makes a tag.
	closeFloors func()
	// floors: the rule tables' largest keys, and the rules in force
	// (SetRules), which per_table tags are (RestartPerTable, Creates).
	floors *keyFloors
}

// Option adjusts Open.
type Option func(*options)

type options struct {
	wrapStore func(segment.Store) segment.Store
	init      bool
	retryMin  time.Duration
	tagSync   time.Duration
	// segStore and snowStore replace the MySQL store (WithStores),
	// keyServers the SQL key readers (WithKeyServers).
	segStore      SegmentStore
	snowStore     SnowflakeStore
	keyServers    []KeyServer
	keyServersSet bool
	tagStore      TagStore // InitStore's and CheckTags' (WithTagStore)
}

// WithTagSync sets how often the snowflake tags learned from the store
// are compared with it again (default 30 s; tests shorten it).
func WithTagSync(d time.Duration) Option { return func(o *options) { o.tagSync = d } }

// WithStoreWrapper wraps the segment store, e.g. to inject latency in
// benchmarks or count round trips.
func WithStoreWrapper(f func(segment.Store) segment.Store) Option {
	return func(o *options) { o.wrapStore = f }
}

// WithInitStore makes Open prepare the store first (InitStore: schema and
// configured tags). When the store cannot be reached this is retried in
// the background until it succeeds; an answer from the store (e.g. no
// CREATE privilege) is logged and not retried.
func WithInitStore() Option { return func(o *options) { o.init = true } }

// Background retry pacing: doubling from retryMin to retryMax.
const (
	retryMin = 250 * time.Millisecond
	retryMax = 5 * time.Second
)

// Open connects to the allocation store and builds the generators cfg
// needs. A snowflake worker id is acquired (leased, or the configured id
// registered) only when some tag uses snowflake. Each store call at start
// is bounded by cfg.StoreTimeout.
func Open(ctx context.Context, cfg Config, log *slog.Logger, opts ...Option) (*Sequences, error) {
	cfg = cfg.WithDefaults()
	o := options{retryMin: retryMin, tagSync: DefaultTagSync}
	for _, f := range opts {
		f(&o)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var db *sql.DB
	var pool *StorePool
	if o.segStore == nil || o.snowStore == nil {
		var err error
		if db, pool, err = openStoreDB(cfg, log); err != nil {
			return nil, err
		}
	}
	closeDB := func() {
		if db != nil {
			db.Close()
			pool.Close()
		}
	}
	if err := o.defaultStores(cfg, db, log); err != nil {
		closeDB()
		return nil, err
	}

	s := &Sequences{db: db, pool: pool, log: log, cfg: cfg, snowflakeGens: map[string]*snowGen{}, snowflakeMisses: map[string]time.Time{},
		leaser: o.snowStore,
		stop:   make(chan struct{}), done: make(chan struct{})}
	floors, closeFloors, err := newKeyFloors(&cfg, db)
	if err != nil {
		closeDB()
		return nil, err
	}
	if o.keyServersSet {
		closeFloors()
		floors.servers, closeFloors = o.keyServers, func() {}
	}
	s.closeFloors = closeFloors
	s.floors = floors
	ms := o.segStore
	ms.SetCreateFloor(func(ctx context.Context, tag string) (int64, error) {
		floor, _, err := floors.floor(ctx, tag)
		return floor, err
	})
	s.store = ms
	var store segment.Store = ms
	if o.wrapStore != nil {
		store = o.wrapStore(store)
	}
	s.segments = segment.New(store, segment.Options{
		WaitTimeout:  cfg.WaitTimeout,
		MaxLoaders:   cfg.MaxLoaders,
		AutoCreate:   cfg.AutoCreate,
		Creates:      floors.perTable,
		DefaultStep:  cfg.DefaultStep,
		RepairMargin: cfg.RepairMargin,
		Logger:       log.With("component", "segment"),
	})
	if err := s.configureSnowflake(); err != nil {
		s.segments.Close()
		closeDB()
		closeFloors()
		return nil, err
	}
	if err := s.startUp(ctx, o, cfg.StoreTimeout); err != nil {
		return nil, err
	}
	s.syncDone = make(chan struct{})
	go s.syncLoop(o.tagSync)
	return s, nil
}

// openStoreDB opens the pool of the allocation store's nodes and the
// database handle over it, sized for cfg.MaxLoaders.
func openStoreDB(cfg Config, log *slog.Logger) (*sql.DB, *StorePool, error) {
	pool, err := NewStorePool(cfg.storeDSNs(), log.With("component", "store"))
	if err != nil {
		return nil, nil, err
	}
	db := pool.OpenDB()
	if addrs := pool.Addrs(); len(addrs) > 1 {
		log.Info("allocation store: a list of nodes, the first in use; failover to the next that answers, failback when a preferred one is ready again",
			"in_use", addrs[0], "nodes", strings.Join(addrs, ", "))
	}
	db.SetMaxOpenConns(cfg.MaxLoaders + 4)
	db.SetMaxIdleConns(cfg.MaxLoaders + 4)
	// Closed when idle for a few seconds: the store is often the
	// backend itself, whose sessions tests and operators count
	// (docs/PROTOCOL.md); fetches are prefetched, off the statement
	// path, so a fresh login there costs no client a wait.
	db.SetConnMaxIdleTime(StoreIdle)
	return db, pool, nil
}

// defaultStores fills in the segment and snowflake stores the options did
// not set: MySQL ones over db, the snowflake leaser bound to
// cfg.Snowflake.Identity when one is set.
func (o *options) defaultStores(cfg Config, db *sql.DB, log *slog.Logger) error {
	if o.segStore == nil {
		o.segStore = mysqlSegments{MySQLStore: segment.NewMySQLStore(db), db: db}
	}
	if o.snowStore == nil {
		leaser := snowflake.NewMySQLLeaser(db, cfg.Owner, cfg.Snowflake.LeaseTTL)
		if cfg.Snowflake.Identity != "" {
			bound, err := leaser.BindTo(cfg.Snowflake.Identity)
			if err != nil {
				return err
			}
			leaser = bound
			log.Info("snowflake worker ids bound to this proxy's identity: no other proxy takes them while recorded; issuing goes on through a store outage",
				"identity", cfg.Snowflake.Identity)
		}
		o.snowStore = mysqlSnowflakes{leaser}
	}
	return nil
}

// startUp prepares the store (when asked: WithInitStore), reads its tags
// and starts the snowflake generators (storeTimeout: cfg.StoreTimeout). A store that cannot be reached, or
// a snowflake start that may succeed later, does not fail it: that is
// retried in the background (s.done closes when nothing is). A definitive
// snowflake failure closes s and is returned.
func (s *Sequences) startUp(ctx context.Context, o options, storeTimeout time.Duration) error {
	initPending := false
	var initErr error
	if o.init {
		// Bounded by the connect timeout alone: a stalled store must not
		// hold the start (relay needs no store); the background retry
		// allows more.
		if err := s.initStore(ctx, storeTimeout); err != nil {
			initErr = err
			initPending = unreachable(err)
			if initPending {
				s.log.Warn("allocation store unreachable; starting anyway (retrying in the background): NEXTVAL and key filling fail until it answers",
					"err", err)
			} else {
				s.log.Warn("could not prepare the allocation store (leafproxy init); NEXTVAL and key filling may fail", "err", err)
			}
		}
	}
	if !initPending {
		s.loadStoreTags(ctx)
	}
	snowPending := false
	if s.configuredSnowflake() {
		var err error
		if initPending {
			err = fmt.Errorf("%w: %w", snowflake.ErrStoreUnavailable, initErr)
		} else {
			err = s.startSnowflake(ctx)
		}
		if err != nil {
			if !transient(err) {
				close(s.done)
				s.Close()
				return err
			}
			snowPending = true
			s.setPendingErr(err)
			s.log.Warn("snowflake tags fenced until a worker id is obtained (retrying in the background)", "err", err)
		}
	}
	if initPending || snowPending {
		go s.background(o.retryMin, initPending, snowPending)
	} else {
		close(s.done)
	}
	return nil
}

// unreachable says err is not an answer from the store (a MySQL error),
// i.e. the store could not be reached or did not answer in time.
func unreachable(err error) bool {
	var me *mysql.MySQLError
	var ut *UndeclaredTagError
	return !errors.As(err, &me) && !errors.As(err, &ut)
}

// transient says a failed snowflake start may succeed later by itself: the
// store could not be asked. A store's definitive answer (id held, no free
// id, clock behind the id's history, a layout other than the store's, bad
// layout or state file) is not.
func transient(err error) bool {
	return errors.Is(err, snowflake.ErrStoreUnavailable) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, snowflake.ErrIdentityBusy)
}

// initStore runs InitStore bounded by d.
// Store write conflicts (racing proxies, Galera) are tried again at once
// (retryConflicts), each try bounded by d.
func (s *Sequences) initStore(ctx context.Context, d time.Duration) error {
	return retryConflicts(ctx, s.log, "preparing the allocation store", func() error {
		ictx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		return InitStore(ictx, &s.cfg, nil)
	})
}

// untilClose is a context that ends when Close is called (s.stop closes)
// or cancel is, for the background goroutines' store calls; cancel must be
// called (it also ends the goroutine that watches s.stop).
func (s *Sequences) untilClose() (ctx context.Context, cancel context.CancelFunc) {
	ctx, cancel = context.WithCancel(context.Background())
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// background retries what could not be done at start: preparing the store,
// then obtaining worker ids for the configured snowflake tags, until both
// succeeded or Close.
func (s *Sequences) background(wait time.Duration, initPending, snowPending bool) {
	defer close(s.done)
	ctx, cancel := s.untilClose()
	defer cancel()
	first := wait
	for initPending || snowPending {
		select {
		case <-s.stop:
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, retryMax)
		if initPending {
			err := s.initStore(ctx, s.cfg.StoreTimeout+10*time.Second)
			if err != nil && unreachable(err) {
				s.log.Debug("allocation store still unreachable", "err", err)
				if snowPending {
					s.setPendingErr(fmt.Errorf("%w: %w", snowflake.ErrStoreUnavailable, err))
				}
				continue
			}
			initPending = false
			if err != nil {
				s.log.Warn("could not prepare the allocation store (leafproxy init)", "err", err)
			} else {
				s.log.Info("allocation store reachable and prepared")
			}
			s.loadStoreTags(ctx)
		}
		if snowPending {
			err := s.startSnowflake(ctx)
			switch {
			case err == nil:
				snowPending = false
				s.log.Info("snowflake tags available")
			case s.isClosed():
				return
			case transient(err):
				s.log.Debug("snowflake worker id: store still unavailable", "err", err)
				s.setPendingErr(err)
				continue
			case errors.Is(err, snowflake.ErrLayoutMismatch):
				// What stops a start with the store up: this process
				// cannot exit 2 from here, and relay and segment tags
				// may be serving, so snowflake tags stay fenced for
				// good (a restart with a matching config is needed).
				err = &fatalError{err}
				s.log.Error("snowflake layout differs from the store's; snowflake tags fenced until leafproxy is restarted with a matching layout", "err", err.Error())
				s.setPendingErr(err)
				snowPending = false
				continue
			default:
				s.log.Error("snowflake worker id refused; snowflake tags stay fenced, retrying", "err", err)
				s.setPendingErr(err)
				continue
			}
		}
		wait = first
	}
}

func (s *Sequences) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Generator names the generator that serves tag: "segment" or "snowflake".
func (s *Sequences) Generator(tag string) string {
	if s.snowTag(tag) != nil {
		return "snowflake"
	}
	return "segment"
}

// Next returns one ID for tag.
func (s *Sequences) Next(ctx context.Context, tag string) (int64, error) {
	if t := s.snowTag(tag); t != nil {
		g, err := s.generator(ctx, tag, t)
		if err != nil {
			return 0, err
		}
		id, err := g.Next(ctx)
		if err != nil {
			return 0, &UnavailableError{Tag: tag, Err: err}
		}
		return id, nil
	}
	v, err := s.segments.Next(ctx, tag)
	if err != nil {
		if t, lerr := s.learn(ctx, tag, err); t != nil {
			return s.Next(ctx, tag)
		} else if lerr != nil {
			return 0, lerr
		}
		return 0, s.nameError(tag, err)
	}
	return v, nil
}

// NextN appends n ascending IDs for tag to dst: one run of consecutive
// IDs for a segment tag (segment.Allocator.NextN), for a snowflake tag up
// to a tick's sequence space (snowflake.Generator.NextN).
func (s *Sequences) NextN(ctx context.Context, tag string, n int, dst []int64) ([]int64, error) {
	if t := s.snowTag(tag); t != nil {
		g, err := s.generator(ctx, tag, t)
		if err != nil {
			return dst, err
		}
		out, err := g.NextN(ctx, n, dst)
		if err != nil {
			return out, &UnavailableError{Tag: tag, Err: err}
		}
		return out, nil
	}
	out, err := s.segments.NextN(ctx, tag, n, dst)
	if err != nil {
		if t, lerr := s.learn(ctx, tag, err); t != nil {
			return s.NextN(ctx, tag, n, dst)
		} else if lerr != nil {
			return out, lerr
		}
		return out, s.nameError(tag, err)
	}
	return out, nil
}

// Block reserves n IDs of tag for a caller that numbers rows itself: the
// k-th (from 0) is first+k when run is 0 (a segment tag: consecutive IDs),
// else first + (k/run)*stride + k%run (a snowflake tag: whole ticks of
// this worker, see snowflake.Block).
func (s *Sequences) Block(ctx context.Context, tag string, n int64) (first, run, stride int64, err error) {
	if t := s.snowTag(tag); t != nil {
		g, err := s.generator(ctx, tag, t)
		if err != nil {
			return 0, 0, 0, err
		}
		b, err := g.Block(ctx, n)
		if err != nil {
			return 0, 0, 0, &UnavailableError{Tag: tag, Err: err}
		}
		return b.First, b.Run, b.Stride, nil
	}
	first, err = s.segments.Block(ctx, tag, n)
	if err != nil {
		if t, lerr := s.learn(ctx, tag, err); t != nil {
			return s.Block(ctx, tag, n)
		} else if lerr != nil {
			return 0, 0, 0, lerr
		}
		return 0, 0, 0, s.nameError(tag, err)
	}
	return first, 0, 0, nil
}

// Known reports whether tag is a sequence of this proxy: configured
// (sequences.tags, either generator), in leaf_alloc (see
// segment.Allocator.Known) or a snowflake tag of the store (a
// leaf_snowflake_layout row, learned here).
func (s *Sequences) Known(ctx context.Context, tag string) (bool, error) {
	if s.snowTag(tag) != nil {
		return true, nil
	}
	if _, ok := s.cfg.Tags[tag]; ok {
		return true, nil
	}
	known, err := s.segments.Known(ctx, tag)
	if known || err != nil {
		return known, err
	}
	t, err := s.learn(ctx, tag, &segment.UnknownTagError{Tag: tag})
	return t != nil, err
}

// Advance moves a segment tag past v, a key written explicitly through
// the proxy (see segment.Allocator.Advance); snowflake tags, whose IDs
// come from the clock, are left alone.
func (s *Sequences) Advance(ctx context.Context, tag string, v int64) error {
	if s.snowTag(tag) != nil {
		return nil
	}
	return s.segments.Advance(ctx, tag, v)
}

// nameError turns the segment allocator's "unknown" for a name that
// cannot be a tag at all (empty, not UTF-8, too long: refused before any
// store query) into the error saying what is wrong with it, and adds to
// the "unknown" of a valid name the tag one typo away, if any (see
// suggest). Checked only on the error path, so valid tags pay nothing.
func (s *Sequences) nameError(tag string, err error) error {
	var unknown *segment.UnknownTagError
	if errors.As(err, &unknown) {
		if nerr := schema.CheckTag(tag); nerr != nil {
			return nerr
		}
		if near := s.suggest(tag); near != "" {
			return &UnknownTagError{UnknownTagError: unknown, Near: near}
		}
	}
	return err
}

// Segments exposes the segment allocator (stats, tests).
func (s *Sequences) Segments() *segment.Allocator { return s.segments }

// StorePool is the store's connector over its nodes, which says the node
// in use; nil when the stores were given (WithStores).
func (s *Sequences) StorePool() *StorePool { return s.pool }

// Close stops the loaders and the background retries, releases the
// snowflake lease and closes the store.
func (s *Sequences) Close() error {
	s.mu.Lock()
	already := s.closed
	s.closed = true
	s.mu.Unlock()
	if already {
		return nil
	}
	close(s.stop)
	<-s.done
	if s.syncDone != nil {
		<-s.syncDone
	}
	if s.segments != nil {
		s.segments.Close()
	}
	err := s.closeSnowflake()
	if s.db != nil {
		s.db.Close()
		s.pool.Close()
	}
	if s.closeFloors != nil {
		s.closeFloors()
	}
	return err
}
