package snowflake

import (
	"errors"
	"fmt"
	"time"
)

// Layout is the bit layout of an ID, most significant first:
//
//	| 1 sign bit (always 0) | TimeBits | WorkerBits | SequenceBits |
//
//	id = ticks<<(WorkerBits+SequenceBits) | worker<<SequenceBits | sequence
//
// ticks counts Units since Epoch. The default, 41/10/12 with 1 ms units,
// lasts 69.7 years from the epoch, with 1024 workers issuing up to 4096 IDs
// per millisecond each. The sign bit stays 0 because TimeBits+WorkerBits+
// SequenceBits <= 63 (Validate), so IDs are positive and sort by time.
type Layout struct {
	TimeBits     uint
	WorkerBits   uint
	SequenceBits uint
	// Unit is the length of one tick; at least a millisecond because the
	// persisted high-water marks are in milliseconds.
	Unit  time.Duration
	Epoch time.Time
}

// DefaultEpoch is the epoch of DefaultLayout and of the config's default.
var DefaultEpoch = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

// DefaultLayout is 41 time bits of 1 ms, 10 worker bits, 12 sequence bits,
// epoch 2020-01-01T00:00:00Z (IDs run out in 2089).
func DefaultLayout() Layout {
	return Layout{TimeBits: 41, WorkerBits: 10, SequenceBits: 12, Unit: time.Millisecond, Epoch: DefaultEpoch}
}

// JSSafeLayout keeps every ID below 2^53, so it survives a JavaScript number
// (JSON parsed in a browser): 41 time bits of 1 ms (69.7 years), 5 worker
// bits (32 workers), 7 sequence bits (128 IDs per ms per worker).
func JSSafeLayout() Layout {
	return Layout{TimeBits: 41, WorkerBits: 5, SequenceBits: 7, Unit: time.Millisecond, Epoch: DefaultEpoch}
}

// Validate reports a layout that cannot produce positive, unique IDs.
func (l Layout) Validate() error {
	var errs []error
	if l.TimeBits < 16 {
		errs = append(errs, fmt.Errorf("time bits %d: need at least 16 or IDs run out within hours", l.TimeBits))
	}
	if l.WorkerBits > 31 {
		// leaf_worker.worker_id is an int.
		errs = append(errs, fmt.Errorf("worker bits %d: at most 31", l.WorkerBits))
	}
	if l.SequenceBits < 1 || l.SequenceBits > 31 {
		errs = append(errs, fmt.Errorf("sequence bits %d: need 1 to 31", l.SequenceBits))
	}
	if sum := l.TimeBits + l.WorkerBits + l.SequenceBits; sum > 63 {
		errs = append(errs, fmt.Errorf("time+worker+sequence bits = %d: at most 63 so IDs stay positive", sum))
	}
	if l.Unit < time.Millisecond {
		errs = append(errs, fmt.Errorf("time unit %v: at least 1ms", l.Unit))
	}
	if l.Epoch.IsZero() {
		errs = append(errs, errors.New("epoch is not set"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid snowflake layout: %w", err)
	}
	return nil
}

// String is the layout as messages show it: bits time/worker/sequence, the
// tick length and the epoch, e.g. "41/10/12 x 1ms, epoch 2020-01-01T00:00:00Z".
func (l Layout) String() string {
	return fmt.Sprintf("%d/%d/%d x %v, epoch %s", l.TimeBits, l.WorkerBits, l.SequenceBits, l.Unit,
		l.Epoch.UTC().Format(time.RFC3339Nano))
}

// MaxTicks is the last tick the time bits can hold.
func (l Layout) MaxTicks() int64 { return 1<<l.TimeBits - 1 }

// MaxWorker is the highest worker id.
func (l Layout) MaxWorker() int64 { return 1<<l.WorkerBits - 1 }

// MaxSequence is the highest sequence number within one tick.
func (l Layout) MaxSequence() int64 { return 1<<l.SequenceBits - 1 }

// End is the first instant the time bits cannot represent.
func (l Layout) End() time.Time { return l.TickStart(l.MaxTicks() + 1) }

// TickStart is when tick t begins.
func (l Layout) TickStart(t int64) time.Time {
	// Split to avoid overflowing time.Duration for long units.
	return l.Epoch.Add(time.Duration(t/1000) * 1000 * l.Unit).Add(time.Duration(t%1000) * l.Unit)
}

// Ticks is the tick containing t (negative before the epoch).
func (l Layout) Ticks(t time.Time) int64 {
	return floorDiv(int64(t.Sub(l.Epoch)), int64(l.Unit))
}

// Compose packs the parts into an ID, refusing values that do not fit.
func (l Layout) Compose(ticks, worker, seq int64) (int64, error) {
	switch {
	case ticks < 0:
		return 0, fmt.Errorf("compose snowflake id: tick %d is before the epoch", ticks)
	case ticks > l.MaxTicks():
		return 0, fmt.Errorf("compose snowflake id: tick %d overflows %d time bits: %w", ticks, l.TimeBits, ErrTimeOverflow)
	case worker < 0 || worker > l.MaxWorker():
		return 0, fmt.Errorf("compose snowflake id: worker %d outside [0, %d]", worker, l.MaxWorker())
	case seq < 0 || seq > l.MaxSequence():
		return 0, fmt.Errorf("compose snowflake id: sequence %d outside [0, %d]", seq, l.MaxSequence())
	}
	return l.compose(ticks, worker, seq), nil
}

func (l Layout) compose(ticks, worker, seq int64) int64 {
	return ticks<<(l.WorkerBits+l.SequenceBits) | worker<<l.SequenceBits | seq
}

// Parts is a decoded ID.
type Parts struct {
	Time     time.Time // start of the tick
	Ticks    int64     // units since the epoch
	Worker   int64
	Sequence int64
}

// Decode splits an ID made with this layout.
func (l Layout) Decode(id int64) Parts {
	ticks := id >> (l.WorkerBits + l.SequenceBits)
	return Parts{
		Time:     l.TickStart(ticks),
		Ticks:    ticks,
		Worker:   (id >> l.SequenceBits) & l.MaxWorker(),
		Sequence: id & l.MaxSequence(),
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func ceilDiv(a, b int64) int64 { return -floorDiv(-a, b) }
