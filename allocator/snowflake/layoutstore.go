package snowflake

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// DefaultLayoutName is the leaf_snowflake_layout row of the global layout
// (the config's snowflake section). Per-tag layouts, when they come, are
// rows keyed by their tag.
const DefaultLayoutName = "default"

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
	Name       string
	Layout     Layout
	RecordedBy string    // host:pid:listen
	RecordedAt time.Time // by the store's clock
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
	Layout      Layout       // this process's
	Store       LayoutRecord // the store's
	Holders     []WorkerHolder
	MoreHolders int // live holders not listed
}

func (e *LayoutMismatchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "snowflake layout %s (this proxy's snowflake config) differs from %s recorded in the store (leaf_snowflake_layout '%s', by %s at %s)",
		e.Layout, e.Store.Layout, e.Store.Name, e.Store.RecordedBy, e.Store.RecordedAt.UTC().Format("2006-01-02 15:04:05.000 MST"))
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
	fmt.Fprintf(&b, ". IDs of two layouts can collide, so a proxy with this config issues no snowflake ID: set snowflake.time_bits, worker_bits, "+
		"sequence_bits, time_unit and epoch to the recorded layout; or, only when no proxy uses the recorded layout any more and "+
		"you accept that IDs of the two layouts may collide, DELETE FROM leaf_snowflake_layout WHERE name = '%s' and restart", e.Store.Name)
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
	chk, err := m.checkLayout(ctx, DefaultLayoutName, l)
	if err != nil && !errors.Is(err, ErrLayoutMismatch) {
		var me *mysql.MySQLError
		if errors.As(err, &me) && me.Number == 1146 { // no such table
			err = fmt.Errorf("%w (run `leafproxy init` with an account that may create tables)", err)
		}
		if !refused(err) {
			err = fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
		}
		return chk, fmt.Errorf("check the snowflake layout in leaf_snowflake_layout: %w", err)
	}
	return chk, err
}

func (m *MySQLLeaser) checkLayout(ctx context.Context, name string, l Layout) (LayoutCheck, error) {
	var chk LayoutCheck
	res, err := m.db.ExecContext(ctx,
		"INSERT IGNORE INTO leaf_snowflake_layout (name, epoch_ms, time_bits, worker_bits, sequence_bits, unit_ns, recorded_by, recorded_at) "+
			"VALUES (?, ?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(3))",
		name, l.Epoch.UnixMilli(), l.TimeBits, l.WorkerBits, l.SequenceBits, int64(l.Unit), m.owner)
	if err != nil {
		return chk, err
	}
	n, _ := res.RowsAffected()
	chk.Recorded = n == 1
	var epochMs, unitNs, atMs int64
	var tb, wb, sb uint
	rec := LayoutRecord{Name: name}
	err = m.db.QueryRowContext(ctx,
		"SELECT epoch_ms, time_bits, worker_bits, sequence_bits, unit_ns, recorded_by, "+
			"TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', recorded_at) DIV 1000 FROM leaf_snowflake_layout WHERE name = ?",
		name).Scan(&epochMs, &tb, &wb, &sb, &unitNs, &rec.RecordedBy, &atMs)
	if errors.Is(err, sql.ErrNoRows) {
		// Deleted between the two statements: an operator is changing it.
		return chk, fmt.Errorf("leaf_snowflake_layout row '%s' vanished after it was recorded; retrying", name)
	}
	if err != nil {
		return chk, err
	}
	rec.Layout = Layout{TimeBits: tb, WorkerBits: wb, SequenceBits: sb, Unit: time.Duration(unitNs), Epoch: time.UnixMilli(epochMs).UTC()}
	rec.RecordedAt = time.UnixMilli(atMs)
	chk.Record = rec
	if !SameLayout(l, rec.Layout) {
		e := &LayoutMismatchError{Layout: l, Store: rec}
		if err := m.liveHolders(ctx, e); err != nil {
			return chk, err
		}
		return chk, e
	}
	if chk.Recorded {
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

// liveHolders fills e with the processes whose worker-id lease has not
// expired by the store's clock.
func (m *MySQLLeaser) liveHolders(ctx context.Context, e *LayoutMismatchError) error {
	ttlMs := m.ttl.Milliseconds()
	rows, err := m.db.QueryContext(ctx,
		"SELECT worker_id, owner, heartbeat FROM leaf_worker WHERE owner <> '' AND "+dbNowMs+" - heartbeat <= ? ORDER BY worker_id", ttlMs)
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
	switch l := g.layout; {
	case !chk.Recorded:
	case chk.PriorWorkers > 0 && chk.MaxPriorWorker > l.MaxWorker():
		g.log.Warn("recorded this proxy's snowflake layout for a store used before layouts were recorded, "+
			"but leaf_worker has worker ids beyond this layout's: proxies with more worker bits issued IDs here; "+
			"if any of them still runs, its IDs can collide with these: make all configs match",
			"layout", l.String(), "leaf_worker_rows", chk.PriorWorkers, "highest_worker_id", chk.MaxPriorWorker, "max_worker", l.MaxWorker())
	case chk.PriorWorkers > 0:
		g.log.Warn("recorded this proxy's snowflake layout for a store used before layouts were recorded: "+
			"assuming its leaf_worker rows were issued with this layout; proxies still configured otherwise will refuse to start",
			"layout", l.String(), "leaf_worker_rows", chk.PriorWorkers)
	default:
		g.log.Info("recorded the snowflake layout in the store", "layout", l.String())
	}
	return nil
}
