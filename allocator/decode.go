package allocator

import (
	"context"
	"fmt"
	"time"

	"github.com/leafproxy/leafproxy/allocator/segment"
	"github.com/leafproxy/leafproxy/allocator/snowflake"
	"github.com/leafproxy/leafproxy/internal/errstyle"
)

// What the engine asks of a tag beyond drawing IDs: how large a block of
// consecutive IDs it can give (NEXTVAL('tag', n)) and what an ID of it is
// made of (LEAFPROXY_DECODE). Both go through the tag's snowflake layout,
// found by snowflakeLayout: the one place a per-tag layout plugs in.

// snowflakeLayout is the layout of snowflake tag tag's IDs: the tag's own
// (sequences.tags, or recorded in the store for a tag made in SQL), else
// the configured global one.
func (s *Sequences) snowflakeLayout(tag string) snowflake.Layout {
	if l, ok := s.Layout(tag); ok {
		return l
	}
	return s.cfg.Snowflake.Layout
}

// BlockLimit is the largest block of consecutive IDs Block gives for tag,
// and why: for a snowflake tag one tick's sequence numbers (2^sequence_bits
// of its layout; a larger block spans ticks, and its IDs are not
// consecutive); 0 for a segment tag, whose blocks are consecutive at any
// size Block takes.
func (s *Sequences) BlockLimit(tag string) (limit int64, why string) {
	if s.snowTag(tag) == nil {
		return 0, ""
	}
	l := s.snowflakeLayout(tag)
	return l.MaxSequence() + 1, fmt.Sprintf("one tick of its layout %s holds 2^%d sequence numbers", l, l.SequenceBits)
}

// DecodeSnowflake takes an ID of snowflake tag tag apart under the tag's
// layout: when its tick began, the worker id that issued it and its
// sequence number within the tick. An ID the layout cannot have made
// (negative, or with bits above the layout's) is error 1210.
func (s *Sequences) DecodeSnowflake(tag string, id int64) (created time.Time, worker, seq int64, err error) {
	if s.snowTag(tag) == nil {
		return time.Time{}, 0, 0, errstyle.NewCoded(1235, "42000", fmt.Sprintf("leafproxy: sequence '%s' does not use the snowflake generator", tag))
	}
	l := s.snowflakeLayout(tag)
	bits := l.TimeBits + l.WorkerBits + l.SequenceBits
	if id < 0 || bits < 63 && id>>bits != 0 {
		return time.Time{}, 0, 0, errstyle.NewCoded(segment.ErrCodeWrongArguments, segment.SQLStateWrongArguments, fmt.Sprintf(
			"Incorrect arguments to LEAFPROXY_DECODE: %d is not an ID of snowflake sequence '%s': its layout %s makes IDs from 0 to %d",
			id, tag, l, int64(1)<<bits-1))
	}
	p := l.Decode(id)
	return p.Time.UTC(), p.Worker, p.Sequence, nil
}

// MaxID reads segment tag tag's leaf_alloc.max_id (see
// segment.Allocator.MaxID): IDs below it were handed out to some proxy.
func (s *Sequences) MaxID(ctx context.Context, tag string) (int64, error) {
	v, err := s.segments.MaxID(ctx, tag)
	if err != nil {
		return 0, s.nameError(tag, err)
	}
	return v, nil
}
