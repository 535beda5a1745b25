package allocator

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"

	"github.com/leafproxy/leafproxy/allocator/snowflake"
	"github.com/leafproxy/leafproxy/config"
)

// openSnowflake starts the generator: the layout is checked against the
// store's (recorded when it is the first), then a worker id is leased or
// the configured one registered. Both run at start and, when the store
// could not be asked, in the background retry, so no snowflake ID is ever
// issued under a layout the store does not record.
func openSnowflake(ctx context.Context, cfg *config.Config, db *sql.DB, log *slog.Logger) (*snowflake.Generator, error) {
	sc := cfg.Snowflake
	layout, err := sc.Layout()
	if err != nil {
		return nil, err
	}
	opts := snowflake.Options{
		Layout:       layout,
		RandomStart:  *sc.RandomStart,
		MaxBackward:  sc.MaxBackward.D(),
		StateFile:    sc.StateFile,
		Logger:       log.With("component", "snowflake"),
		StoreTimeout: cfg.Backend.ConnectTimeout.D(),
	}
	if *sc.RandomStart == 0 {
		opts.RandomStart = 1 // config 0 means "no random start"; the generator's 0 means its default
	}
	leaser := snowflake.NewMySQLLeaser(db, owner(cfg), sc.LeaseTTL.D())
	if sc.WorkerID == "auto" {
		opts.Worker = leaser
	} else {
		id, err := strconv.ParseInt(sc.WorkerID, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("snowflake.worker_id: %w", err)
		}
		// Registered in leaf_worker like a leased id, so two processes
		// configured with the same id (or an id an auto process leased)
		// cannot both issue under it.
		opts.Worker = leaser.Fixed(id)
	}
	g, err := snowflake.New(ctx, opts)
	if errors.Is(err, snowflake.ErrLayoutMismatch) {
		return nil, err // says it all
	}
	if err != nil {
		return nil, fmt.Errorf("start snowflake generator: %w", err)
	}
	return g, nil
}

// owner names this process in leaf_worker and leaf_snowflake_layout.
func owner(cfg *config.Config) string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), cfg.Listen)
}

// fatalError is a reason snowflake tags stay fenced until a restart: the
// store's layout differs from this proxy's, found after start (at start it
// stops the start).
type fatalError struct{ err error }

func (e *fatalError) Error() string {
	return e.err.Error() + " [snowflake tags stay fenced until leafproxy is restarted]"
}

func (e *fatalError) Unwrap() error { return e.err }

// CheckSnowflakeLayout records the configured snowflake layout in the
// store when none is recorded yet, or checks it against the recorded one,
// as a start does before it takes a worker id (`leafproxy init`). Nothing
// is done when no tag uses snowflake. A different recorded layout is an
// error wrapping snowflake.ErrLayoutMismatch.
func CheckSnowflakeLayout(ctx context.Context, cfg *config.Config, report func(format string, args ...any)) error {
	uses := false
	for _, t := range cfg.Sequences.Tags {
		uses = uses || t.Generator == "snowflake"
	}
	if !uses {
		return nil
	}
	if report == nil {
		report = func(string, ...any) {}
	}
	layout, err := cfg.Snowflake.Layout()
	if err != nil {
		return fmt.Errorf("snowflake: %w", err)
	}
	db, err := sql.Open("mysql", cfg.StoreDSN())
	if err != nil {
		return err
	}
	defer db.Close()
	chk, err := snowflake.NewMySQLLeaser(db, owner(cfg)+" (leafproxy init)", cfg.Snowflake.LeaseTTL.D()).CheckLayout(ctx, layout)
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
	return nil
}
