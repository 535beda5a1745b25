package snowflake

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/internal/conflict"
)

// DefaultLeaseTTL matches the config's default lease_ttl.
const DefaultLeaseTTL = 30 * time.Second

// dbNowMs is the database's clock in unix milliseconds. Lease expiry is
// judged by this one clock so that hosts whose clocks disagree still agree
// on who holds what. UTC_TIMESTAMP keeps it independent of the session's
// time zone (UNIX_TIMESTAMP(NOW()) is ambiguous in a DST fold).
const dbNowMs = "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000)"

// MySQLLeaser leases worker ids from the leaf_worker table
// (allocator/schema): one row per id with its holder, the holder's last
// heartbeat (database clock) and the high-water mark of issued time. An id
// is free when its row is missing, released (owner ”), or its heartbeat is
// older than the TTL.
//
// A leaser bound to an identity (BindTo) takes ids that stay bound to it:
// its holdings' owner starts with "id=<identity>|", and such a row is
// never free for another identity, expired or not, until it is released
// (a clean shutdown) or an operator clears it. Its own identity gets the
// id back after a restart. So a generator of a bound lease need not fence
// itself when renewals fail: no other process can take its id while it
// is recorded (Lease.Bound).
type MySQLLeaser struct {
	db    *sql.DB
	owner string
	ttl   time.Duration
	// layout is empty for leaf_worker (the store's global layout), else
	// the LayoutKey whose rows of leaf_worker_layout this leaser uses.
	layout string
	// identity, when set, binds the ids this leaser takes (BindTo).
	identity string
}

// MaxIdentity is the longest identity BindTo takes (owner is a
// VARCHAR(255): the identity, the owner and the token's random part fit).
const MaxIdentity = 32

// BindTo is a leaser whose holdings are bound to identity, a name that
// stands for one proxy and that no two live processes may share (its host
// and listening port, or a configured name): the id it takes is its own
// until released, and it takes back the id bound to it when there is one.
// identity must be 1 to MaxIdentity bytes without '|' or '#'; "" unbinds.
func (m *MySQLLeaser) BindTo(identity string) (*MySQLLeaser, error) {
	if len(identity) > MaxIdentity || strings.ContainsAny(identity, "|#") {
		return nil, fmt.Errorf("snowflake identity %q: at most %d bytes, without | or #", identity, MaxIdentity)
	}
	c := *m
	c.identity = identity
	return &c, nil
}

// boundTo is the identity a row's owner binds it to ("" for none).
func boundTo(owner string) string {
	rest, ok := strings.CutPrefix(owner, "id=")
	if !ok {
		return ""
	}
	id, _, ok := strings.Cut(rest, "|")
	if !ok {
		return ""
	}
	return id
}

// ForLayout is a leaser with the same owner and TTL over the worker ids of
// layout key (LayoutKey) in leaf_worker_layout: the leases of a layout
// other than the store's global one, whose ids are a space of their own.
func (m *MySQLLeaser) ForLayout(key string) *MySQLLeaser {
	c := *m
	c.layout = key
	return &c
}

// table names where this leaser's rows are, for messages.
func (m *MySQLLeaser) table() string {
	if m.layout == "" {
		return "leaf_worker"
	}
	return "leaf_worker_layout (layout " + m.layout + ")"
}

// q fills a statement's placeholders: {T} the table, {S} the condition
// that selects this layout's rows (appended to a WHERE), {C} and {V} the
// layout column and its value in an INSERT. The layout's argument always
// comes last (args).
func (m *MySQLLeaser) q(s string) string {
	if m.layout == "" {
		return strings.NewReplacer("{T}", "leaf_worker", "{S}", "", "{C}", "", "{V}", "").Replace(s)
	}
	return strings.NewReplacer("{T}", "leaf_worker_layout", "{S}", " AND layout = ?", "{C}", ", layout", "{V}", ", ?").Replace(s)
}

// args appends the layout's argument for q's placeholders.
func (m *MySQLLeaser) args(a ...any) []any {
	if m.layout == "" {
		return a
	}
	return append(a, m.layout)
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
// (SELECT ... FOR UPDATE), so two processes never win the same id. A free
// id whose last_timestamp lies after notAfter (non-zero) is passed over:
// a process whose clock is that far behind the id's history would refuse
// it, so one bad row must not stop every start. Deadlocks and duplicate
// keys between racing acquirers are retried.
func (m *MySQLLeaser) Acquire(ctx context.Context, maxWorker int64, notAfter time.Time) (Lease, error) {
	return m.acquire(ctx, func(ctx context.Context, token string) (Lease, error) {
		return m.tryAcquire(ctx, maxWorker, notAfter, token)
	})
}

// acquire runs one acquisition attempt function with a fresh token,
// retrying the collisions of racing acquirers.
func (m *MySQLLeaser) acquire(ctx context.Context, try func(context.Context, string) (Lease, error)) (Lease, error) {
	var b [8]byte
	rand.Read(b[:])
	token := m.owner + "#" + hex.EncodeToString(b[:])
	if m.identity != "" {
		token = "id=" + m.identity + "|" + token
	}
	for attempt := 1; ; attempt++ {
		l, err := try(ctx, token)
		if err == nil || !retryable(err) || attempt == 20 {
			if err != nil {
				if !errors.Is(err, ErrNoFreeWorker) && !errors.Is(err, ErrWorkerHeld) && !refused(err) {
					err = fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
				}
				return Lease{}, fmt.Errorf("lease a worker id from %s: %w", m.table(), err)
			}
			return l, nil
		}
		// Racing acquirers collided; back off a little, randomly.
		select {
		case <-time.After(time.Duration(mrand.Int64N(int64(5*time.Millisecond) * int64(attempt)))):
		case <-ctx.Done():
			return Lease{}, fmt.Errorf("lease a worker id from %s: %w: %w (after %v)", m.table(), ErrStoreUnavailable, ctx.Err(), err)
		}
	}
}

// refused says the store answered that this account may not do the job
// (wrong password, no privilege, no such database): waiting will not help,
// so the proxy refuses to start and names the key to fix rather than
// fencing its snowflake tags for ever.
func refused(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1044, 1045, 1049, 1142, 1143, 1227, 1698: // access denied, unknown database, command/column denied
			return true
		}
	}
	return false
}

// retryable says an acquisition attempt met a collision with a racing
// acquirer (a duplicate key) or a store write conflict (a deadlock, a
// Galera certification failure or a node not ready, a lock wait timeout:
// internal/conflict).
func retryable(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == 1062 {
		return true
	}
	return conflict.Is(err)
}

func (m *MySQLLeaser) tryAcquire(ctx context.Context, maxWorker int64, notAfter time.Time, token string) (Lease, error) {
	tx, err := m.db.BeginTx(ctx, nil)
	if err != nil {
		return Lease{}, err
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, m.q(
		"SELECT worker_id, owner, heartbeat, last_timestamp, "+dbNowMs+
			" FROM {T} WHERE worker_id <= ?{S} ORDER BY worker_id FOR UPDATE"), m.args(maxWorker)...)
	if err != nil {
		return Lease{}, err
	}
	s := workerScan{ttlMs: m.ttl.Milliseconds(), notAfter: notAfter, identity: m.identity}
	if err := s.scan(rows); err != nil {
		return Lease{}, err
	}
	if err := s.choose(maxWorker); err != nil {
		return Lease{}, err
	}
	if s.existing {
		_, err = tx.ExecContext(ctx, m.q("UPDATE {T} SET owner = ?, heartbeat = "+dbNowMs+" WHERE worker_id = ?{S}"), m.args(token, s.pick)...)
	} else {
		_, err = tx.ExecContext(ctx, m.q("INSERT INTO {T} (worker_id, owner, heartbeat, last_timestamp{C}) VALUES (?, ?, "+dbNowMs+", 0{V})"), m.args(s.pick, token)...)
	}
	if err != nil {
		return Lease{}, err
	}
	if err := tx.Commit(); err != nil {
		return Lease{}, err
	}
	l := Lease{Worker: s.pick, Token: token, Bound: m.identity != ""}
	if s.lastTS > 0 {
		l.HighWater = time.UnixMilli(s.lastTS)
	}
	return l, nil
}

// workerScan is what tryAcquire learns from the leaf_worker rows, read in
// worker_id order under FOR UPDATE: the id to take, or why none is free.
type workerScan struct {
	ttlMs    int64     // a heartbeat older than this has expired
	notAfter time.Time // a free id whose mark is after this is passed over (zero: none is)
	identity string    // the leaser's identity ("" for none)

	next     int64     // lowest id without a row, if the rows so far are contiguous
	pick     int64     // the id to take, when found
	found    bool      // pick is free (or this identity's own)
	existing bool      // pick has a row: UPDATE it rather than INSERT one
	lastTS   int64     // pick's high-water mark (last_timestamp), 0 for none
	held     int       // ids held by live processes or bound to other identities
	ahead    []string  // free ids passed over: their marks are after notAfter
	mine     *boundRow // the id bound to this leaser's identity, if any
}

// scan reads the rows (and closes them): the first free id, in order, and
// the id bound to this identity wherever it is.
func (s *workerScan) scan(rows *sql.Rows) error {
	s.pick = -1
	for rows.Next() {
		var id, hb, ts, now int64
		var owner string
		if err := rows.Scan(&id, &owner, &hb, &ts, &now); err != nil {
			rows.Close()
			return err
		}
		s.see(id, owner, hb, ts, now)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	return rows.Err()
}

// see takes one row into account. Once a free id is found, later rows are
// read only for the identity's own.
func (s *workerScan) see(id int64, owner string, hb, ts, now int64) {
	if b := boundTo(owner); b != "" && s.identity != "" && b == s.identity && s.mine == nil {
		s.mine = &boundRow{id: id, owner: owner, hb: hb, ts: ts, now: now}
	}
	if s.found {
		return
	}
	if id > s.next {
		s.pick, s.found = s.next, true // a gap: an id without a row
		return
	}
	s.next = id + 1
	if b := boundTo(owner); b != "" && b != s.identity {
		s.held++ // bound to another identity: never free while recorded
		return
	}
	if owner == "" || now-hb > s.ttlMs {
		if !s.notAfter.IsZero() && ts > s.notAfter.UnixMilli() {
			if len(s.ahead) < 8 {
				s.ahead = append(s.ahead, fmt.Sprintf("%d (%s)", id, time.UnixMilli(ts).UTC().Format(time.RFC3339Nano)))
			}
			return
		}
		s.pick, s.found, s.existing, s.lastTS = id, true, true, ts
		return
	}
	s.held++
}

// choose settles the id to take after the scan: the identity's own if it
// has one, else the first free id or the lowest without a row up to
// maxWorker. It fails with ErrIdentityBusy when the identity's id is held
// by a live process, with ErrNoFreeWorker when no id is free.
func (s *workerScan) choose(maxWorker int64) error {
	if !s.found && s.next <= maxWorker {
		s.pick, s.found = s.next, true
	}
	if mine := s.mine; mine != nil {
		// This identity's own id, whatever else is free: taken back at
		// once when its last holding was released or expired; held by a
		// live process of the same identity (a restart within the TTL of
		// one that died, or two proxies given one name), it is waited
		// for.
		if mine.owner != "" && mine.now-mine.hb <= s.ttlMs {
			return fmt.Errorf("%w: %w", ErrIdentityBusy, heldError(mine.id, mine.owner, mine.hb+s.ttlMs, mine.now))
		}
		s.pick, s.found, s.existing, s.lastTS = mine.id, true, true, mine.ts
	}
	if s.found {
		return nil
	}
	if len(s.ahead) > 0 {
		return fmt.Errorf("%d worker ids in [0, %d] are held by live processes and the free ones have high-water marks after %s, further ahead of this clock than it may wait (e.g. worker %s): %w",
			s.held, maxWorker, s.notAfter.UTC().Format(time.RFC3339Nano), s.ahead[0], ErrNoFreeWorker)
	}
	return fmt.Errorf("all %d worker ids in [0, %d] are held by live processes: %w", s.held, maxWorker, ErrNoFreeWorker)
}

// boundRow is a leaf_worker row bound to the acquiring identity.
type boundRow struct {
	id, hb, ts, now int64
	owner           string
}

// Fixed is a WorkerSource for one configured worker id, registered in
// leaf_worker under the same rules as leased ids: the id is taken only when
// its row is missing, released or expired (an id an auto leaser holds is
// refused too), renewed every TTL/3, fenced when renewals fail and
// released on close. Acquire fails with a *WorkerHeldError (errors.Is
// ErrWorkerHeld) naming the holder when another live process has it.
func (m *MySQLLeaser) Fixed(id int64) WorkerSource { return &fixedLease{MySQLLeaser: m, id: id} }

type fixedLease struct {
	*MySQLLeaser
	id int64
}

// Acquire registers the fixed id. The high-water mark of earlier holders is
// honoured as for a leased id; notAfter does not apply (there is no other
// id to try).
func (f *fixedLease) Acquire(ctx context.Context, maxWorker int64, _ time.Time) (Lease, error) {
	if f.id < 0 || f.id > maxWorker {
		return Lease{}, fmt.Errorf("fixed worker id %d outside [0, %d]", f.id, maxWorker)
	}
	return f.acquire(ctx, func(ctx context.Context, token string) (Lease, error) {
		return f.tryAcquireFixed(ctx, token)
	})
}

func (f *fixedLease) tryAcquireFixed(ctx context.Context, token string) (Lease, error) {
	tx, err := f.db.BeginTx(ctx, nil)
	if err != nil {
		return Lease{}, err
	}
	defer tx.Rollback()
	var owner string
	var hb, ts, now int64
	err = tx.QueryRowContext(ctx, f.q("SELECT owner, heartbeat, last_timestamp, "+dbNowMs+
		" FROM {T} WHERE worker_id = ?{S} FOR UPDATE"), f.args(f.id)...).Scan(&owner, &hb, &ts, &now)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		ts = 0
		_, err = tx.ExecContext(ctx, f.q("INSERT INTO {T} (worker_id, owner, heartbeat, last_timestamp{C}) VALUES (?, ?, "+dbNowMs+", 0{V})"), f.args(f.id, token)...)
	case err != nil:
		return Lease{}, err
	case owner != "" && now-hb <= f.ttl.Milliseconds():
		return Lease{}, heldError(f.id, owner, hb+f.ttl.Milliseconds(), now)
	default:
		_, err = tx.ExecContext(ctx, f.q("UPDATE {T} SET owner = ?, heartbeat = "+dbNowMs+" WHERE worker_id = ?{S}"), f.args(token, f.id)...)
	}
	if err != nil {
		return Lease{}, err
	}
	if err := tx.Commit(); err != nil {
		return Lease{}, err
	}
	l := Lease{Worker: f.id, Token: token}
	if ts > 0 {
		l.HighWater = time.UnixMilli(ts)
	}
	return l, nil
}

// heldError describes the live holder of a row: owner is its token
// (host:pid:listen#random), expiresMs and nowMs the store's clock.
func heldError(id int64, owner string, expiresMs, nowMs int64) *WorkerHeldError {
	if i := strings.LastIndexByte(owner, '#'); i >= 0 {
		owner = owner[:i]
	}
	if b := boundTo(owner); b != "" {
		owner = strings.TrimPrefix(owner, "id="+b+"|")
	}
	e := &WorkerHeldError{Worker: id, Owner: owner, Expires: time.UnixMilli(expiresMs), In: time.Duration(expiresMs-nowMs) * time.Millisecond}
	if parts := strings.SplitN(owner, ":", 3); len(parts) >= 2 {
		if _, err := strconv.Atoi(parts[1]); err == nil {
			e.Host, e.PID = parts[0], parts[1]
		}
	}
	return e
}

// Renew refreshes the heartbeat and raises last_timestamp to highWater,
// only while the row still names this holding.
func (m *MySQLLeaser) Renew(ctx context.Context, l Lease, highWater time.Time) error {
	res, err := m.db.ExecContext(ctx, m.q(
		"UPDATE {T} SET heartbeat = "+dbNowMs+", last_timestamp = GREATEST(last_timestamp, ?) WHERE worker_id = ? AND owner = ?{S}"),
		m.args(ceilMs(highWater), l.Worker, l.Token)...)
	if err != nil {
		return fmt.Errorf("renew lease of worker %d in %s: %w: %w", l.Worker, m.table(), ErrStoreUnavailable, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 1 {
		return nil
	}
	// Zero rows changed: either nothing changed (same millisecond, the
	// driver counts changed rows) or the row is no longer ours.
	var owner string
	err = m.db.QueryRowContext(ctx, m.q("SELECT owner FROM {T} WHERE worker_id = ?{S}"), m.args(l.Worker)...).Scan(&owner)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("worker %d: row deleted from %s: %w", l.Worker, m.table(), ErrLeaseLost)
	case err != nil:
		return fmt.Errorf("check lease of worker %d in %s: %w: %w", l.Worker, m.table(), ErrStoreUnavailable, err)
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
	_, err := m.db.ExecContext(ctx, m.q(
		"UPDATE {T} SET owner = '', heartbeat = 0, last_timestamp = GREATEST(?, ?) WHERE worker_id = ? AND owner = ?{S}"),
		m.args(ceilMs(highWater), floor, l.Worker, l.Token)...)
	if err != nil {
		return fmt.Errorf("release worker %d in %s: %w", l.Worker, m.table(), err)
	}
	return nil
}
