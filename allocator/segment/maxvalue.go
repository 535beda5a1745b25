package segment

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// A tag's MAXVALUE (CREATE LEAFPROXY SEQUENCE ... MAXVALUE m) lives in the
// store (leaf_alloc.max_value), so every proxy sharing it agrees: a fetch
// reads it in its own transaction and takes nothing once max_id is past it
// (MySQLStore.Fetch answers a RunOut PastEndError); the allocator cuts the
// segment it accepts at MAXVALUE and stops there as at the end of a key
// column (limit.go), answering MariaDB's 4084 instead of 167. A tag that
// ran out asks the store again after UnknownTTL, so a MAXVALUE raised by
// another proxy is seen.

// runOut is the PastEndError of tag at its MAXVALUE m; next is the first
// ID past it this proxy would have handed out.
func runOut(tag string, m, next int64) *PastEndError {
	return &PastEndError{Tag: tag, Limit: Limit{Max: m, By: "MAXVALUE"}, Next: next, RunOut: true}
}

// ErrCodeBadOptions and SQLStateBadOptions are MariaDB's
// ER_SEQUENCE_INVALID_DATA, for a MAXVALUE below the first ID.
const (
	ErrCodeBadOptions  = 4085
	SQLStateBadOptions = "HY000"
)

// OptionsError is MariaDB's 4085 "Sequence 'tag' has out of range value
// for options" with the reason.
type OptionsError struct {
	Tag, Why string
}

func (e *OptionsError) Error() string {
	return fmt.Sprintf("Sequence '%s' has out of range value for options (leafproxy: %s)", e.Tag, e.Why)
}
func (e *OptionsError) Code() uint16     { return ErrCodeBadOptions }
func (e *OptionsError) SQLState() string { return SQLStateBadOptions }

// Bounder is a Store that keeps a MAXVALUE per tag (MySQLStore).
type Bounder interface {
	// CreateBounded is Starter's CreateStarting with a MAXVALUE (0: none).
	CreateBounded(ctx context.Context, tag string, step, start, maxValue int64, description string) error
	// SetMaxValue sets tag's MAXVALUE (0: none). A MAXVALUE below IDs
	// already handed to some proxy is an *OptionsError, an unknown tag an
	// *UnknownTagError.
	SetMaxValue(ctx context.Context, tag string, m int64) error
}

// CreateBounded creates tag (CreateStarting) with MAXVALUE m (0: none).
func (a *Allocator) CreateBounded(ctx context.Context, tag string, step, start, m int64, description string) error {
	if m <= 0 {
		return a.CreateStarting(ctx, tag, step, start, description)
	}
	if step <= 0 {
		step = a.opts.DefaultStep
	}
	if b, ok := a.store.(Bounder); ok {
		return b.CreateBounded(ctx, tag, step, start, m, description)
	}
	return fmt.Errorf("create tag %q with MAXVALUE %d: this store cannot", tag, m)
}

// SetMaxValue sets tag's MAXVALUE in the store (0: none) and here at once:
// a tag that ran out here is served again when m is above what it would
// hand out next. Other proxies see it at their next fetch (or, when they
// ran out, within UnknownTTL).
func (a *Allocator) SetMaxValue(ctx context.Context, tag string, m int64) error {
	b, ok := a.store.(Bounder)
	if !ok {
		return fmt.Errorf("set the MAXVALUE of %q: this store cannot", tag)
	}
	if err := b.SetMaxValue(ctx, tag, m); err != nil {
		return err
	}
	t := (*a.tags.Load())[tag]
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.maxValue = m
	if pe := t.pastEnd; pe != nil && pe.RunOut && (m <= 0 || pe.Next <= m) {
		t.pastEnd = nil
		t.broadcast()
	}
	return nil
}

// retryRunOut lets a tag that ran out ask the store again once
// UnknownTTL has passed (its MAXVALUE may have been raised), reporting
// whether it did. t.mu must be held.
func (a *Allocator) retryRunOut(t *tagState) bool {
	if t.pastEnd == nil || !t.pastEnd.RunOut || a.opts.Clock().Before(t.runOutUntil) {
		return false
	}
	t.pastEnd = nil
	t.maxValue = 0 // unknown until the store says
	return true
}

// cutAtMax records r's MAXVALUE for t and cuts r there. t.mu must be held.
func (t *tagState) cutAtMax(r Range) Range {
	t.maxValue = r.MaxValue
	if r.MaxValue > 0 && r.End > r.MaxValue+1 {
		r.End = max(r.MaxValue+1, r.Start)
	}
	return r
}

const (
	qCreateBounded = "INSERT IGNORE INTO leaf_alloc (biz_tag, max_id, step, description, max_value) SELECT ?, ?, ?, ?, ? FROM DUAL " +
		"WHERE NOT EXISTS (SELECT 1 FROM leaf_snowflake_layout WHERE name = CONCAT('tag:', ?))"
	qSetMaxValue = "UPDATE leaf_alloc SET max_value = ? WHERE biz_tag = ? AND (? IS NULL OR max_id - 1 <= ?)"
)

// CreateBounded is CreateStarting with MAXVALUE m (> 0): a first ID above
// m (START WITH, or the keys of the tag's tables) is an *OptionsError and
// nothing is created.
func (s *MySQLStore) CreateBounded(ctx context.Context, tag string, step, start, m int64, description string) error {
	first, err := s.first(ctx, tag, start)
	if err != nil {
		return err
	}
	if first > m {
		return &OptionsError{Tag: tag, Why: fmt.Sprintf("its first ID would be %d, above its MAXVALUE %d", first, m)}
	}
	if _, err := s.db.ExecContext(ctx, qCreateBounded, tag, first, step, description, m, tag); err != nil {
		return fmt.Errorf("create tag %q in leaf_alloc: %w", tag, err)
	}
	return nil
}

// SetMaxValue sets leaf_alloc.max_value (m <= 0: NULL) in one conditional
// UPDATE: not below max_id-1, the last ID of the segments already handed
// to proxies, which hold them without their MAXVALUE.
func (s *MySQLStore) SetMaxValue(ctx context.Context, tag string, m int64) error {
	v := sql.NullInt64{Int64: m, Valid: m > 0}
	res, err := s.db.ExecContext(ctx, qSetMaxValue, v, tag, v, v)
	if err != nil {
		return fmt.Errorf("set the MAXVALUE of %q in leaf_alloc: %w", tag, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	// Nothing changed: no such tag, a MAXVALUE too low, or the same one.
	var maxID int64
	var cur sql.NullInt64
	err = s.db.QueryRowContext(ctx, "SELECT max_id, max_value FROM leaf_alloc WHERE biz_tag = ?", tag).Scan(&maxID, &cur)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return &UnknownTagError{Tag: tag}
	case err != nil:
		return fmt.Errorf("read %q in leaf_alloc: %w", tag, err)
	case v.Valid && maxID-1 > m && cur != v:
		return &OptionsError{Tag: tag, Why: fmt.Sprintf(
			"IDs up to %d were handed to proxies already (leaf_alloc.max_id %d): MAXVALUE must be at least that", maxID-1, maxID)}
	}
	return nil
}
