package segment

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
)

// Range is what one store fetch returns: IDs [Start, End) plus the table's
// configured step (the floor for dynamic step sizing).
type Range struct {
	Start, End int64
	TableStep  int64
}

// Store hands out segments. Every implementation must make concurrent
// fetches by any number of processes return disjoint ranges.
type Store interface {
	// Fetch atomically advances tag's max_id by step and returns
	// [max_id-step, max_id). step <= 0 means the row's own step (the first
	// fetch of a tag, before the allocator knows it). An unknown tag gives an
	// error satisfying errors.As(err, **UnknownTagError).
	Fetch(ctx context.Context, tag string, step int64) (Range, error)
	// Create inserts the tag with the given step if it is missing (INSERT
	// IGNORE: an existing row's max_id is history and is left alone).
	Create(ctx context.Context, tag string, step int64) error
}

// MySQLStore is the Store over Leaf's leaf_alloc table (DDL in
// allocator/schema). Safe for concurrent use.
type MySQLStore struct {
	db *sql.DB

	// Prepared once per *sql.DB and bound to each transaction's connection,
	// which saves a prepare and a close round trip per statement per fetch.
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

const (
	qAdvance      = "UPDATE leaf_alloc SET max_id = max_id + ? WHERE biz_tag = ?"
	qAdvanceTable = "UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = ?"
	qRead         = "SELECT max_id, step FROM leaf_alloc WHERE biz_tag = ?"
	qCreate       = "INSERT IGNORE INTO leaf_alloc (biz_tag, max_id, step, description) VALUES (?, 1, ?, 'created by leafproxy auto_create')"
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
// fetches by many proxies disjoint.
func (s *MySQLStore) Fetch(ctx context.Context, tag string, step int64) (r Range, err error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return Range{}, fmt.Errorf("begin leaf_alloc transaction: %w", err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	var res sql.Result
	if step > 0 {
		res, err = s.exec(ctx, tx, qAdvance, step, tag)
	} else {
		res, err = s.exec(ctx, tx, qAdvanceTable, tag)
	}
	if err != nil {
		return Range{}, fmt.Errorf("advance leaf_alloc.max_id: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 && step > 0 {
		// With step > 0 the row always changes, so no row means no tag.
		return Range{}, &UnknownTagError{Tag: tag}
	}
	var maxID, tableStep int64
	if err = s.queryRow(ctx, tx, qRead, tag).Scan(&maxID, &tableStep); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return Range{}, &UnknownTagError{Tag: tag}
		}
		return Range{}, fmt.Errorf("read leaf_alloc.max_id: %w", err)
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
	return Range{Start: maxID - used, End: maxID, TableStep: tableStep}, nil
}

// Create inserts tag with max_id 1 (Leaf's start: the first segment is
// [1, 1+step)) when it is missing.
func (s *MySQLStore) Create(ctx context.Context, tag string, step int64) error {
	if _, err := s.db.ExecContext(ctx, qCreate, tag, step); err != nil {
		return fmt.Errorf("create tag %q in leaf_alloc: %w", tag, err)
	}
	return nil
}
