package segment

import (
	"fmt"
	"math"
)

// Limit is the largest ID a tag's IDs are of use for: the widest key
// column filled from it (By names it, "shop.t.id int(11)"). Past it the
// allocator fetches no segment: an INT-keyed tag does not draw segments
// beyond 2^31-1.
type Limit struct {
	Max int64
	By  string
}

// PastEndError says a tag has handed out every ID up to its Limit: every
// key column filled from it is full. It is AUTO_INCREMENT's answer on a
// full column, 167 (SQLSTATE 22003), with the tag and the column.
//
// RunOut: the limit is the tag's MAXVALUE (leaf_alloc.max_value, By
// "MAXVALUE"), not a key column: the error is then MariaDB's for a
// sequence that ran out, 4084 (HY000), "Sequence 'tag' has run out".
type PastEndError struct {
	Tag    string
	Limit  Limit
	Next   int64 // the first ID past the limit this proxy would have handed out
	RunOut bool
}

func (e *PastEndError) Error() string {
	if e.RunOut {
		return fmt.Sprintf("Sequence '%s' has run out (leafproxy: its MAXVALUE is %d and no ID above it is handed out; "+
			"raise it with ALTER LEAFPROXY SEQUENCE %s MAXVALUE n, or move the rule to a new tag)", e.Tag, e.Limit.Max, e.Tag)
	}
	return fmt.Sprintf("leafproxy: sequence '%s' is at its end: every key column filled from it holds at most %d (the widest: %s) and its next ID would be %d; "+
		"the proxy fetches no segment beyond it; widen the key column (e.g. to BIGINT) or move the rule to a new tag", e.Tag, e.Limit.Max, e.Limit.By, e.Next)
}

// ErrCodeRunOut and SQLStateRunOut are MariaDB's ER_SEQUENCE_RUN_OUT.
const (
	ErrCodeRunOut  = 4084
	SQLStateRunOut = "HY000"
)

func (e *PastEndError) Code() uint16 {
	if e.RunOut {
		return ErrCodeRunOut
	}
	return 167
}

func (e *PastEndError) SQLState() string {
	if e.RunOut {
		return SQLStateRunOut
	}
	return "22003"
}

// SetLimits replaces every tag's Limit (the runway's reading of the key
// columns, at start, reload, DDL and every 10 minutes); a tag not in
// limits has none. A tag stopped at its end is served again when its
// limit rises (the column was widened).
func (a *Allocator) SetLimits(limits map[string]Limit) {
	m := make(map[string]Limit, len(limits))
	for tag, l := range limits {
		if l.Max > 0 && l.Max < math.MaxInt64 {
			m[tag] = l
		}
	}
	a.limits.Store(&m)
	for tag, t := range *a.tags.Load() {
		t.mu.Lock()
		if t.pastEnd != nil && !t.pastEnd.RunOut {
			if l, ok := m[tag]; !ok || t.pastEnd.Next <= l.Max {
				t.pastEnd = nil
				t.broadcast()
			}
		}
		t.mu.Unlock()
	}
}

// limitOf is tag's Limit, false when it has none.
func (a *Allocator) limitOf(tag string) (Limit, bool) {
	p := a.limits.Load()
	if p == nil {
		return Limit{}, false
	}
	l, ok := (*p)[tag]
	return l, ok
}

// pastLimit returns a PastEndError when a fetch starting at floor or above
// can give tag no ID within its limit: the smaller of its key columns'
// end and its MAXVALUE (as the last fetch read it; a RunOut error at or
// below the column's end). t.mu must be held.
func (a *Allocator) pastLimit(t *tagState, floor int64) *PastEndError {
	l, ok := a.limitOf(t.name)
	if t.maxValue > 0 && (!ok || t.maxValue <= l.Max) {
		if floor <= t.maxValue {
			return nil
		}
		return runOut(t.name, t.maxValue, floor)
	}
	if !ok || floor <= l.Max {
		return nil
	}
	return &PastEndError{Tag: t.name, Limit: l, Next: floor}
}

// PastEnd is tag's PastEndError while it is stopped at its end, else nil.
func (a *Allocator) PastEnd(tag string) error {
	t := (*a.tags.Load())[tag]
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pastEnd == nil {
		return nil
	}
	return t.pastEnd
}
