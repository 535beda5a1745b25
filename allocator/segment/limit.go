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
	// Fit is how many IDs below the limit were left when a run of
	// consecutive IDs (NextN) did not fit: a statement's rows up to Fit
	// would have had keys, the one after it is the first past the end
	// (AUTO_INCREMENT's 167 names that row). Nothing was taken. Counted
	// says Fit was counted (NextN's errors; not a block's).
	Fit     int64
	Counted bool
}

// Fits is Fit, -1 when it was not counted, for a caller that sees the
// error only as an interface (the engine: the row its 167 names).
func (e *PastEndError) Fits() int64 {
	if !e.Counted {
		return -1
	}
	return e.Fit
}

func (e *PastEndError) Error() string {
	if e.Limit.By == TopBy && !e.RunOut {
		return fmt.Sprintf("leafproxy: sequence '%s' is at its end: leaf_alloc.max_id, a signed BIGINT as in Leaf's schema, has reached 2^63-1, "+
			"so its last ID was %d; no ID past it is handed out, to a BIGINT UNSIGNED key column neither; move the rule to a new tag", e.Tag, e.Limit.Max)
	}
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
		if t.pastEnd != nil && !t.pastEnd.RunOut && t.pastEnd.Limit.By != TopBy {
			if l, ok := m[tag]; !ok || t.pastEnd.Next <= l.Max {
				t.pastEnd = nil
				t.broadcast()
			}
		}
		if l, ok := m[tag]; ok {
			t.trimTo(l.Max + 1)
		}
		t.mu.Unlock()
	}
}

// cutAtLimit cuts r, a fetched segment starting within t's Limit, at the
// Limit: NEXTVAL and the ID API stop at the widest key column's end as
// inserts do (the IDs past it, up to the store's max_id, are never handed
// out; the column widened, the next fetch starts above them). t.mu must
// be held.
func (a *Allocator) cutAtLimit(t *tagState, r Range) Range {
	if l, ok := a.limitOf(t.name); ok && r.End > l.Max+1 {
		r.End = max(l.Max+1, r.Start)
	}
	return r
}

// trimTo makes end the end of t's buffered segments where they reach past
// it (a Limit set or lowered after they were fetched): the IDs at or
// above end are not handed out. The current segment is replaced, not
// changed (it is read without the lock): its cursor is moved to its end
// in one swap, so no ID of it is taken after the swap, and the new one
// goes on from where it was. t.mu must be held.
func (t *tagState) trimTo(end int64) {
	if nx := t.next; nx != nil && nx.end > end {
		if nx.start >= end {
			t.next = nil
		} else {
			s := newSegment(nx.start, end)
			s.next.Store(nx.next.Load())
			t.next = s
		}
	}
	cur := t.current.Load()
	if cur.end <= end {
		return
	}
	v := cur.next.Swap(cur.end)
	if cur.start >= end {
		t.current.Store(newSegment(0, 0))
		return
	}
	s := newSegment(cur.start, end)
	s.next.Store(v) // past end, or wrapped: used up (segment.holds)
	s.asked.Store(cur.asked.Load())
	t.current.Store(s)
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
	if floor == math.MaxInt64 && (t.maxValue <= 0 || t.maxValue >= topLimit.Max) {
		return atTop(t.name) // top.go
	}
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
