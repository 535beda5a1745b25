package allocator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/leafproxy/leafproxy/allocator/snowflake"
)

// openSnowflake starts a generator of layout: a worker id is leased from
// workers (in layout's space; def is the store's global layout) or the
// configured one registered there. The generator of the store's global
// layout (global) also checks that layout against the store's before it
// leases and keeps snowflake.state_file;
// the others keep a state file of their own beside it (the layout's key
// appended), their tags' rows having been checked by the caller.
func openSnowflake(ctx context.Context, cfg *Config, workers SnowflakeStore, def, layout snowflake.Layout, global bool, log *slog.Logger) (*snowflake.Generator, error) {
	sc := cfg.Snowflake
	opts := snowflake.Options{
		Layout:       layout,
		RandomStart:  sc.RandomStart,
		MaxBackward:  sc.MaxBackward,
		StateFile:    sc.StateFile,
		Logger:       log.With("component", "snowflake"),
		StoreTimeout: cfg.StoreTimeout,
	}
	if !global {
		opts.Logger = opts.Logger.With("layout", layout.String())
		if opts.StateFile != "" {
			opts.StateFile += "." + strings.ReplaceAll(snowflake.LayoutKey(layout), "/", "-")
		}
	}
	if sc.RandomStart == 0 {
		opts.RandomStart = 1 // Config's 0 means "no random start"; the generator's 0 means its default
	}
	opts.Worker = workers.Workers(layout, def, sc.LeaseWorkerID, sc.WorkerID)
	g, err := snowflake.New(ctx, opts)
	if errors.Is(err, snowflake.ErrLayoutMismatch) {
		return nil, err // says it all
	}
	if err != nil {
		if !global {
			return nil, fmt.Errorf("start snowflake generator of layout %s: %w", layout, err)
		}
		return nil, fmt.Errorf("start snowflake generator: %w", err)
	}
	return g, nil
}

// Owner names this process in leaf_worker and leaf_snowflake_layout:
// host, process id and the address it serves (Config.Owner).
func Owner(listen string) string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), listen)
}

// fatalError is a reason snowflake tags stay fenced until a restart: the
// store's layout differs from this proxy's, found after start (at start it
// stops the start).
type fatalError struct{ err error }

func (e *fatalError) Error() string {
	return e.err.Error() + " [snowflake tags stay fenced until leafproxy is restarted]"
}

func (e *fatalError) Unwrap() error { return e.err }

// CheckSnowflakeLayout records the configured snowflake layouts in the
// store when none is recorded yet, or checks them against the recorded
// ones, as a start does before it takes a worker id (`leafproxy init`):
// the global layout (row 'default'), then each configured snowflake tag's
// (row 'tag:<tag>'). Nothing is done when no tag uses snowflake. A
// different recorded layout is an error wrapping snowflake.ErrLayoutMismatch.
func CheckSnowflakeLayout(ctx context.Context, cfg *Config, report func(format string, args ...any)) error {
	c := cfg.WithDefaults()
	cfg = &c
	var tags []string
	for name, t := range cfg.Tags {
		if t.Generator == GeneratorSnowflake {
			tags = append(tags, name)
		}
	}
	if len(tags) == 0 {
		return nil
	}
	slices.Sort(tags)
	if report == nil {
		report = func(string, ...any) {}
	}
	layout := cfg.Snowflake.Layout
	if err := layout.Validate(); err != nil {
		return fmt.Errorf("snowflake: %w", err)
	}
	db, err := cfg.openStore()
	if err != nil {
		return err
	}
	defer db.Close()
	leaser := snowflake.NewMySQLLeaser(db, cfg.Owner+" (leafproxy init)", cfg.Snowflake.LeaseTTL)
	chk, err := leaser.CheckLayout(ctx, layout)
	if err != nil {
		return err
	}
	switch {
	case chk.Recorded && chk.PriorWorkers > 0:
		report("recorded snowflake layout %s in leaf_snowflake_layout; leaf_worker already had %d rows (highest worker id %d): "+
			"assumed issued with this layout", layout, chk.PriorWorkers, chk.MaxPriorWorker)
	case chk.Recorded:
		report("recorded snowflake layout %s in leaf_snowflake_layout", layout)
	default:
		report("snowflake layout %s matches the store's (recorded by %s at %s)", layout, chk.Record.RecordedBy,
			chk.Record.RecordedAt.UTC().Format("2006-01-02 15:04:05 MST"))
	}
	for _, tag := range tags {
		t := cfg.Tags[tag]
		l := t.Layout
		chk, err := leaser.CheckTagLayout(ctx, tag, l, tagDescription(t.OwnLayout, tag), layoutSource(t, tag), layout)
		if err != nil {
			return err
		}
		if chk.Recorded {
			report("recorded snowflake layout %s of tag %q in leaf_snowflake_layout", l, tag)
		} else {
			report("snowflake layout %s of tag %q matches the store's", l, tag)
		}
	}
	return nil
}
