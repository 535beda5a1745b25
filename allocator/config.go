package allocator

import (
	"database/sql"
	"time"

	"github.com/leafproxy/leafproxy/allocator/segment"
	"github.com/leafproxy/leafproxy/allocator/snowflake"
)

// Config is what the allocator needs to know, in its own terms: where the
// store and the backend are, the tags and their generators, the table
// rules whose keys the tags fill, and how snowflake generators run. The
// service builds it from the YAML (service.AllocatorConfig); the
// allocator reads no configuration file. Zero durations and counts take
// the defaults below (WithDefaults).
type Config struct {
	// StoreDSN is the go-sql-driver DSN of the database holding
	// leaf_alloc and the snowflake tables (the first of StoreDSNs).
	StoreDSN string
	// StoreDSNs are the store's nodes in order of preference (a
	// replicated store; StorePool fails over between them and back);
	// empty: StoreDSN alone.
	StoreDSNs []string
	// CreateStoreDatabase makes InitStore create StoreDSN's database
	// first (the default store: database leafproxy on the backend).
	CreateStoreDatabase bool
	// BackendAddr and BackendDSN reach the backend (as the proxy's backend
	// account, no default database): the rule tables' largest keys are
	// read there, and the runway monitor reads their column types.
	BackendAddr string
	BackendDSN  string
	// StoreTimeout bounds each store call made at start.
	StoreTimeout time.Duration
	// Owner names this process in leaf_worker and leaf_snowflake_layout
	// (host, pid, listen address).
	Owner string

	// AutoCreate creates a tag unknown to the store on first use.
	AutoCreate bool
	// DefaultStep is the step of tags created without one.
	DefaultStep int64
	// WaitTimeout bounds how long a request waits for a segment.
	WaitTimeout time.Duration
	// MaxLoaders bounds the segment loads running at once.
	MaxLoaders int
	// RepairMargin is how far past the highest value it knew a proxy
	// pushes leaf_alloc.max_id after finding it moved back.
	RepairMargin int64

	// Tags are the declared tags by name.
	Tags map[string]Tag
	// Rules are the table rules, in the configuration's order.
	Rules []Rule
	// Snowflake is how snowflake generators run.
	Snowflake Snowflake
}

// Generators a tag can have.
const (
	GeneratorSegment   = "segment"
	GeneratorSnowflake = "snowflake"
)

// Tag is one declared tag.
type Tag struct {
	// Generator is GeneratorSegment or GeneratorSnowflake.
	Generator string
	// Step is the step a segment tag is created with.
	Step int64
	// Layout is a snowflake tag's bit layout: its own, or the global one.
	Layout snowflake.Layout
	// OwnLayout says Layout is the tag's own (set under its name in the
	// configuration) rather than the global one; messages about a layout
	// that differs from the store's say where it came from.
	OwnLayout bool
}

// Rule is one table rule: keys of Column in tables matching Table
// (table or db.table, either part a shell-style pattern) are filled from
// Tag.
type Rule struct {
	Table  string
	Column string
	Tag    string
	// PerTable (a pattern): each table it fills has a tag of its own,
	// tablematch.PerTableTag(Tag, db, table), created on first use above
	// that table's largest key (whatever AutoCreate says).
	PerTable bool
}

// Snowflake is how the snowflake generators run.
type Snowflake struct {
	// Layout is the global layout: recorded in the store, used by
	// snowflake tags without their own.
	Layout snowflake.Layout
	// LeaseWorkerID leases a worker id from the store per layout; else
	// WorkerID is registered there as this process's.
	LeaseWorkerID bool
	WorkerID      int64
	// RandomStart: each tick's sequence starts at a random offset below
	// it, so id % shards spreads evenly; 0 starts every tick at 0.
	RandomStart int
	// MaxBackward is the longest start-up waits for a clock behind the
	// last timestamp issued.
	MaxBackward time.Duration
	// LeaseTTL is how long a worker-id lease lasts without renewal.
	LeaseTTL time.Duration
	// StateFile remembers worker id and last timestamp ("" none); each
	// layout other than the global one keeps its own beside it.
	StateFile string
	// Identity, when set, binds the leased worker ids to this process
	// (snowflake.MySQLLeaser.BindTo): no other identity takes them while
	// they are recorded, and the generators issue through a store outage
	// (with a StateFile).
	Identity string
}

// WithDefaults returns c with every zero duration and count set to the
// allocator packages' default.
// storeDSNs are the store's nodes in order of preference: StoreDSNs, or
// StoreDSN alone.
func (c *Config) storeDSNs() []string {
	if len(c.StoreDSNs) > 0 {
		return c.StoreDSNs
	}
	return []string{c.StoreDSN}
}

// openStore opens the store over its nodes for a short job (InitStore,
// CheckTags, the layout check): the node in use is the first that
// answers; no failback probe runs.
func (c *Config) openStore() (*sql.DB, error) {
	p, err := NewStorePool(c.storeDSNs(), nil)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(p), nil
}

func (c Config) WithDefaults() Config {
	if c.DefaultStep == 0 {
		c.DefaultStep = segment.DefaultStep
	}
	if c.WaitTimeout == 0 {
		c.WaitTimeout = segment.DefaultWaitTimeout
	}
	if c.MaxLoaders == 0 {
		c.MaxLoaders = segment.DefaultMaxLoaders
	}
	if c.StoreTimeout == 0 {
		c.StoreTimeout = DefaultStoreTimeout
	}
	if c.Snowflake.Layout.TimeBits == 0 {
		c.Snowflake.Layout = snowflake.DefaultLayout()
	}
	if c.Snowflake.MaxBackward == 0 {
		c.Snowflake.MaxBackward = snowflake.DefaultMaxBackward
	}
	if c.Snowflake.LeaseTTL == 0 {
		c.Snowflake.LeaseTTL = snowflake.DefaultLeaseTTL
	}
	return c
}

// DefaultStoreTimeout bounds a store call at start when Config sets none.
const DefaultStoreTimeout = 5 * time.Second

// layoutSource says where tag's layout comes from, as a mismatch with
// the store names it.
func layoutSource(t Tag, tag string) string {
	if t.OwnLayout {
		return "this proxy's sequences.tags." + tag
	}
	return "this proxy's snowflake section, which sequences.tags." + tag + " uses"
}
