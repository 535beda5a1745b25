package snowflake

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"time"

	"github.com/go-sql-driver/mysql"
)

// dbNowMs is the database's clock in unix milliseconds. Lease expiry is
// judged by this one clock so that hosts whose clocks disagree still agree
// on who holds what. UTC_TIMESTAMP keeps it independent of the session's
// time zone (UNIX_TIMESTAMP(NOW()) is ambiguous in a DST fold).
// DefaultLeaseTTL matches the config's default lease_ttl.
const DefaultLeaseTTL = 30 * time.Second

const dbNowMs = "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000)"

// MySQLLeaser leases worker ids from the leaf_worker table
// (allocator/schema): one row per id with its holder, the holder's last
// heartbeat (database clock) and the high-water mark of issued time. An id
// is free when its row is missing, released (owner ”), or its heartbeat is
// older than the TTL.
type MySQLLeaser struct {
	db    *sql.DB
	owner string
	ttl   time.Duration
}

// NewMySQLLeaser returns a leaser over db's leaf_worker table. owner names
// the process in the table (host:pid is a good choice); each Acquire adds a
// random token, so two processes configured with the same owner still never
// share a lease. ttl is how long a lease survives without renewal
// (DefaultLeaseTTL when not positive: a zero TTL would let every process
// take every id).
func NewMySQLLeaser(db *sql.DB, owner string, ttl time.Duration) *MySQLLeaser {
	if ttl <= 0 {
		ttl = DefaultLeaseTTL
	}
	if len(owner) > 200 {
		owner = owner[:200]
	}
	return &MySQLLeaser{db: db, owner: owner, ttl: ttl}
}

// TTL is the lease lifetime.
func (m *MySQLLeaser) TTL() time.Duration { return m.ttl }

// Acquire takes the lowest worker id in [0, maxWorker] that is free,
// released or expired, in one transaction that locks the rows it reads
// (SELECT ... FOR UPDATE), so two processes never win the same id.
// Deadlocks and duplicate keys between racing acquirers are retried.
func (m *MySQLLeaser) Acquire(ctx context.Context, maxWorker int64) (Lease, error) {
	var b [8]byte
	rand.Read(b[:])
	token := m.owner + "#" + hex.EncodeToString(b[:])
	for attempt := 1; ; attempt++ {
		l, err := m.tryAcquire(ctx, maxWorker, token)
		if err == nil || !retryable(err) || attempt == 20 {
			if err != nil {
				return Lease{}, fmt.Errorf("lease a worker id from leaf_worker: %w", err)
			}
			return l, nil
		}
		// Racing acquirers collided; back off a little, randomly.
		select {
		case <-time.After(time.Duration(mrand.Int64N(int64(5*time.Millisecond) * int64(attempt)))):
		case <-ctx.Done():
			return Lease{}, fmt.Errorf("lease a worker id from leaf_worker: %w (after %v)", ctx.Err(), err)
		}
	}
}

func retryable(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1213, 1205, 1062: // deadlock, lock wait timeout, duplicate key
			return true
		}
	}
	return false
}

func (m *MySQLLeaser) tryAcquire(ctx context.Context, maxWorker int64, token string) (Lease, error) {
	tx, err := m.db.BeginTx(ctx, nil)
	if err != nil {
		return Lease{}, err
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx,
		"SELECT worker_id, owner, heartbeat, last_timestamp, "+dbNowMs+
			" FROM leaf_worker WHERE worker_id <= ? ORDER BY worker_id FOR UPDATE", maxWorker)
	if err != nil {
		return Lease{}, err
	}
	ttlMs := m.ttl.Milliseconds()
	next := int64(0) // lowest id without a row, if the rows so far are contiguous
	pick, found, existing := int64(-1), false, false
	var lastTS int64
	held := 0
	for rows.Next() {
		var id, hb, ts, now int64
		var owner string
		if err := rows.Scan(&id, &owner, &hb, &ts, &now); err != nil {
			rows.Close()
			return Lease{}, err
		}
		if found {
			continue
		}
		if id > next {
			pick, found = next, true
			continue
		}
		next = id + 1
		if owner == "" || now-hb > ttlMs {
			pick, found, existing, lastTS = id, true, true, ts
			continue
		}
		held++
	}
	if err := rows.Close(); err != nil {
		return Lease{}, err
	}
	if err := rows.Err(); err != nil {
		return Lease{}, err
	}
	if !found && next <= maxWorker {
		pick, found = next, true
	}
	if !found {
		return Lease{}, fmt.Errorf("all %d worker ids in [0, %d] are held by live processes: %w", held, maxWorker, ErrNoFreeWorker)
	}
	if existing {
		_, err = tx.ExecContext(ctx, "UPDATE leaf_worker SET owner = ?, heartbeat = "+dbNowMs+" WHERE worker_id = ?", token, pick)
	} else {
		_, err = tx.ExecContext(ctx, "INSERT INTO leaf_worker (worker_id, owner, heartbeat, last_timestamp) VALUES (?, ?, "+dbNowMs+", 0)", pick, token)
	}
	if err != nil {
		return Lease{}, err
	}
	if err := tx.Commit(); err != nil {
		return Lease{}, err
	}
	l := Lease{Worker: pick, Token: token}
	if lastTS > 0 {
		l.HighWater = time.UnixMilli(lastTS)
	}
	return l, nil
}

// Renew refreshes the heartbeat and raises last_timestamp to highWater,
// only while the row still names this holding.
func (m *MySQLLeaser) Renew(ctx context.Context, l Lease, highWater time.Time) error {
	res, err := m.db.ExecContext(ctx,
		"UPDATE leaf_worker SET heartbeat = "+dbNowMs+", last_timestamp = GREATEST(last_timestamp, ?) WHERE worker_id = ? AND owner = ?",
		ceilMs(highWater), l.Worker, l.Token)
	if err != nil {
		return fmt.Errorf("renew lease of worker %d in leaf_worker: %w", l.Worker, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 1 {
		return nil
	}
	// Zero rows changed: either nothing changed (same millisecond, the
	// driver counts changed rows) or the row is no longer ours.
	var owner string
	err = m.db.QueryRowContext(ctx, "SELECT owner FROM leaf_worker WHERE worker_id = ?", l.Worker).Scan(&owner)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("worker %d: row deleted from leaf_worker: %w", l.Worker, ErrLeaseLost)
	case err != nil:
		return fmt.Errorf("check lease of worker %d in leaf_worker: %w", l.Worker, err)
	case owner != l.Token:
		return fmt.Errorf("worker %d is now held by %q: %w", l.Worker, owner, ErrLeaseLost)
	}
	return nil
}

// Release frees the id at once and records the final high-water mark
// (never below the one the lease started from). A holding that has already
// passed to another is left alone.
func (m *MySQLLeaser) Release(ctx context.Context, l Lease, highWater time.Time) error {
	var floor int64
	if !l.HighWater.IsZero() {
		floor = ceilMs(l.HighWater)
	}
	_, err := m.db.ExecContext(ctx,
		"UPDATE leaf_worker SET owner = '', heartbeat = 0, last_timestamp = GREATEST(?, ?) WHERE worker_id = ? AND owner = ?",
		ceilMs(highWater), floor, l.Worker, l.Token)
	if err != nil {
		return fmt.Errorf("release worker %d in leaf_worker: %w", l.Worker, err)
	}
	return nil
}
