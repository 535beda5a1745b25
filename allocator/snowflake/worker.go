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
	// ErrNoFreeWorker: every worker id is held by a live process (or free
	// ids were passed over because their high-water marks lie too far
	// ahead of this process's clock).
	ErrNoFreeWorker = errors.New("no free snowflake worker id")
	// ErrWorkerHeld: a fixed worker id is held by another live process
	// (a WorkerHeldError says which).
	ErrWorkerHeld = errors.New("snowflake worker id held by another live process")
	// ErrIdentityBusy: the worker id bound to this process's identity is
	// held by a live process of the same identity (one that died within
	// the lease TTL, or two processes given one identity). Transient:
	// the holding expires unless the other process lives.
	ErrIdentityBusy = errors.New("snowflake worker id bound to this identity is held by a live process")
	// ErrStoreUnavailable: the worker-id store could not be asked (down,
	// stalled, schema missing). Transient: the caller may retry.
	ErrStoreUnavailable = errors.New("worker-id store unavailable")
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
	// Bound: the id is bound to this process's identity (MySQLLeaser.BindTo):
	// no other process can take it while it is recorded, so the generator
	// keeps issuing when renewals fail (the state file, then, keeps the
	// high-water mark a restart of the same identity starts above).
	Bound bool
}

// WorkerSource hands out worker ids. FixedWorker never expires and is
// registered nowhere; MySQLLeaser leases ids from leaf_worker with a TTL,
// and MySQLLeaser.Fixed registers one configured id there under the same
// rules.
type WorkerSource interface {
	// Acquire claims a worker id in [0, maxWorker]. A source that chooses
	// among ids passes over those whose recorded high-water mark lies after
	// notAfter (the generator's clock could not issue under them without
	// waiting longer than it may); zero notAfter means no such limit.
	Acquire(ctx context.Context, maxWorker int64, notAfter time.Time) (Lease, error)
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

// FixedWorker is a worker id from configuration, registered nowhere: it is
// the caller's job to give every process its own (tests, benchmarks, a
// process with no store). The proxy registers configured ids with
// MySQLLeaser.Fixed instead.
func FixedWorker(id int64) WorkerSource { return fixedWorker(id) }

type fixedWorker int64

func (f fixedWorker) Acquire(_ context.Context, maxWorker int64, _ time.Time) (Lease, error) {
	if int64(f) < 0 || int64(f) > maxWorker {
		return Lease{}, fmt.Errorf("fixed worker id %d outside [0, %d]", int64(f), maxWorker)
	}
	return Lease{Worker: int64(f)}, nil
}
func (fixedWorker) Renew(context.Context, Lease, time.Time) error   { return nil }
func (fixedWorker) Release(context.Context, Lease, time.Time) error { return nil }
func (fixedWorker) TTL() time.Duration                              { return 0 }

// WorkerHeldError says which live process holds a fixed worker id that was
// asked for. Expires is when its lease ends, by the store's clock, unless
// the holder renews it (it renews every TTL/3 while it runs).
type WorkerHeldError struct {
	Worker  int64
	Owner   string // the holder's owner string (host:pid:listen), token removed
	Host    string // parsed from Owner; "" when it does not have that form
	PID     string
	Expires time.Time
	In      time.Duration // from the store's now to Expires
}

func (e *WorkerHeldError) Error() string {
	who := fmt.Sprintf("owner %q", e.Owner)
	if e.Host != "" {
		who = fmt.Sprintf("host %s pid %s (owner %q)", e.Host, e.PID, e.Owner)
	}
	return fmt.Sprintf("snowflake worker id %d is held by %s; its lease expires at %s (in %v) unless renewed: "+
		"give this proxy another snowflake.worker_id, or use worker_id: auto",
		e.Worker, who, e.Expires.UTC().Format("2006-01-02 15:04:05.000 MST"), e.In.Round(100*time.Millisecond))
}

func (e *WorkerHeldError) Unwrap() error { return ErrWorkerHeld }
