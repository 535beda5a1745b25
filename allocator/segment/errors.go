package segment

import (
	"errors"
	"fmt"
	"time"
)

// ErrCodeUnknownSequence and SQLStateUnknownSequence are what MariaDB says
// for a missing sequence (ER_UNKNOWN_SEQUENCES), so clients see the same
// error whether MariaDB or the proxy answers NEXTVAL.
const (
	ErrCodeUnknownSequence  = 4091
	SQLStateUnknownSequence = "42S02"
)

// ErrCodeExhausted and SQLStateExhausted are ER_UNKNOWN_ERROR / HY000: MySQL
// has no code for "the ID store is unreachable", and a generic one keeps
// clients from retrying as if it were, say, a deadlock.
const (
	ErrCodeExhausted  = 1105
	SQLStateExhausted = "HY000"
)

// ErrClosed is returned by every call after Close.
var ErrClosed = errors.New("segment allocator closed")

// UnknownTagError says the tag has no row in leaf_alloc (and auto-create is
// off, or failed).
type UnknownTagError struct{ Tag string }

func (e *UnknownTagError) Error() string    { return fmt.Sprintf("Unknown SEQUENCE: '%s'", e.Tag) }
func (e *UnknownTagError) Code() uint16     { return ErrCodeUnknownSequence }
func (e *UnknownTagError) SQLState() string { return SQLStateUnknownSequence }

// ExhaustedError says both segments of a tag were empty and no new one
// arrived within the wait timeout. LastErr is the store's last failure, nil
// when a fetch was simply still under way.
type ExhaustedError struct {
	Tag     string
	Waited  time.Duration
	LastErr error
}

func (e *ExhaustedError) Error() string {
	waited := e.Waited.Round(time.Millisecond)
	if e.LastErr != nil {
		return fmt.Sprintf("leafproxy: no ID for sequence %q after waiting %v (sequences.wait_timeout): the ID store is failing: %v", e.Tag, waited, e.LastErr)
	}
	return fmt.Sprintf("leafproxy: no ID for sequence %q after waiting %v (sequences.wait_timeout): the ID store did not answer (the segment fetch has not finished)", e.Tag, waited)
}

func (e *ExhaustedError) Unwrap() error    { return e.LastErr }
func (e *ExhaustedError) Code() uint16     { return ErrCodeExhausted }
func (e *ExhaustedError) SQLState() string { return SQLStateExhausted }

// StaleSegmentError reports a fetched segment that starts below IDs this
// allocator already reserved: the store's max_id went backwards (a failover
// to a stale replica, a restored backup, a manual edit). Serving it would
// issue duplicates, so it is refused; it shows up as the LastErr of an
// ExhaustedError and in Stats.
type StaleSegmentError struct {
	Tag       string
	Got       Range
	HighWater int64
}

func (e *StaleSegmentError) Error() string {
	return fmt.Sprintf("refused segment [%d, %d) for %q: it starts below %d, the end of IDs this allocator already reserved (leaf_alloc.max_id moved back: stale replica or restored backup?)",
		e.Got.Start, e.Got.End, e.Tag, e.HighWater)
}

// MovedBackError is a fetch the store refused: its max_id (MaxID) is
// below Floor, the end of the ranges the fetching allocator already
// reserved or read back, so it moved back. Nothing was taken. The
// allocator treats it as a refused segment (repair, fetch again); it shows
// up as the LastErr of an ExhaustedError and in Stats.
type MovedBackError struct {
	Tag   string
	MaxID int64
	Floor int64
}

func (e *MovedBackError) Error() string {
	return fmt.Sprintf("no segment for %q: leaf_alloc.max_id is %d, below %d, the end of IDs this allocator already reserved or read back (it moved back: stale replica or restored backup?); nothing was taken",
		e.Tag, e.MaxID, e.Floor)
}

// ErrCodeWrongArguments and SQLStateWrongArguments are ER_WRONG_ARGUMENTS
// ("Incorrect arguments to %s"): MariaDB's own SETVAL silently ignores a
// value below the sequence's, but here a floor that cannot be honoured
// must not look like success to an operator adopting a table.
const (
	ErrCodeWrongArguments  = 1210
	SQLStateWrongArguments = "HY000"
)

// BelowIssuedError refuses to lower a tag: Floor (the first ID the caller
// wanted next) is below MaxID, leaf_alloc's max_id, so IDs up to MaxID-1
// may already have been handed out by some proxy.
type BelowIssuedError struct {
	Tag   string
	Floor int64
	MaxID int64
}

func (e *BelowIssuedError) Error() string {
	return fmt.Sprintf("Incorrect arguments to SETVAL: sequence '%s' can only be raised: its current value is %d (IDs up to %d may have been issued; leaf_alloc.max_id %d), asked for next values from %d",
		e.Tag, e.MaxID-1, e.MaxID-1, e.MaxID, e.Floor)
}
func (e *BelowIssuedError) Code() uint16     { return ErrCodeWrongArguments }
func (e *BelowIssuedError) SQLState() string { return SQLStateWrongArguments }
