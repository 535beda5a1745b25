package allocator

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/leafproxy/leafproxy/allocator/schema"
	"github.com/leafproxy/leafproxy/allocator/segment"
	"github.com/leafproxy/leafproxy/internal/errstyle"
	"github.com/leafproxy/leafproxy/internal/nearname"
)

// SetVal is SETVAL(tag, n[, used]) for a segment tag: afterwards the
// next ID handed out for tag is above n (used, MariaDB's default) or at
// least n (!used), on every proxy sharing the store once it has used up
// the segments it holds, on this one at once. It only raises: n below
// IDs that may have been handed out is an error naming the current value.
func (s *Sequences) SetVal(ctx context.Context, tag string, n int64, used bool) error {
	if err := schema.CheckTag(tag); err != nil {
		return err
	}
	if s.snowTag(tag) != nil {
		return errstyle.NewCoded(1235, "42000", fmt.Sprintf(
			"leafproxy: SETVAL('%s', ...) is not supported: the tag uses the snowflake generator, whose IDs come from the clock, not a counter", tag))
	}
	floor := n
	if used {
		if n == math.MaxInt64 {
			return errstyle.NewCoded(segment.ErrCodeWrongArguments, segment.SQLStateWrongArguments, fmt.Sprintf(
				"Incorrect arguments to SETVAL: sequence '%s' cannot issue IDs above %d", tag, n))
		}
		floor = n + 1
	}
	return s.segments.Raise(ctx, tag, max(floor, 1))
}

// UnavailableError is a snowflake tag that cannot issue: no worker id yet
// (Pending: the store could not be asked, or refused; retried in the
// background), the store's layout differs from this proxy's (found after
// start; not retried), or the generator refused (fenced, lease lost,
// clock). It names the tag and the cause, as MySQL error 1105 / HY000.
type UnavailableError struct {
	Tag     string
	Pending bool
	Since   time.Time
	Err     error
}

func (e *UnavailableError) Error() string {
	if e.Pending {
		return fmt.Sprintf("leafproxy: snowflake sequence '%s' is fenced: this proxy holds no snowflake worker id yet (retrying in the background since %s): %v",
			e.Tag, e.Since.UTC().Format("15:04:05"), e.Err)
	}
	return fmt.Sprintf("leafproxy: snowflake sequence '%s': %v", e.Tag, e.Err)
}

func (e *UnavailableError) Unwrap() error    { return e.Err }
func (e *UnavailableError) Code() uint16     { return 1105 }
func (e *UnavailableError) SQLState() string { return "HY000" }

// UnknownTagError is MariaDB's 4091 Unknown SEQUENCE for a name one typo
// away from a tag this proxy knows, with that tag: "Unknown SEQUENCE:
// 'ordr' (did you mean 'order'?)". It unwraps to the segment allocator's
// error.
type UnknownTagError struct {
	*segment.UnknownTagError
	Near string
}

func (e *UnknownTagError) Error() string {
	return fmt.Sprintf("%s (did you mean '%s'?)", e.UnknownTagError.Error(), e.Near)
}

func (e *UnknownTagError) Unwrap() error { return e.UnknownTagError }

// suggest is the tag one typo away from tag among those this proxy knows:
// declared (sequences.tags, table rules), snowflake tags, and segment tags
// it has fetched from the store; "" when none is, or tag is shorter than
// 3 characters.
func (s *Sequences) suggest(tag string) string {
	if utf8.RuneCountInString(tag) < 3 {
		return "" // one edit from a short name is almost any short name
	}
	var known []string
	for name := range s.cfg.Tags {
		known = append(known, name)
	}
	for _, r := range s.cfg.Rules {
		known = append(known, r.Tag)
	}
	known = append(known, s.SnowflakeTags()...)
	for _, t := range s.segments.Tags() {
		if st, ok := s.segments.Stats(t); ok && st.Fetches > 0 {
			known = append(known, t)
		}
	}
	known = slices.DeleteFunc(known, func(k string) bool { return k == tag })
	return nearname.Suggest(tag, known)
}
