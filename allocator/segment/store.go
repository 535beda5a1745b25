package segment

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/allocator/schema"
	"github.com/leafproxy/leafproxy/internal/conflict"
)

// Range is what one store fetch returns: IDs [Start, End) plus the table's
// configured step (the floor for dynamic step sizing).
type Range struct {
	Start, End int64
	TableStep  int64
	// MaxValue is the tag's MAXVALUE (leaf_alloc.max_value) read in the
	// fetch's transaction, 0 for none: IDs above it are not handed out
	// (the allocator cuts the segment there).
	MaxValue int64
}

// Store hands out segments. Every implementation must make concurrent
// fetches by any number of processes return disjoint ranges.
type Store interface {
	// Fetch atomically advances tag's max_id by step and returns
	// [max_id-step, max_id). step <= 0 means the row's own step (the first
	// fetch of a tag, before the allocator knows it). An unknown tag gives an
	// error satisfying errors.As(err, **UnknownTagError).
	//
	// floor is the lowest start the caller can accept (the end of every
	// range it reserved or read back). A max_id below floor means the
	// store moved back: Fetch then changes nothing and returns a
	// *MovedBackError. It must not take the range anyway: a refused fetch
	// that advanced max_id would lift the stale value into ranges already
	// handed out, where an allocator with a lower mark would accept them.
	// floor <= 0 accepts any max_id.
	Fetch(ctx context.Context, tag string, step, floor int64) (Range, error)
	// Create inserts the tag with the given step if it is missing (INSERT
	// IGNORE: an existing row's max_id is history and is left alone).
	Create(ctx context.Context, tag string, step int64) error
	// Repair moves tag's max_id up to floor if it is below, in one
	// conditional statement (never down: concurrent repairs by several
	// processes commute). The allocator calls it when the store moved back
	// below IDs it already issued. (Raiser.Raise, for SETVAL, differs: it
	// refuses a floor below max_id instead of ignoring it.)
	Repair(ctx context.Context, tag string, floor int64) error
	// Peek reads the current max_id of each tag (missing tags are left
	// out of the map). The allocator polls it to notice a store that moved
	// back even when it is not fetching.
	Peek(ctx context.Context, tags []string) (map[string]int64, error)
}

// Raiser is a Store that can raise a tag's floor (SETVAL): after Raise
// returns nil, every segment the store hands out starts at floor or
// above. It never lowers max_id: a floor below IDs that may already have
// been handed out is a *BelowIssuedError, an unknown tag an
// *UnknownTagError.
type Raiser interface {
	Raise(ctx context.Context, tag string, floor int64) error
}

// MySQLStore is the Store over Leaf's leaf_alloc table (DDL in
// allocator/schema). Safe for concurrent use.
type MySQLStore struct {
	db *sql.DB

	// CreateFloor, if set, is asked for the largest ID already in use for
	// a tag that Create is about to insert (e.g. the largest key of the
	// tables the tag fills), so the tag starts above it instead of at 1.
	CreateFloor func(ctx context.Context, tag string) (int64, error)

	// Prepared once per *sql.DB and bound to each transaction's connection,
	// which saves a prepare and a close round trip per statement per fetch.
	mu    sync.Mutex
	stmts map[string]*sql.Stmt

	// noMaxValue: leaf_alloc has no max_value column (start-up could not
	// add it: an account without ALTER): fetches use Leaf's statements.
	noMaxValue atomic.Bool
}

// missingMaxValue says err is MySQL's 1054 for leaf_alloc.max_value.
func missingMaxValue(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1054 && strings.Contains(me.Message, "max_value")
}

const (
	// A tag whose max_id is past its MAXVALUE has no ID left: the
	// advance does not apply, and the read says why (PastEndError).
	qAdvance      = "UPDATE leaf_alloc SET max_id = LAST_INSERT_ID(max_id + ?) WHERE biz_tag = ? AND max_id >= ? AND (max_value IS NULL OR max_id <= max_value)"
	qAdvanceTable = "UPDATE leaf_alloc SET max_id = LAST_INSERT_ID(max_id + step) WHERE biz_tag = ? AND max_id >= ? AND (max_value IS NULL OR max_id <= max_value)"
	qRead         = "SELECT max_id, step, max_value FROM leaf_alloc WHERE biz_tag = ?"
	// Without max_value (a leaf_alloc its account could not migrate):
	// Leaf's own statements, no MAXVALUE.
	qAdvanceOld      = "UPDATE leaf_alloc SET max_id = LAST_INSERT_ID(max_id + ?) WHERE biz_tag = ? AND max_id >= ?"
	qAdvanceTableOld = "UPDATE leaf_alloc SET max_id = LAST_INSERT_ID(max_id + step) WHERE biz_tag = ? AND max_id >= ?"
	qReadOld         = "SELECT max_id, step, NULL FROM leaf_alloc WHERE biz_tag = ?"
	qRepair          = "UPDATE leaf_alloc SET max_id = GREATEST(max_id, ?) WHERE biz_tag = ?"
)

// NewMySQLStore returns a Store over leaf_alloc in db's default database.
func NewMySQLStore(db *sql.DB) *MySQLStore {
	return &MySQLStore{db: db, stmts: make(map[string]*sql.Stmt)}
}

// stmt returns q bound to tx, prepared on the pool once; if preparing fails
// (database down) the plain query text is used and preparing is retried
// next time.
func (s *MySQLStore) stmt(ctx context.Context, tx *sql.Tx, q string) *sql.Stmt {
	s.mu.Lock()
	st := s.stmts[q]
	s.mu.Unlock()
	if st == nil {
		var err error
		st, err = s.db.PrepareContext(ctx, q)
		if err != nil {
			return nil
		}
		s.mu.Lock()
		if old := s.stmts[q]; old != nil {
			st.Close()
			st = old
		} else {
			s.stmts[q] = st
		}
		s.mu.Unlock()
	}
	return tx.StmtContext(ctx, st)
}

func (s *MySQLStore) exec(ctx context.Context, tx *sql.Tx, q string, args ...any) (sql.Result, error) {
	if st := s.stmt(ctx, tx, q); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, q, args...)
}

func (s *MySQLStore) queryRow(ctx context.Context, tx *sql.Tx, q string, args ...any) *sql.Row {
	if st := s.stmt(ctx, tx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, q, args...)
}

// Fetch runs Leaf's transaction: UPDATE max_id = max_id + step, then read
// max_id and step back, READ COMMITTED so that no gap locks are taken. The
// row lock held from the UPDATE to the commit is what makes concurrent
// fetches by many proxies disjoint. The UPDATE applies only while max_id
// is at or above floor, in the same statement, so a store that moved back
// hands nothing out to a caller that would refuse it.
func (s *MySQLStore) Fetch(ctx context.Context, tag string, step, floor int64) (Range, error) {
	old := s.noMaxValue.Load()
	r, err := s.fetch(ctx, tag, step, floor, old)
	if err != nil && !old && missingMaxValue(err) {
		s.noMaxValue.Store(true)
		return s.fetch(ctx, tag, step, floor, true)
	}
	return r, err
}

// fetch is Fetch with MAXVALUE (old: without, on a leaf_alloc without
// max_value).
func (s *MySQLStore) fetch(ctx context.Context, tag string, step, floor int64, old bool) (r Range, err error) {
	qAdv, qAdvTable, qRd := qAdvance, qAdvanceTable, qRead
	if old {
		qAdv, qAdvTable, qRd = qAdvanceOld, qAdvanceTableOld, qReadOld
	}
	if floor <= 0 {
		floor = math.MinInt64
	}
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return Range{}, fmt.Errorf("begin leaf_alloc transaction: %w", err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	var maxID, tableStep int64
	var maxValue sql.NullInt64
	// A repair by another proxy may raise max_id past floor between an
	// UPDATE that did not apply and the read that says why: the UPDATE is
	// then tried again (a few times: repairs are rare).
	for attempt := 1; ; attempt++ {
		var res sql.Result
		var advanced, wrote int64
		if step > 0 {
			res, err = s.exec(ctx, tx, qAdv, step, tag, floor)
		} else {
			res, err = s.exec(ctx, tx, qAdvTable, tag, floor)
		}
		if err != nil {
			return Range{}, fmt.Errorf("advance leaf_alloc.max_id: %w", err)
		}
		// Changed rows (or matched rows with clientFoundRows): 1 when the
		// row exists, is at or above floor and its step is not 0.
		if advanced, err = res.RowsAffected(); err != nil {
			return Range{}, fmt.Errorf("advance leaf_alloc.max_id: %w", err)
		}
		// The max_id this transaction wrote (LAST_INSERT_ID(expr) puts it
		// in the OK packet), which the read below must see.
		if wrote, err = res.LastInsertId(); err != nil {
			return Range{}, fmt.Errorf("advance leaf_alloc.max_id: %w", err)
		}
		if err = s.queryRow(ctx, tx, qRd, tag).Scan(&maxID, &tableStep, &maxValue); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return Range{}, &UnknownTagError{Tag: tag}
			}
			return Range{}, fmt.Errorf("read leaf_alloc.max_id: %w", err)
		}
		if advanced > 0 && maxID != wrote {
			// The row does not hold this transaction's write: the
			// transaction was rolled back under it, and the read ran
			// outside it. A Galera node does that to a transaction that
			// another node's write set overrides, between two of its
			// statements; the range read back would be another fetch's
			// (TestGaleraMultiWriterBlocks caught two proxies handing
			// out overlapping blocks). A write conflict: the allocator
			// fetches again.
			return Range{}, &mysql.MySQLError{Number: conflict.Deadlock, SQLState: [5]byte{'4', '0', '0', '0', '1'},
				Message: fmt.Sprintf("leafproxy: leaf_alloc.max_id of %q reads %d after this fetch set it to %d: the fetch's transaction was rolled back under it", tag, maxID, wrote)}
		}
		if advanced > 0 || (step <= 0 && tableStep <= 0) {
			break // advanced (or a step of 0, refused below)
		}
		if maxID < floor {
			return Range{}, &MovedBackError{Tag: tag, MaxID: maxID, Floor: floor}
		}
		if maxValue.Valid && maxID > maxValue.Int64 {
			return Range{}, runOut(tag, maxValue.Int64, maxID)
		}
		if attempt == 3 {
			return Range{}, fmt.Errorf("advance leaf_alloc.max_id of %q: the row kept changing under the fetch", tag)
		}
	}
	if err = tx.Commit(); err != nil {
		return Range{}, fmt.Errorf("commit leaf_alloc transaction: %w", err)
	}
	used := step
	if used <= 0 {
		used = tableStep
	}
	if used <= 0 {
		return Range{}, fmt.Errorf("leaf_alloc row %q has step %d: must be positive", tag, tableStep)
	}
	r = Range{Start: maxID - used, End: maxID, TableStep: tableStep}
	if maxValue.Valid {
		r.MaxValue = max(maxValue.Int64, 1)
	}
	return r, nil
}

// Create inserts tag with max_id 1 (Leaf's start: the first segment is
// [1, 1+step)), or just above CreateFloor's answer, when it is missing
// (auto_create; see CreateDescribed).
func (s *MySQLStore) Create(ctx context.Context, tag string, step int64) error {
	return s.CreateDescribed(ctx, tag, step, "created by leafproxy auto_create")
}

// Raise moves tag's max_id up to floor (the next segment starts there) in
// one conditional UPDATE, under the row lock that orders it against every
// proxy's fetches. A max_id above floor means IDs up to max_id-1 may have
// been handed out: that is a *BelowIssuedError, and nothing changes.
func (s *MySQLStore) Raise(ctx context.Context, tag string, floor int64) error {
	before, _, found, err := schema.RaiseTag(ctx, s.db, tag, floor)
	switch {
	case err != nil:
		return err
	case !found:
		return &UnknownTagError{Tag: tag}
	case before > floor:
		return &BelowIssuedError{Tag: tag, Floor: floor, MaxID: before}
	}
	return nil
}

// Repair runs UPDATE leaf_alloc SET max_id = GREATEST(max_id, floor): one
// statement, so it cannot lower a max_id that others moved up meanwhile.
func (s *MySQLStore) Repair(ctx context.Context, tag string, floor int64) error {
	if _, err := s.db.ExecContext(ctx, qRepair, floor, tag); err != nil {
		return fmt.Errorf("raise leaf_alloc.max_id of %q to %d: %w", tag, floor, err)
	}
	return nil
}

// Peek reads max_id of tags in one query.
func (s *MySQLStore) Peek(ctx context.Context, tags []string) (map[string]int64, error) {
	if len(tags) == 0 {
		return map[string]int64{}, nil
	}
	q := "SELECT biz_tag, max_id FROM leaf_alloc WHERE biz_tag IN (?" + strings.Repeat(",?", len(tags)-1) + ")"
	args := make([]any, len(tags))
	for i, t := range tags {
		args[i] = t
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read leaf_alloc.max_id: %w", err)
	}
	defer rows.Close()
	out := make(map[string]int64, len(tags))
	for rows.Next() {
		var tag string
		var v int64
		if err := rows.Scan(&tag, &v); err != nil {
			return nil, fmt.Errorf("read leaf_alloc.max_id: %w", err)
		}
		out[tag] = v
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read leaf_alloc.max_id: %w", err)
	}
	return out, nil
}
