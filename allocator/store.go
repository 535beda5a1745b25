package allocator

import (
	"context"
	"database/sql"
	"fmt"
	"sort"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/allocator/schema"
	"github.com/leafproxy/leafproxy/config"
)

// InitStore creates the allocation schema (and, for the default store, its
// database `leafproxy` on the backend) and every configured segment tag that
// is missing, including tags named only by table rules. Idempotent: existing
// rows keep their max_id. report, if set, hears one line per tag.
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
	if err := schema.Ensure(ctx, db); err != nil {
		return fmt.Errorf("store %s: %w", mc.Addr, err)
	}
	tags := map[string]int64{}
	for name, t := range cfg.Sequences.Tags {
		if t.Generator == "segment" {
			tags[name] = t.Step
		}
	}
	for _, r := range cfg.Tables {
		if _, ok := cfg.Sequences.Tags[r.Tag]; !ok {
			tags[r.Tag] = cfg.Sequences.DefaultStep
		}
	}
	names := make([]string, 0, len(tags))
	for n := range tags {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		created, err := schema.EnsureTag(ctx, db, n, tags[n], "created by leafproxy")
		if err != nil {
			return err
		}
		if created {
			report("created tag %q (step %d)", n, tags[n])
		} else {
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
