package service

import (
	"fmt"
	"math"

	"github.com/leafproxy/leafproxy/allocator"
	"github.com/leafproxy/leafproxy/allocator/runway"
)

// segmentLimits is the runway's reading of the key columns as the segment
// allocator's limits: per tag the widest key column filled from it, past
// which no segment is fetched (none for a BIGINT one).
func segmentLimits(cols map[string]runway.Column) map[string]allocator.KeyLimit {
	out := make(map[string]allocator.KeyLimit, len(cols))
	for tag, c := range cols {
		if c.Widest > 0 && c.Widest < math.MaxInt64 {
			out[tag] = allocator.KeyLimit{Max: c.Widest, By: c.WidestName}
		}
	}
	return out
}

// tagEnd says how near its end a segment tag is, for its state: "at end"
// when the runway finds no ID left, or this proxy is stopped at the
// widest key column; "near end" under 10% of the smallest column's range
// left; "" otherwise.
func (s *Service) tagEnd(tag string) (state, why string) {
	if err := s.Sequences.Segments().PastEnd(tag); err != nil {
		return "at end", err.Error()
	}
	e, ok := s.Runway.Get(tag)
	if !ok {
		return "", ""
	}
	switch {
	case e.Level == runway.LevelExhausted && e.LimitedBy == "MAXVALUE":
		return "at end", fmt.Sprintf("tag '%s' has no ID left below its MAXVALUE %d: NEXTVAL and inserts that need a key from it fail with 4084; "+
			"raise it with ALTER LEAFPROXY SEQUENCE %s MAXVALUE n", tag, e.Limit, tag)
	case e.Level == runway.LevelExhausted:
		return "at end", fmt.Sprintf("tag '%s' has no ID left that %s holds: inserts that need a key from it fail with 167", tag, e.LimitedBy)
	case e.Level == runway.LevelCritical:
		return "near end", fmt.Sprintf("tag '%s' has %d IDs left (under 1%%) before the end of %s", tag, e.IDsLeft, e.LimitedBy)
	case e.Level == runway.LevelLow:
		return "near end", fmt.Sprintf("tag '%s' has %d IDs left (under 10%%) before the end of %s", tag, e.IDsLeft, e.LimitedBy)
	}
	return "", ""
}
