package allocator

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/allocator/schema"
	"github.com/leafproxy/leafproxy/allocator/snowflake"
	"github.com/leafproxy/leafproxy/internal/nearname"
)

// InitStore creates the allocation schema (and, for the default store, its
// database `leafproxy` on the backend), converts store tables without
// utf8mb4 (schema.Migrate), and creates every configured segment tag that
// is missing, including tags named only by table rules when auto_create is
// on (without it such a tag must exist: an *UndeclaredTagError names
// every rule whose tag does not, before any tag is created). A tag that fills
// rule tables starts above their largest existing key on the backend and
// the store (adoption of tables with rows), and an existing tag below that
// key is raised to it: keys written around the proxy since (an import, a
// second shard adopted later) are never handed out again. Idempotent:
// max_id only ever moves up. report, if set, hears one line per tag.
func InitStore(ctx context.Context, cfg *Config, report func(format string, args ...any)) error {
	if report == nil {
		report = func(string, ...any) {}
	}
	c := cfg.WithDefaults()
	cfg = &c
	dsn := cfg.StoreDSN
	mc, err := mysql.ParseDSN(dsn)
	if err != nil {
		return fmt.Errorf("sequences.store: %w", err)
	}
	if cfg.CreateStoreDatabase {
		if err := createDatabase(ctx, mc); err != nil {
			return err
		}
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := schema.Create(ctx, db); err != nil {
		return fmt.Errorf("store %s: %w", mc.Addr, err)
	}
	converted, err := schema.Migrate(ctx, db)
	if err != nil {
		return fmt.Errorf("store %s: %w", mc.Addr, err)
	}
	for _, tb := range converted {
		if strings.Contains(tb, " (") {
			report("migrated %s", tb) // columns added in place
			continue
		}
		report("converted %s to %s", tb, schema.Collation)
	}
	floors, closeFloors, err := newKeyFloors(cfg, db)
	if err != nil {
		return err
	}
	defer closeFloors()
	tags := map[string]int64{}
	for name, t := range cfg.Tags {
		if t.Generator == GeneratorSegment {
			tags[name] = t.Step
		}
	}
	// A tag named only by table rules is created only with auto_create
	// on; otherwise it must exist already (a typo must not create a tag):
	// in leaf_alloc, or in the store as a snowflake tag (created in SQL).
	if err := undeclaredTags(ctx, cfg, db); err != nil {
		return err
	}
	snow, err := snowflake.NewMySQLLeaser(db, "", 0).TagLayouts(ctx)
	if err != nil {
		return fmt.Errorf("store %s: read the snowflake tags in leaf_snowflake_layout: %w", mc.Addr, err)
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
	names := make([]string, 0, len(tags))
	for n := range tags {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		floor, where, err := floors.floor(ctx, n)
		if err != nil {
			return err
		}
		created, err := schema.EnsureTagAt(ctx, db, n, tags[n], floor+1, "created by leafproxy")
		if err != nil {
			return err
		}
		switch {
		case created && floor > 0:
			report("created tag %q (step %d), first ID %d: above the largest key %d (%s)", n, tags[n], floor+1, floor, where)
		case created:
			report("created tag %q (step %d)", n, tags[n])
		case floor > 0:
			before, after, _, err := schema.RaiseTag(ctx, db, n, floor+1)
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
	}
	report("allocation store ready on %s/%s", mc.Addr, mc.DBName)
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

// CheckTags reports (as an *UndeclaredTagError) the table rules whose tag
// is neither declared in sequences.tags nor in the store's leaf_alloc, with
// auto_create off, changing nothing: a store whose database or leaf_alloc
// does not exist yet holds no tag.
func CheckTags(ctx context.Context, cfg *Config) error {
	if cfg.AutoCreate {
		return nil
	}
	db, err := sql.Open("mysql", cfg.StoreDSN)
	if err != nil {
		return err
	}
	defer db.Close()
	err = undeclaredTags(ctx, cfg, db)
	var me *mysql.MySQLError
	if errors.As(err, &me) && (me.Number == 1049 || me.Number == 1146) { // no database, no table
		return undeclaredTags(ctx, cfg, nil)
	}
	return err
}

// undeclaredTags checks the table rules' tags that sequences.tags does not
// declare (auto_create off): each must have its row in leaf_alloc.
func undeclaredTags(ctx context.Context, cfg *Config, db *sql.DB) error {
	if cfg.AutoCreate {
		return nil
	}
	var missing []UndeclaredTag
	var stored []string
	for i, r := range cfg.Rules {
		if _, ok := cfg.Tags[r.Tag]; ok {
			continue
		}
		if db != nil {
			var one int
			err := db.QueryRowContext(ctx, "SELECT 1 FROM leaf_alloc WHERE biz_tag = ?", r.Tag).Scan(&one)
			if err == nil {
				continue
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			// A snowflake tag created in SQL has no leaf_alloc row (a store
			// without the layout table has none such).
			if db.QueryRowContext(ctx, "SELECT 1 FROM leaf_snowflake_layout WHERE name = ?", "tag:"+r.Tag).Scan(&one) == nil {
				continue
			}
		}
		if stored == nil && db != nil {
			stored = []string{}
			rows, err := db.QueryContext(ctx, "SELECT biz_tag FROM leaf_alloc")
			if err != nil {
				return err
			}
			for rows.Next() {
				var t string
				if rows.Scan(&t) == nil {
					stored = append(stored, t)
				}
			}
			rows.Close()
		}
		near := nearname.Suggest(r.Tag, append(slices.Collect(maps.Keys(cfg.Tags)), stored...))
		missing = append(missing, UndeclaredTag{Index: i, Tag: r.Tag, Near: near})
	}
	if len(missing) > 0 {
		return &UndeclaredTagError{Tags: missing}
	}
	return nil
}

func createDatabase(ctx context.Context, mc *mysql.Config) error {
	root := *mc
	root.DBName = ""
	db, err := sql.Open("mysql", root.FormatDSN())
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS `"+mc.DBName+"`"); err != nil {
		return fmt.Errorf("create database %s on %s: %w", mc.DBName, mc.Addr, err)
	}
	return nil
}
