package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/allocator/schema"
	"github.com/leafproxy/leafproxy/config"
)

// initStore creates the allocation schema and every configured tag that is
// missing. Idempotent: existing rows keep their max_id.
func initStore(ctx context.Context, cfg *config.Config, w io.Writer) error {
	dsn := cfg.StoreDSN()
	mc, err := mysql.ParseDSN(dsn)
	if err != nil {
		return fmt.Errorf("sequences.store: %w", err)
	}
	if cfg.Sequences.Store == "" {
		// The default store lives in its own database on the backend.
		if err := createDatabase(ctx, mc); err != nil {
			return err
		}
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
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
		created, err := schema.EnsureTag(ctx, db, n, tags[n], "created by leafproxy init")
		if err != nil {
			return err
		}
		if created {
			fmt.Fprintf(w, "created tag %q (step %d)\n", n, tags[n])
		} else {
			fmt.Fprintf(w, "tag %q exists\n", n)
		}
	}
	fmt.Fprintf(w, "allocation store ready on %s/%s\n", mc.Addr, mc.DBName)
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
