package segment

import (
	"slices"
	"time"
)

// TagStats is a snapshot of one tag's buffers.
type TagStats struct {
	Tag string
	// Current is the segment being served; NextID the next ID it would give
	// (>= Current.End when used up).
	Current   Range
	NextID    int64
	Remaining int64
	// NextReady says the following segment is buffered (Next holds it).
	NextReady bool
	Next      Range
	Loading   bool
	// Step is the size of the last fetch, TableStep the row's step.
	Step      int64
	TableStep int64
	// HighWater is the end of the highest segment accepted: the floor for
	// any future segment.
	HighWater int64
	// Seen is the highest max_id read back from the store (once per
	// WatchEvery): with HighWater, what this allocator knows was handed
	// out, and so how far a repair of a store that moved back reaches.
	Seen int64
	// Blocks counts ranges fetched for Block alone; BlockEnd is the end of
	// the highest.
	Blocks      uint64
	BlockEnd    int64
	Fetches     uint64
	FetchErrors uint64
	// Conflicts counts fetches (segments and blocks) that met a store
	// write conflict (a deadlock, a Galera certification failure or a
	// node not ready) and were tried again: not in FetchErrors.
	Conflicts uint64
	// Refused counts segments rejected by the high-water mark.
	Refused uint64
	// Repairs counts the times this allocator raised the store's max_id
	// past its high-water mark after the store moved back.
	Repairs   uint64
	LastErr   error
	LastErrAt time.Time
}

// Tags lists, sorted, the tags asked for so far (including ones found
// missing that have not been pruned yet); Stats reports on each.
func (a *Allocator) Tags() []string {
	m := *a.tags.Load()
	tags := make([]string, 0, len(m))
	for k := range m {
		tags = append(tags, k)
	}
	slices.Sort(tags)
	return tags
}

// Stats reports tag's state; false if the tag was never asked for.
func (a *Allocator) Stats(tag string) (TagStats, bool) {
	t := (*a.tags.Load())[tag]
	if t == nil {
		return TagStats{}, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	cur := t.current.Load()
	s := TagStats{
		Tag:         tag,
		Current:     Range{Start: cur.start, End: cur.end, TableStep: t.tableStep},
		NextID:      cur.next.Load(),
		Loading:     t.loading,
		Step:        t.step,
		TableStep:   t.tableStep,
		HighWater:   t.highWater,
		Seen:        t.seen,
		Blocks:      t.blocks,
		BlockEnd:    t.blockEnd,
		Fetches:     t.fetches,
		FetchErrors: t.fetchErrors,
		Conflicts:   t.conflicts,
		Refused:     t.refused,
		Repairs:     t.repairs,
		LastErr:     t.lastErr,
		LastErrAt:   t.lastErrAt,
	}
	if s.NextID < cur.start {
		s.NextID = cur.end // wrapped past the top of int64 once used up (segment.exhausted)
	}
	s.Remaining = max(0, cur.end-s.NextID)
	if t.next != nil {
		s.NextReady = true
		s.Next = Range{Start: t.next.start, End: t.next.end, TableStep: t.tableStep}
	}
	return s, true
}
