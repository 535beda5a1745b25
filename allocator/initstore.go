package allocator

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/leafproxy/leafproxy/allocator/schema"
	"github.com/leafproxy/leafproxy/allocator/snowflake"
	"github.com/leafproxy/leafproxy/internal/nearname"
)

// What InitStore and CheckTags decide, apart from the SQL: which rules name
// a tag the store lacks, what InitStore creates, raises and reports, in
// which order. They see the store as a TagStore: the MySQL one over
// Config.StoreDSN (store.go), or a test's in-memory fake
// (internal/testkit/fakestore) given with WithTagStore.

// TagStore is the store as InitStore prepares it and CheckTags reads it.
type TagStore interface {
	// CreateSchema creates the store's tables where missing and migrates
	// them in place (schema.Create, schema.Migrate); migrated names each
	// table converted to utf8mb4, or "table (columns)" for columns added.
	CreateSchema(ctx context.Context) (migrated []string, err error)
	// HasTag says the store holds tag: a leaf_alloc row, or a snowflake
	// tag created in SQL (its leaf_snowflake_layout row).
	HasTag(ctx context.Context, tag string) (bool, error)
	// SegmentTags lists leaf_alloc's tags (an undeclared tag's
	// did-you-mean).
	SegmentTags(ctx context.Context) ([]string, error)
	// TagLayouts reads the snowflake tags created in SQL, by tag.
	TagLayouts(ctx context.Context) (map[string]snowflake.LayoutRecord, error)
	// EnsureTag creates tag's leaf_alloc row (first ID first) when it has
	// none; created says it did.
	EnsureTag(ctx context.Context, tag string, step, first int64, description string) (created bool, err error)
	// RaiseTag moves tag's max_id up to first when it is lower; before
	// and after are max_id as it was and as it is.
	RaiseTag(ctx context.Context, tag string, first int64) (before, after int64, err error)
}

// WithTagStore makes InitStore and CheckTags use ts instead of the MySQL
// store over Config.StoreDSN (tests: internal/testkit/fakestore); InitStore then
// creates no database and, without WithKeyServers, reads the rule
// tables' largest keys on the backend alone.
func WithTagStore(ts TagStore) Option { return func(o *options) { o.tagStore = ts } }

// prepareStore is InitStore past connecting: the schema, the undeclared
// tags' check (before any tag is created), then every segment tag the
// configuration needs, created or raised above the keys in use, in name
// order. addr names the store in its errors.
func prepareStore(ctx context.Context, cfg *Config, ts TagStore, floors *keyFloors, addr string, report func(format string, args ...any)) error {
	migrated, err := ts.CreateSchema(ctx)
	if err != nil {
		return fmt.Errorf("store %s: %w", addr, err)
	}
	for _, tb := range migrated {
		if strings.Contains(tb, " (") {
			report("migrated %s", tb) // columns added in place
			continue
		}
		report("converted %s to %s", tb, schema.Collation)
	}
	tags := map[string]int64{}
	for name, t := range cfg.Tags {
		if t.Generator == GeneratorSegment {
			tags[name] = t.Step
		}
	}
	// A tag named only by table rules is created only with auto_create
	// on; otherwise it must exist already (a typo must not create a tag):
	// in leaf_alloc, or in the store as a snowflake tag (created in SQL).
	if err := undeclaredTags(ctx, cfg, ts); err != nil {
		return err
	}
	snow, err := ts.TagLayouts(ctx)
	if err != nil {
		return fmt.Errorf("store %s: read the snowflake tags in leaf_snowflake_layout: %w", addr, err)
	}
	for _, r := range cfg.Rules {
		if _, ok := cfg.Tags[r.Tag]; ok {
			continue
		}
		if _, ok := snow[r.Tag]; ok {
			report("tag %q is a snowflake tag in the store (leaf_snowflake_layout): no leaf_alloc row", r.Tag)
			continue
		}
		tags[r.Tag] = cfg.DefaultStep
	}
	names := slices.Collect(maps.Keys(tags))
	sort.Strings(names)
	for _, n := range names {
		if err := ensureTag(ctx, ts, floors, n, tags[n], report); err != nil {
			return err
		}
	}
	return nil
}

// ensureTag creates segment tag n (step) above the largest key of the
// tables it fills, or raises it there, and reports what it did.
func ensureTag(ctx context.Context, ts TagStore, floors *keyFloors, n string, step int64, report func(format string, args ...any)) error {
	floor, where, err := floors.floor(ctx, n)
	if err != nil {
		return err
	}
	if err := schema.CheckTag(n); err != nil {
		return err
	}
	created, err := ts.EnsureTag(ctx, n, step, floor+1, "created by leafproxy")
	if err != nil {
		return err
	}
	switch {
	case created && floor > 0:
		report("created tag %q (step %d), first ID %d: above the largest key %d (%s)", n, step, floor+1, floor, where)
	case created:
		report("created tag %q (step %d)", n, step)
	case floor > 0:
		before, after, err := ts.RaiseTag(ctx, n, floor+1)
		if err != nil {
			return err
		}
		if after > before {
			report("raised tag %q: max_id %d -> %d, above the largest key %d (%s)", n, before, after, floor, where)
		} else {
			report("tag %q exists (max_id %d, above the largest key %d)", n, before, floor)
		}
	default:
		report("tag %q exists", n)
	}
	return nil
}

// UndeclaredTagError lists table rules whose tag is neither declared in
// sequences.tags nor in the store, with auto_create off: init and serve
// refuse them rather than create a tag from a typo.
type UndeclaredTagError struct {
	Tags []UndeclaredTag
}

// UndeclaredTag is one such rule.
type UndeclaredTag struct {
	Index int    // in tables
	Tag   string // as written
	Near  string // a declared or stored tag one typo away, if any
}

// Key is the configuration key to fix.
func (u UndeclaredTag) Key() string { return fmt.Sprintf("tables[%d].tag", u.Index) }

// Problem says what is wrong with the rule and how to fix it.
func (u UndeclaredTag) Problem() string {
	s := fmt.Sprintf("tag %q is not declared in sequences.tags and leaf_alloc has no row for it", u.Tag)
	if u.Near != "" {
		s += fmt.Sprintf(" (did you mean %q?)", u.Near)
	}
	return s + fmt.Sprintf("; fix the name, or declare it (sequences: {tags: {%s: {}}}) to have init and serve create it", u.Tag)
}

func (e *UndeclaredTagError) Error() string {
	s := make([]string, len(e.Tags))
	for i, u := range e.Tags {
		s[i] = u.Key() + ": " + u.Problem()
	}
	return strings.Join(s, "; ")
}

// undeclaredTags checks the table rules' tags that sequences.tags does not
// declare (auto_create off): each must be in the store (ts nil: a store
// that holds no tag yet). Every rule that fails is in one
// *UndeclaredTagError, in the order of the rules.
func undeclaredTags(ctx context.Context, cfg *Config, ts TagStore) error {
	if cfg.AutoCreate {
		return nil
	}
	var missing []UndeclaredTag
	var stored []string
	for i, r := range cfg.Rules {
		if _, ok := cfg.Tags[r.Tag]; ok {
			continue
		}
		if ts != nil {
			ok, err := ts.HasTag(ctx, r.Tag)
			if err != nil {
				return err
			}
			if ok {
				continue
			}
			if stored == nil {
				if stored, err = ts.SegmentTags(ctx); err != nil {
					return err
				}
				if stored == nil {
					stored = []string{} // read once, even when empty
				}
			}
		}
		near := nearname.Suggest(r.Tag, append(slices.Collect(maps.Keys(cfg.Tags)), stored...))
		missing = append(missing, UndeclaredTag{Index: i, Tag: r.Tag, Near: near})
	}
	if len(missing) > 0 {
		return &UndeclaredTagError{Tags: missing}
	}
	return nil
}
