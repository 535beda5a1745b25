// Package allocator hands out IDs per tag: each tag is served by the
// Leaf-segment allocator (allocator/segment, over leaf_alloc) or by the
// snowflake generator (allocator/snowflake), as the configuration says. It
// knows nothing of SQL text or the MySQL protocol.
package allocator

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/leafproxy/leafproxy/allocator/segment"
	"github.com/leafproxy/leafproxy/allocator/snowflake"
	"github.com/leafproxy/leafproxy/config"
)

// Sequences routes each tag to its generator. Safe for concurrent use.
type Sequences struct {
	segments  *segment.Allocator
	snowflake *snowflake.Generator // nil when no tag uses it
	snowTags  map[string]bool
	db        *sql.DB
}

// Option adjusts Open.
type Option func(*options)

type options struct {
	wrapStore func(segment.Store) segment.Store
}

// WithStoreWrapper wraps the segment store, e.g. to inject latency in
// benchmarks or count round trips.
func WithStoreWrapper(f func(segment.Store) segment.Store) Option {
	return func(o *options) { o.wrapStore = f }
}

// Open connects to the allocation store and builds the generators the
// configuration needs. A snowflake worker id is acquired (leased or fixed)
// only when some tag uses snowflake.
func Open(ctx context.Context, cfg *config.Config, log *slog.Logger, opts ...Option) (*Sequences, error) {
	var o options
	for _, f := range opts {
		f(&o)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	db, err := sql.Open("mysql", cfg.StoreDSN())
	if err != nil {
		return nil, fmt.Errorf("allocation store: %w", err)
	}
	db.SetMaxOpenConns(cfg.Sequences.MaxLoaders + 4)
	db.SetMaxIdleConns(cfg.Sequences.MaxLoaders + 4)
	db.SetConnMaxIdleTime(5 * time.Minute)

	s := &Sequences{db: db, snowTags: map[string]bool{}}
	var store segment.Store = segment.NewMySQLStore(db)
	if o.wrapStore != nil {
		store = o.wrapStore(store)
	}
	s.segments = segment.New(store, segment.Options{
		WaitTimeout: cfg.Sequences.WaitTimeout.D(),
		MaxLoaders:  cfg.Sequences.MaxLoaders,
		AutoCreate:  cfg.Sequences.AutoCreate,
		DefaultStep: cfg.Sequences.DefaultStep,
		Logger:      log.With("component", "segment"),
	})
	for name, t := range cfg.Sequences.Tags {
		if t.Generator == "snowflake" {
			s.snowTags[name] = true
		}
	}
	if len(s.snowTags) > 0 {
		g, err := openSnowflake(ctx, cfg, db, log)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.snowflake = g
	}
	return s, nil
}

func openSnowflake(ctx context.Context, cfg *config.Config, db *sql.DB, log *slog.Logger) (*snowflake.Generator, error) {
	sc := cfg.Snowflake
	epoch, err := sc.EpochTime()
	if err != nil {
		return nil, err
	}
	opts := snowflake.Options{
		Layout: snowflake.Layout{
			TimeBits:     uint(sc.TimeBits),
			WorkerBits:   uint(sc.WorkerBits),
			SequenceBits: uint(sc.SequenceBits),
			Unit:         sc.TimeUnit.D(),
			Epoch:        epoch,
		},
		RandomStart: *sc.RandomStart,
		MaxBackward: sc.MaxBackward.D(),
		StateFile:   sc.StateFile,
		Logger:      log.With("component", "snowflake"),
	}
	if *sc.RandomStart == 0 {
		opts.RandomStart = 1 // config 0 means "no random start"; the generator's 0 means its default
	}
	if sc.WorkerID == "auto" {
		host, _ := os.Hostname()
		owner := fmt.Sprintf("%s:%d:%s", host, os.Getpid(), cfg.Listen)
		opts.Worker = snowflake.NewMySQLLeaser(db, owner, sc.LeaseTTL.D())
	} else {
		id, err := strconv.ParseInt(sc.WorkerID, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("snowflake.worker_id: %w", err)
		}
		opts.Worker = snowflake.FixedWorker(id)
	}
	g, err := snowflake.New(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("start snowflake generator: %w", err)
	}
	return g, nil
}

// Generator names the generator that serves tag: "segment" or "snowflake".
func (s *Sequences) Generator(tag string) string {
	if s.snowTags[tag] {
		return "snowflake"
	}
	return "segment"
}

// Next returns one ID for tag.
func (s *Sequences) Next(ctx context.Context, tag string) (int64, error) {
	if s.snowTags[tag] {
		return s.snowflake.Next(ctx)
	}
	return s.segments.Next(ctx, tag)
}

// NextN appends n ascending IDs for tag to dst.
func (s *Sequences) NextN(ctx context.Context, tag string, n int, dst []int64) ([]int64, error) {
	if s.snowTags[tag] {
		return s.snowflake.NextN(ctx, n, dst)
	}
	return s.segments.NextN(ctx, tag, n, dst)
}

// Segments exposes the segment allocator (stats, tests).
func (s *Sequences) Segments() *segment.Allocator { return s.segments }

// Snowflake exposes the snowflake generator (stats, tests); nil when no tag
// uses snowflake.
func (s *Sequences) Snowflake() *snowflake.Generator { return s.snowflake }

// Close stops the loaders, releases the snowflake lease and closes the store.
func (s *Sequences) Close() error {
	var err error
	if s.segments != nil {
		s.segments.Close()
	}
	if s.snowflake != nil {
		err = s.snowflake.Close()
	}
	s.db.Close()
	return err
}
