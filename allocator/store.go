package allocator

import (
	"context"
	"database/sql"
	"fmt"
	"sort"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/allocator/schema"
	"github.com/leafproxy/leafproxy/allocator/snowflake"
	"github.com/leafproxy/leafproxy/config"
)

// InitStore creates the allocation schema (and, for the default store, its
// database `leafproxy` on the backend), converts store tables without
// utf8mb4 (schema.Migrate), and creates every configured segment tag that
// is missing, including tags named only by table rules. A tag that fills
// rule tables starts above their largest existing key on the backend and
// the store (adoption of tables with rows), and an existing tag below that
// key is raised to it: keys written around the proxy since (an import, a
// second shard adopted later) are never handed out again. Idempotent:
// max_id only ever moves up. report, if set, hears one line per tag.
func InitStore(ctx context.Context, cfg *config.Config, report func(format string, args ...any)) error {
	if report == nil {
		report = func(string, ...any) {}
	}
	dsn := cfg.StoreDSN()
	mc, err := mysql.ParseDSN(dsn)
	if err != nil {
		return fmt.Errorf("sequences.store: %w", err)
	}
	if cfg.Sequences.Store == "" {
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
		report("converted %s to %s", tb, schema.Collation)
	}
	floors, closeFloors, err := newKeyFloors(cfg, db)
	if err != nil {
		return err
	}
	defer closeFloors()
	tags := map[string]int64{}
	for name, t := range cfg.Sequences.Tags {
		if t.Generator == "segment" {
			tags[name] = t.Step
		}
	}
	// A rule's tag the configuration does not declare is a segment tag,
	// unless the store has it as a snowflake tag (created in SQL).
	snow, err := snowflake.NewMySQLLeaser(db, "", 0).TagLayouts(ctx)
	if err != nil {
		return fmt.Errorf("store %s: read the snowflake tags in leaf_snowflake_layout: %w", mc.Addr, err)
	}
	for _, r := range cfg.Tables {
		if _, ok := cfg.Sequences.Tags[r.Tag]; ok {
			continue
		}
		if _, ok := snow[r.Tag]; ok {
			report("tag %q is a snowflake tag in the store (leaf_snowflake_layout): no leaf_alloc row", r.Tag)
			continue
		}
		tags[r.Tag] = cfg.Sequences.DefaultStep
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
