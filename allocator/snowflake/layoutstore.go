package snowflake

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// DefaultLayoutName is the leaf_snowflake_layout row of the global layout
// (the config's snowflake section). A snowflake tag's layout is the row
// "tag:<tag>" (schema.TagLayoutName).
const DefaultLayoutName = "default"

// tagRowPrefix starts the rows of tags (schema.TagLayoutPrefix; this
// package imports nothing of the repository).
const tagRowPrefix = "tag:"

// ErrLayoutMismatch: this process's layout differs from the one recorded in
// the store (a *LayoutMismatchError says how). IDs of two layouts can
// collide, so nothing is issued; a definitive answer, not retried.
var ErrLayoutMismatch = errors.New("snowflake layout differs from the one recorded in the store")

// LayoutChecker is a worker source whose store records the layout. New
// calls CheckLayout before Acquire, bounded like it, so no generator holds
// a worker id, let alone issues, under a layout that differs from the
// store's.
type LayoutChecker interface {
	CheckLayout(ctx context.Context, l Layout) (LayoutCheck, error)
}

// LayoutRecord is a row of leaf_snowflake_layout.
type LayoutRecord struct {
	Name       string // the row's name ("default", "tag:x"); TagLayout(s) give the tag ("x")
	Layout     Layout
	RecordedBy string    // host:pid:listen
	RecordedAt time.Time // by the store's clock
	// Description says who made a tag's row and how (empty for the
	// global row and rows recorded from a configuration).
	Description string
}

// LayoutCheck is what CheckLayout found.
type LayoutCheck struct {
	Record   LayoutRecord // the store's row, equal to the layout checked
	Recorded bool         // this call wrote it
	// When Recorded: leaf_worker rows there were already (a store used by
	// leafproxy before layouts were recorded), and the highest worker id
	// among them (-1 when none).
	PriorWorkers   int
	MaxPriorWorker int64
}

// WorkerHolder is a live holder of a worker id (its lease not expired).
type WorkerHolder struct {
	Worker  int64
	Owner   string // host:pid:listen, token removed
	Expires time.Time
}

// maxHolders is how many live holders a LayoutMismatchError names.
const maxHolders = 8

// LayoutMismatchError says that the store records another layout than this
// process's: both layouts, who recorded the store's and when, and the
// processes holding worker ids now (those run the recorded layout, or a
// leafproxy that did not check).
type LayoutMismatchError struct {
	Layout Layout // this process's
	// Tag is set when the row compared is a tag's; Source then says where
	// this process's layout for it comes from (a config key).
	Tag         string
	Source      string
	Store       LayoutRecord // the store's
	Holders     []WorkerHolder
	MoreHolders int // live holders not listed
}

func (e *LayoutMismatchError) Error() string {
	var b strings.Builder
	src, fix := "this proxy's snowflake config", "set snowflake.time_bits, worker_bits, sequence_bits, time_unit and epoch to the recorded layout"
	if e.Tag != "" {
		src = cmp.Or(e.Source, "this proxy's sequences.tags."+e.Tag)
		fix = fmt.Sprintf("give tag '%s' the recorded layout in sequences.tags.%s (layout, or time_bits, worker_bits, sequence_bits, time_unit and epoch)", e.Tag, e.Tag)
		fmt.Fprintf(&b, "tag '%s': ", e.Tag)
	}
	fmt.Fprintf(&b, "snowflake layout %s (%s) differs from %s recorded in the store (leaf_snowflake_layout '%s', by %s at %s)",
		e.Layout, src, e.Store.Layout, e.Store.Name, e.Store.RecordedBy, e.Store.RecordedAt.UTC().Format("2006-01-02 15:04:05.000 MST"))
	if d := layoutDiff(e.Layout, e.Store.Layout); d != "" {
		fmt.Fprintf(&b, ": %s", d)
	}
	if len(e.Holders) == 0 {
		b.WriteString("; no worker id is held now")
	} else {
		b.WriteString("; worker ids held now: ")
		for i, h := range e.Holders {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%d by %q until %s", h.Worker, h.Owner, h.Expires.UTC().Format("15:04:05.000 MST"))
		}
		if e.MoreHolders > 0 {
			fmt.Fprintf(&b, " and %d more", e.MoreHolders)
		}
	}
	fmt.Fprintf(&b, ". IDs of two layouts can collide, so a proxy with this config issues no snowflake ID: %s; or, only when no proxy uses the recorded layout any more and "+
		"you accept that IDs of the two layouts may collide, DELETE FROM leaf_snowflake_layout WHERE name = '%s' and restart", fix, e.Store.Name)
	return b.String()
}

func (e *LayoutMismatchError) Unwrap() error { return ErrLayoutMismatch }

// layoutDiff names the config keys whose values differ, with both values.
func layoutDiff(mine, stored Layout) string {
	var d []string
	if mine.TimeBits != stored.TimeBits {
		d = append(d, fmt.Sprintf("time_bits %d vs %d", mine.TimeBits, stored.TimeBits))
	}
	if mine.WorkerBits != stored.WorkerBits {
		d = append(d, fmt.Sprintf("worker_bits %d vs %d", mine.WorkerBits, stored.WorkerBits))
	}
	if mine.SequenceBits != stored.SequenceBits {
		d = append(d, fmt.Sprintf("sequence_bits %d vs %d", mine.SequenceBits, stored.SequenceBits))
	}
	if mine.Unit != stored.Unit {
		d = append(d, fmt.Sprintf("time_unit %v vs %v", mine.Unit, stored.Unit))
	}
	if mine.Epoch.UnixMilli() != stored.Epoch.UnixMilli() {
		d = append(d, fmt.Sprintf("epoch %s vs %s", mine.Epoch.UTC().Format(time.RFC3339Nano), stored.Epoch.UTC().Format(time.RFC3339Nano)))
	}
	return strings.Join(d, ", ")
}

// SameLayout says two layouts give the same IDs for the same time, worker
// and sequence: equal bits and unit, and epochs in the same millisecond
// (what the store records; handing a worker id over is exact to the
// millisecond, so a smaller difference cannot repeat an ID).
func SameLayout(a, b Layout) bool {
	return a.TimeBits == b.TimeBits && a.WorkerBits == b.WorkerBits && a.SequenceBits == b.SequenceBits &&
		a.Unit == b.Unit && a.Epoch.UnixMilli() == b.Epoch.UnixMilli()
}

// CheckLayout records l as the store's global layout when none is recorded
// yet (INSERT IGNORE, so of racing first proxies one wins and the others
// compare with it), then compares the recorded one with l: a difference
// is a *LayoutMismatchError naming the live holders of worker ids. A store
// with leaf_worker rows but no layout row (used before layouts were
// recorded) gets l: the running configuration is assumed to be the one
// those rows were issued with (LayoutCheck.PriorWorkers tells).
func (m *MySQLLeaser) CheckLayout(ctx context.Context, l Layout) (LayoutCheck, error) {
	if m.layout != "" {
		// A leaser of another layout's ids: the rows of the tags that use
		// it are checked (CheckTagLayout) before it leases.
		return LayoutCheck{}, nil
	}
	chk, err := m.checkLayout(ctx, DefaultLayoutName, l, "", nil)
	return chk, storeError(err, "check the snowflake layout in leaf_snowflake_layout")
}

// storeError classifies a failed store call: a mismatch as it is, a store
// that could not be asked as ErrStoreUnavailable (retried), a refusal
// (no privilege) as it is.
func storeError(err error, what string) error {
	if err != nil && !errors.Is(err, ErrLayoutMismatch) {
		var me *mysql.MySQLError
		if errors.As(err, &me) && me.Number == 1146 { // no such table
			err = fmt.Errorf("%w (run `leafproxy init` with an account that may create tables)", err)
		}
		if !refused(err) {
			err = fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	return err
}

// checkLayout records l as row name when there is none (INSERT IGNORE),
// then compares the row with l. holders, when set, gives the leaser whose
// live holders a mismatch names (nil: m's).
func (m *MySQLLeaser) checkLayout(ctx context.Context, name string, l Layout, description string, holders func(Layout) *MySQLLeaser) (LayoutCheck, error) {
	var chk LayoutCheck
	var res sql.Result
	var err error
	if description == "" {
		// The global row is written as before tags had rows (a table not
		// migrated yet has no description column).
		res, err = m.db.ExecContext(ctx,
			"INSERT IGNORE INTO leaf_snowflake_layout (name, epoch_ms, time_bits, worker_bits, sequence_bits, unit_ns, recorded_by, recorded_at) "+
				"VALUES (?, ?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(3))",
			name, l.Epoch.UnixMilli(), l.TimeBits, l.WorkerBits, l.SequenceBits, int64(l.Unit), m.owner)
	} else {
		res, err = m.db.ExecContext(ctx,
			"INSERT IGNORE INTO leaf_snowflake_layout (name, epoch_ms, time_bits, worker_bits, sequence_bits, unit_ns, recorded_by, recorded_at, description) "+
				"VALUES (?, ?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(3), ?)",
			name, l.Epoch.UnixMilli(), l.TimeBits, l.WorkerBits, l.SequenceBits, int64(l.Unit), m.owner, description)
		if unknownColumn(err) {
			// A table the store's account could not migrate (no ALTER):
			// the row without its description.
			description = ""
			res, err = m.db.ExecContext(ctx,
				"INSERT IGNORE INTO leaf_snowflake_layout (name, epoch_ms, time_bits, worker_bits, sequence_bits, unit_ns, recorded_by, recorded_at) "+
					"VALUES (?, ?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(3))",
				name, l.Epoch.UnixMilli(), l.TimeBits, l.WorkerBits, l.SequenceBits, int64(l.Unit), m.owner)
		}
	}
	if err != nil {
		return chk, err
	}
	n, _ := res.RowsAffected()
	chk.Recorded = n == 1
	rec, found, err := m.readLayout(ctx, name, description != "")
	if err == nil && !found {
		// Deleted between the two statements: an operator is changing it.
		err = fmt.Errorf("leaf_snowflake_layout row '%s' vanished after it was recorded; retrying", name)
	}
	if err != nil {
		return chk, err
	}
	chk.Record = rec
	if !SameLayout(l, rec.Layout) {
		e := &LayoutMismatchError{Layout: l, Store: rec}
		h := m
		if holders != nil {
			h = holders(rec.Layout)
		}
		if err := h.liveHolders(ctx, e); err != nil {
			return chk, err
		}
		return chk, e
	}
	if chk.Recorded && name == DefaultLayoutName {
		var maxID sql.NullInt64
		if err := m.db.QueryRowContext(ctx, "SELECT COUNT(*), MAX(worker_id) FROM leaf_worker").Scan(&chk.PriorWorkers, &maxID); err != nil {
			return chk, err
		}
		chk.MaxPriorWorker = -1
		if maxID.Valid {
			chk.MaxPriorWorker = maxID.Int64
		}
	}
	return chk, nil
}

// layoutCols are the columns readLayout scans (described: with the
// description, which a table not migrated yet lacks).
const layoutCols = "name, epoch_ms, time_bits, worker_bits, sequence_bits, unit_ns, recorded_by, " +
	"TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', recorded_at) DIV 1000"

type scanner interface{ Scan(...any) error }

func scanLayout(r scanner, described bool) (LayoutRecord, error) {
	var rec LayoutRecord
	var epochMs, unitNs, atMs int64
	var tb, wb, sb uint
	var desc sql.NullString
	dst := []any{&rec.Name, &epochMs, &tb, &wb, &sb, &unitNs, &rec.RecordedBy, &atMs}
	if described {
		dst = append(dst, &desc)
	}
	if err := r.Scan(dst...); err != nil {
		return rec, err
	}
	rec.Layout = Layout{TimeBits: tb, WorkerBits: wb, SequenceBits: sb, Unit: time.Duration(unitNs), Epoch: time.UnixMilli(epochMs).UTC()}
	rec.RecordedAt = time.UnixMilli(atMs)
	rec.Description = desc.String
	return rec, nil
}

// readLayout reads row name of leaf_snowflake_layout.
func (m *MySQLLeaser) readLayout(ctx context.Context, name string, described bool) (LayoutRecord, bool, error) {
	q := "SELECT " + layoutCols
	if described {
		q += ", description"
	}
	rec, err := scanLayout(m.db.QueryRowContext(ctx, q+" FROM leaf_snowflake_layout WHERE name = ?", name), described)
	if errors.Is(err, sql.ErrNoRows) {
		return rec, false, nil
	}
	return rec, err == nil, err
}

// liveHolders fills e with the processes whose worker-id lease has not
// expired by the store's clock.
func (m *MySQLLeaser) liveHolders(ctx context.Context, e *LayoutMismatchError) error {
	ttlMs := m.ttl.Milliseconds()
	rows, err := m.db.QueryContext(ctx, m.q(
		"SELECT worker_id, owner, heartbeat FROM {T} WHERE owner <> '' AND "+dbNowMs+" - heartbeat <= ?{S} ORDER BY worker_id"), m.args(ttlMs)...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var h WorkerHolder
		var hb int64
		if err := rows.Scan(&h.Worker, &h.Owner, &hb); err != nil {
			return err
		}
		if len(e.Holders) == maxHolders {
			e.MoreHolders++
			continue
		}
		if i := strings.LastIndexByte(h.Owner, '#'); i >= 0 {
			h.Owner = h.Owner[:i]
		}
		h.Expires = time.UnixMilli(hb + ttlMs)
		e.Holders = append(e.Holders, h)
	}
	return rows.Err()
}

// checkLayout records or compares the layout when the worker source keeps
// one (before any worker id is taken), and logs what it recorded.
func (g *Generator) checkLayout(ctx context.Context, storeTimeout time.Duration) error {
	lc, ok := g.src.(LayoutChecker)
	if !ok {
		return nil
	}
	cctx, cancel := storeCtx(ctx, storeTimeout)
	chk, err := lc.CheckLayout(cctx, g.layout)
	cancel()
	if err != nil {
		return err
	}
	chk.Report(g.log, g.layout)
	return nil
}

// Report logs what CheckLayout recorded, if anything: the layout, and a
// warning when the store had worker rows from before layouts were recorded.
func (chk LayoutCheck) Report(log *slog.Logger, l Layout) {
	switch {
	case !chk.Recorded:
	case chk.PriorWorkers > 0 && chk.MaxPriorWorker > l.MaxWorker():
		log.Warn("recorded this proxy's snowflake layout for a store used before layouts were recorded, "+
			"but leaf_worker has worker ids beyond this layout's: proxies with more worker bits issued IDs here; "+
			"if any of them still runs, its IDs can collide with these: make all configs match",
			"layout", l.String(), "leaf_worker_rows", chk.PriorWorkers, "highest_worker_id", chk.MaxPriorWorker, "max_worker", l.MaxWorker())
	case chk.PriorWorkers > 0:
		log.Warn("recorded this proxy's snowflake layout for a store used before layouts were recorded: "+
			"assuming its leaf_worker rows were issued with this layout; proxies still configured otherwise will refuse to start",
			"layout", l.String(), "leaf_worker_rows", chk.PriorWorkers)
	default:
		log.Info("recorded the snowflake layout in the store", "layout", l.String())
	}
}
