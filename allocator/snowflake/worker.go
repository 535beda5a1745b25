package snowflake

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Errors the generator and worker sources return, wrapped with detail; test
// with errors.Is.
var (
	// ErrClockBackward: the clock is behind the last issued tick by more
	// than MaxBackward (at run time or at start against the persisted
	// high-water mark). Nothing is issued until it catches up.
	ErrClockBackward = errors.New("clock is behind the snowflake high-water mark")
	// ErrTimeOverflow: the time bits cannot hold the current tick.
	ErrTimeOverflow = errors.New("snowflake time bits exhausted")
	// ErrFenced: the worker lease was not renewed in time; issuing resumes
	// only after a renewal succeeds.
	ErrFenced = errors.New("snowflake worker lease not renewed in time")
	// ErrLeaseLost: another process holds the worker id now. Permanent.
	ErrLeaseLost = errors.New("snowflake worker lease lost to another process")
	// ErrNoFreeWorker: every worker id is held by a live process.
	ErrNoFreeWorker = errors.New("no free snowflake worker id")
	// ErrClosed: the generator was closed.
	ErrClosed = errors.New("snowflake generator closed")
)

// Lease is one holding of a worker id.
type Lease struct {
	Worker int64
	// HighWater is an instant every ID issued by earlier holders of this
	// worker id lies before (their ticks start before it). The new holder
	// issues only ticks starting at or after it. Zero when there is no
	// history.
	HighWater time.Time
	// Token identifies this holding to Renew and Release, so a holder whose
	// lease passed to another cannot renew or release the other's.
	Token string
}

// WorkerSource hands out worker ids. FixedWorker never expires; MySQLLeaser
// leases ids from leaf_worker with a TTL.
type WorkerSource interface {
	// Acquire claims a worker id in [0, maxWorker].
	Acquire(ctx context.Context, maxWorker int64) (Lease, error)
	// Renew extends the lease from now by TTL and records highWater (an
	// instant all of this holder's IDs, past and until the lease ends, lie
	// before). It returns an error wrapping ErrLeaseLost when someone else
	// holds the id.
	Renew(ctx context.Context, l Lease, highWater time.Time) error
	// Release gives the id back, recording the final high-water mark.
	Release(ctx context.Context, l Lease, highWater time.Time) error
	// TTL is how long a lease lives after a renewal; 0 means it never
	// expires (no fencing).
	TTL() time.Duration
}

// FixedWorker is a worker id from configuration. It is the operator's job
// to give every process its own.
func FixedWorker(id int64) WorkerSource { return fixedWorker(id) }

type fixedWorker int64

func (f fixedWorker) Acquire(_ context.Context, maxWorker int64) (Lease, error) {
	if int64(f) < 0 || int64(f) > maxWorker {
		return Lease{}, fmt.Errorf("fixed worker id %d outside [0, %d]", int64(f), maxWorker)
	}
	return Lease{Worker: int64(f)}, nil
}
func (fixedWorker) Renew(context.Context, Lease, time.Time) error   { return nil }
func (fixedWorker) Release(context.Context, Lease, time.Time) error { return nil }
func (fixedWorker) TTL() time.Duration                              { return 0 }
