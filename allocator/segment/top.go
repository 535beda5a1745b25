package segment

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/go-sql-driver/mysql"
)

// The top of int64. leaf_alloc.max_id is a signed BIGINT (Leaf's schema)
// and the end of the last range handed out, exclusive: the last ID a tag
// can give is 2^63-2, the range ending at max_id 2^63-1. A fetch whose
// max_id + step would pass 2^63-1 fails in MariaDB with 1690 ("BIGINT
// value is out of range"); the allocator then reads max_id and asks for
// exactly what is left, so the last IDs are handed out, and once max_id
// is 2^63-1 the tag is at its end: 167 naming the tag and why
// (PastEndError with topLimit). A BIGINT UNSIGNED key column gets no ID
// past 2^63-2 either: max_id cannot hold one, and a wider counter would
// leave Leaf's schema (and every other Leaf client of the table) behind.

// ErrMaxIDOverflow is a store's answer to a fetch whose max_id + step is
// past 2^63-1 (the MySQL store's is MariaDB's 1690; internal/testkit/fakestore's
// wraps this).
var ErrMaxIDOverflow = errors.New("leaf_alloc.max_id + step is out of BIGINT's range")

// TopBy is the Limit.By of a tag at the top of int64.
const TopBy = "leaf_alloc.max_id"

// topLimit is every tag's last limit: its last ID is 2^63-2.
var topLimit = Limit{Max: math.MaxInt64 - 1, By: TopBy}

// atTop is tag's PastEndError at the top of int64.
func atTop(tag string) *PastEndError {
	return &PastEndError{Tag: tag, Limit: topLimit, Next: math.MaxInt64}
}

// overflowed says err is a fetch's max_id + step out of BIGINT's range.
func overflowed(err error) bool {
	if errors.Is(err, ErrMaxIDOverflow) {
		return true
	}
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1690
}

// fetchToTop is fetch for a segment: when max_id + step is past the top
// of int64, it reads max_id and fetches what is left (a few times, as
// other allocators may take it meanwhile); at the top it answers the
// tag's PastEndError.
func (a *Allocator) fetchToTop(tag string, step, floor int64) (Range, error) {
	r, err := a.fetch(tag, step, floor)
	for attempt := 0; err != nil && overflowed(err) && attempt < 5; attempt++ {
		ctx, cancel := context.WithTimeout(a.ctx, a.opts.FetchTimeout)
		got, perr := a.store.Peek(ctx, []string{tag})
		cancel()
		if perr != nil {
			return Range{}, fmt.Errorf("read max_id of %q after %w: %w", tag, err, perr)
		}
		m, ok := got[tag]
		switch {
		case !ok:
			return Range{}, &UnknownTagError{Tag: tag}
		case m == math.MaxInt64:
			return Range{}, atTop(tag)
		}
		if step <= 0 {
			step = a.opts.DefaultStep
		}
		step = min(step, math.MaxInt64-m)
		r, err = a.fetch(tag, step, floor)
	}
	return r, err
}

// addSat is x + y (y >= 0), at most math.MaxInt64.
func addSat(x, y int64) int64 {
	if x > math.MaxInt64-y {
		return math.MaxInt64
	}
	return x + y
}
