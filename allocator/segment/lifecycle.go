package segment

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/go-sql-driver/mysql"
)

// Describer is a Store that records who created a tag and how in the
// tag's row (leaf_alloc.description).
type Describer interface {
	CreateDescribed(ctx context.Context, tag string, step int64, description string) error
}

// Starter is a Store that can create a tag whose first ID is given
// (MySQLStore).
type Starter interface {
	CreateStarting(ctx context.Context, tag string, step, start int64, description string) error
}

// CreateStarting is CreateDescribed with the tag's first ID (at least; see
// MySQLStore.CreateStarting); a store that cannot is an error.
func (a *Allocator) CreateStarting(ctx context.Context, tag string, step, start int64, description string) error {
	if step <= 0 {
		step = a.opts.DefaultStep
	}
	if d, ok := a.store.(Starter); ok {
		return d.CreateStarting(ctx, tag, step, start, description)
	}
	return fmt.Errorf("create tag %q starting at %d: this store cannot", tag, start)
}

// CreateDescribed is Create with the row's description (when the store
// keeps one), e.g. "created by app@10.0.0.1 with CREATE LEAFPROXY SEQUENCE
// at ...".
func (a *Allocator) CreateDescribed(ctx context.Context, tag string, step int64, description string) error {
	if step <= 0 {
		step = a.opts.DefaultStep
	}
	if d, ok := a.store.(Describer); ok {
		return d.CreateDescribed(ctx, tag, step, description)
	}
	return a.store.Create(ctx, tag, step)
}

// SetTableStep tells the allocator that tag's row now has step (ALTER
// LEAFPROXY SEQUENCE ... STEP): its next fetch is sized from it (and may
// grow from there as the dynamic step does) instead of from the last
// segment's size. Buffered segments are kept.
func (a *Allocator) SetTableStep(tag string, step int64) {
	t := (*a.tags.Load())[tag]
	if t == nil || step <= 0 {
		return
	}
	t.mu.Lock()
	t.tableStep = step
	if t.step > 0 {
		t.step = step
	}
	t.mu.Unlock()
}

// Forget drops everything this allocator holds for tag (DROP LEAFPROXY
// SEQUENCE): its buffered IDs are not handed out, and a later request
// looks the tag up in the store again as if it were new.
func (a *Allocator) Forget(tag string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	old := *a.tags.Load()
	t := old[tag]
	if t == nil {
		return
	}
	m := make(map[string]*tagState, len(old))
	for k, v := range old {
		if k != tag {
			m[k] = v
		}
	}
	a.tags.Store(&m)
	t.mu.Lock()
	cur := t.current.Load()
	cur.next.Store(cur.end)
	t.next = nil
	t.unknown = &UnknownTagError{Tag: t.name}
	t.broadcast()
	t.mu.Unlock()
}

const (
	qCreateDescribed = "INSERT IGNORE INTO leaf_alloc (biz_tag, max_id, step, description) SELECT ?, ?, ?, ? FROM DUAL " +
		"WHERE NOT EXISTS (SELECT 1 FROM leaf_snowflake_layout WHERE name = CONCAT('tag:', ?))"
	qCreatePlain = "INSERT IGNORE INTO leaf_alloc (biz_tag, max_id, step, description) VALUES (?, ?, ?, ?)"
)

// CreateDescribed inserts tag with max_id 1, or just above CreateFloor's
// answer, when it is missing, and when it is not a snowflake tag (a row
// "tag:<tag>" in leaf_snowflake_layout, made by CREATE LEAFPROXY SEQUENCE
// ... SNOWFLAKE: auto_create must not turn it into a segment tag). A store
// without leaf_snowflake_layout (Leaf's own tables) has no snowflake tags.
func (s *MySQLStore) CreateDescribed(ctx context.Context, tag string, step int64, description string) error {
	return s.CreateStarting(ctx, tag, step, 1, description)
}

// CreateStarting is CreateDescribed whose first ID is start (CREATE
// LEAFPROXY SEQUENCE ... START WITH), or just above CreateFloor's answer
// when that is higher: a tag never starts below the keys of the tables
// its rules fill.
func (s *MySQLStore) CreateStarting(ctx context.Context, tag string, step, start int64, description string) error {
	first, err := s.first(ctx, tag, start)
	if err != nil {
		return err
	}
	_, err = s.db.ExecContext(ctx, qCreateDescribed, tag, first, step, description, tag)
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == 1146 { // no leaf_snowflake_layout
		_, err = s.db.ExecContext(ctx, qCreatePlain, tag, first, step, description)
	}
	if err != nil {
		return fmt.Errorf("create tag %q in leaf_alloc: %w", tag, err)
	}
	return nil
}

// first is the first ID of a tag created starting at start: start, or
// just above CreateFloor's answer when that is higher.
func (s *MySQLStore) first(ctx context.Context, tag string, start int64) (int64, error) {
	first := max(start, 1)
	if s.CreateFloor != nil {
		floor, err := s.CreateFloor(ctx, tag)
		if err != nil {
			return 0, fmt.Errorf("create tag %q in leaf_alloc: %w", tag, err)
		}
		first = max(first, floor+1)
	}
	return first, nil
}

// SetStep sets tag's row's step (the floor of the dynamic step, and what
// Leaf's other clients fetch). found is false when the tag has no row.
func (s *MySQLStore) SetStep(ctx context.Context, tag string, step int64) (found bool, err error) {
	res, err := s.db.ExecContext(ctx, "UPDATE leaf_alloc SET step = ? WHERE biz_tag = ?", step, tag)
	if err != nil {
		return false, fmt.Errorf("set the step of %q in leaf_alloc: %w", tag, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return true, nil
	}
	// Zero rows changed: no such tag, or the step was already that.
	var one int
	err = s.db.QueryRowContext(ctx, "SELECT 1 FROM leaf_alloc WHERE biz_tag = ?", tag).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %q in leaf_alloc: %w", tag, err)
	}
	return true, nil
}

// Delete deletes tag's row; found is false when there was none.
func (s *MySQLStore) Delete(ctx context.Context, tag string) (found bool, err error) {
	res, err := s.db.ExecContext(ctx, "DELETE FROM leaf_alloc WHERE biz_tag = ?", tag)
	if err != nil {
		return false, fmt.Errorf("delete %q from leaf_alloc: %w", tag, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}
