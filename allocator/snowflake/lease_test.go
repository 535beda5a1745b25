package snowflake

import (
	"context"
	"database/sql"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/allocator/schema"
	"github.com/leafproxy/leafproxy/internal/testdb"
)

// One MariaDB for the package's lease tests, each test in its own database.
type sharedServer struct {
	once sync.Once
	s    *testdb.Server
	err  error
}

var mariadb sharedServer

func TestMain(m *testing.M) {
	testdb.Main(m, func() {
		if mariadb.s != nil {
			mariadb.s.Close()
		}
	})
}

// store returns n separate connection pools (one per simulated process) to
// a fresh database holding the allocation schema.
func store(t *testing.T, name string, n int) []*sql.DB {
	t.Helper()
	mariadb.once.Do(func() { mariadb.s, mariadb.err = testdb.New() })
	if mariadb.err != nil {
		t.Fatalf("start MariaDB: %v", mariadb.err)
	}
	dbs := make([]*sql.DB, n)
	for i := range dbs {
		dbs[i] = mariadb.s.Open(t, name)
	}
	if err := schema.Ensure(context.Background(), dbs[0]); err != nil {
		t.Fatal(err)
	}
	return dbs
}

func rowOwner(t *testing.T, db *sql.DB, id int64) string {
	t.Helper()
	var owner string
	if err := db.QueryRow("SELECT owner FROM leaf_worker WHERE worker_id = ?", id).Scan(&owner); err != nil {
		t.Fatalf("read leaf_worker row %d: %v", id, err)
	}
	return owner
}

func TestLeaserTakesLowestFreeOrExpired(t *testing.T) {
	db := store(t, "sf_lowest", 1)[0]
	ctx := context.Background()
	if _, err := db.Exec("INSERT INTO leaf_worker (worker_id, owner, heartbeat, last_timestamp) VALUES " +
		"(0, 'live#1', " + dbNowMs + ", 5000), " +
		"(1, 'dead#1', " + dbNowMs + " - 60000, 1700000000123), " +
		"(2, '', 0, 1700000000456)"); err != nil {
		t.Fatal(err)
	}
	l := NewMySQLLeaser(db, "me", 10*time.Second)
	want := []struct {
		id int64
		hw int64
	}{{1, 1700000000123}, {2, 1700000000456}, {3, 0}}
	var leases []Lease
	for _, w := range want {
		got, err := l.Acquire(ctx, 3, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Worker != w.id {
			t.Fatalf("acquired %d, want %d (lowest free or expired)", got.Worker, w.id)
		}
		if (w.hw == 0) != got.HighWater.IsZero() || (w.hw != 0 && got.HighWater.UnixMilli() != w.hw) {
			t.Fatalf("worker %d high-water %v, want %d", got.Worker, got.HighWater, w.hw)
		}
		if o := rowOwner(t, db, got.Worker); o != got.Token || !strings.HasPrefix(o, "me#") {
			t.Fatalf("row %d owner %q, lease token %q", got.Worker, o, got.Token)
		}
		leases = append(leases, got)
	}
	if _, err := l.Acquire(ctx, 3, time.Time{}); !errors.Is(err, ErrNoFreeWorker) {
		t.Fatalf("all held: %v, want ErrNoFreeWorker", err)
	}
	// Renew raises the mark, never lowers it.
	if err := l.Renew(ctx, leases[0], time.UnixMilli(1800000000000)); err != nil {
		t.Fatal(err)
	}
	if err := l.Renew(ctx, leases[0], time.UnixMilli(1700000000000)); err != nil {
		t.Fatal(err)
	}
	var ts int64
	db.QueryRow("SELECT last_timestamp FROM leaf_worker WHERE worker_id = 1").Scan(&ts)
	if ts != 1800000000000 {
		t.Fatalf("last_timestamp %d after renewals", ts)
	}
	// A stale token cannot renew or release someone else's lease.
	stale := leases[0]
	stale.Token = "me#stale"
	if err := l.Renew(ctx, stale, time.Now()); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("renew with a stale token: %v", err)
	}
	l.Release(ctx, stale, time.Now())
	if o := rowOwner(t, db, 1); o != leases[0].Token {
		t.Fatalf("stale release freed the row: owner %q", o)
	}
	// Release frees at once and records the exact mark for the next holder.
	if err := l.Release(ctx, leases[1], time.UnixMilli(1750000000000)); err != nil {
		t.Fatal(err)
	}
	again, err := l.Acquire(ctx, 3, time.Time{})
	if err != nil || again.Worker != 2 || again.HighWater.UnixMilli() != 1750000000000 {
		t.Fatalf("after release: %+v, %v", again, err)
	}
}

// Two processes (separate pools, separate leasers) acquire, renew, release
// and abandon leases on two worker ids for a few seconds. A registry records
// until when (by the holder's local clock, fence included) each holder may
// use its id; a grant to anyone while another's use is still allowed is a
// double holding.
func TestLeasersNeverHoldSameWorkerAtOnce(t *testing.T) {
	dbs := store(t, "sf_compete", 2)
	const ttl = 400 * time.Millisecond
	const margin = ttl / 5
	type holding struct {
		holder string
		token  string
		until  time.Time
		hw     time.Time // high-water recorded by the holder
	}
	var (
		mu        sync.Mutex
		reg       = map[int64]*holding{}
		grants    atomic.Int64
		takeovers atomic.Int64
	)
	end := time.Now().Add(3 * time.Second)
	var wg sync.WaitGroup
	for p, db := range dbs {
		leaser := NewMySQLLeaser(db, []string{"proc-a", "proc-b"}[p], ttl)
		for g := range 2 {
			name := leaser.owner + "/" + string(rune('0'+g))
			wg.Go(func() {
				ctx := context.Background()
				rng := rand.New(rand.NewPCG(uint64(p), uint64(g)))
				for time.Now().Before(end) {
					sent := time.Now()
					l, err := leaser.Acquire(ctx, 1, time.Time{})
					if errors.Is(err, ErrNoFreeWorker) {
						time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
						continue
					}
					if err != nil {
						t.Errorf("%s acquire: %v", name, err)
						return
					}
					got := time.Now()
					grants.Add(1)
					mu.Lock()
					if h := reg[l.Worker]; h != nil {
						if h.until.After(got) {
							t.Errorf("worker %d granted to %s at %v while %s may use it until %v",
								l.Worker, name, got.Format("15:04:05.000"), h.holder, h.until.Format("15:04:05.000"))
						}
						if h.token != "" && h.hw.After(l.HighWater) {
							t.Errorf("worker %d taken over with high-water %v below the previous holder's %v", l.Worker, l.HighWater, h.hw)
						}
						if h.token != "" {
							takeovers.Add(1)
						}
					}
					h := &holding{holder: name, token: l.Token, until: sent.Add(ttl - margin)}
					reg[l.Worker] = h
					mu.Unlock()
					if o := rowOwner(t, db, l.Worker); o != l.Token {
						t.Errorf("%s holds %d but the row says %q", name, l.Worker, o)
					}
					switch rng.IntN(3) {
					case 0: // renew a few times, then release
						for range 1 + rng.IntN(3) {
							time.Sleep(ttl / 4)
							sent := time.Now()
							hw := sent.Add(ttl)
							err := leaser.Renew(ctx, l, hw)
							mu.Lock()
							if err == nil && reg[l.Worker] == h {
								h.until, h.hw = sent.Add(ttl-margin), hw
							}
							mu.Unlock()
							if err != nil {
								break // lost (e.g. a slow scheduler): the registry still bounds our use
							}
						}
						fallthrough
					case 1: // release at once
						mu.Lock()
						if reg[l.Worker] == h {
							h.until, h.token = time.Now(), ""
						}
						mu.Unlock()
						leaser.Release(ctx, l, time.Now())
					case 2: // renew once more, then abandon it, as a crashed or paused process would
						sent := time.Now()
						hw := sent.Add(ttl)
						err := leaser.Renew(ctx, l, hw)
						mu.Lock()
						if err == nil && reg[l.Worker] == h {
							h.until, h.hw = sent.Add(ttl-margin), hw
						}
						mu.Unlock()
					}
				}
			})
		}
	}
	wg.Wait()
	t.Logf("%d grants, %d takeovers of abandoned leases", grants.Load(), takeovers.Load())
	if grants.Load() < 10 || takeovers.Load() < 2 {
		t.Fatalf("too little contention to mean anything: %d grants, %d takeovers", grants.Load(), takeovers.Load())
	}
}

// pausable makes the store unreachable for renewals on demand, as a network
// partition or a long GC/VM pause would.
type pausable struct {
	WorkerSource
	paused atomic.Bool
}

func (p *pausable) Renew(ctx context.Context, l Lease, hw time.Time) error {
	if p.paused.Load() {
		return errors.New("store unreachable (test pause)")
	}
	return p.WorkerSource.Renew(ctx, l, hw)
}

func TestPausedProcessIssuesNothingAfterLeaseExpires(t *testing.T) {
	dbs := store(t, "sf_pause", 2)
	ctx := context.Background()
	const ttl = time.Second
	// One worker id only, so the second process can start only by taking
	// the first one's id.
	layout := Layout{TimeBits: 41, WorkerBits: 0, SequenceBits: 12}
	a := &pausable{WorkerSource: NewMySQLLeaser(dbs[0], "proc-a", ttl)}
	ga := newGen(t, Options{Layout: layout, Worker: a, RenewEvery: 100 * time.Millisecond})
	var aIDs []int64
	for range 100 {
		aIDs = append(aIDs, mustNext(t, ga))
	}

	a.paused.Store(true)
	// A goes on trying; it must stop on its own (fencing) before its lease
	// expires, and never issue again.
	fenced := false
	for deadline := time.Now().Add(3 * ttl); time.Now().Before(deadline) && !fenced; {
		id, err := ga.Next(ctx)
		switch {
		case err == nil:
			aIDs = append(aIDs, id)
		case errors.Is(err, ErrFenced):
			fenced = true
		default:
			t.Fatalf("paused A: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
	if !fenced {
		t.Fatal("A kept issuing with its store unreachable for 3x the lease TTL")
	}

	// B gets the id once the lease has expired by the database's clock.
	b := NewMySQLLeaser(dbs[1], "proc-b", ttl)
	var gb *Generator
	for deadline := time.Now().Add(5 * ttl); gb == nil; {
		g, err := New(ctx, Options{Layout: layout, Worker: b})
		switch {
		case err == nil:
			gb = g
			t.Cleanup(func() { gb.Close() })
		case errors.Is(err, ErrNoFreeWorker) && time.Now().Before(deadline):
			time.Sleep(50 * time.Millisecond)
		default:
			t.Fatalf("B could not take the expired id: %v", err)
		}
	}
	if gb.Worker() != ga.Worker() {
		t.Fatalf("B got worker %d, A had %d", gb.Worker(), ga.Worker())
	}
	maxA := aIDs[len(aIDs)-1]
	for range 1000 {
		if id := mustNext(t, gb); id <= maxA {
			t.Fatalf("B issued %d, not above A's last %d under the same worker id", id, maxA)
		}
	}

	// A resumes: its renewal finds the row taken and it stops for good.
	a.paused.Store(false)
	lost := false
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline) && !lost; {
		id, err := ga.Next(ctx)
		if err == nil {
			t.Fatalf("A issued %d after its lease passed to B", id)
		}
		lost = errors.Is(err, ErrLeaseLost)
		time.Sleep(20 * time.Millisecond)
	}
	if !lost {
		t.Fatal("A never noticed that its lease was taken")
	}
	if _, err := ga.Next(ctx); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("A after loss: %v", err)
	}
	// A's Close must not release B's lease.
	ga.Close()
	if o := rowOwner(t, dbs[0], gb.Worker()); !strings.HasPrefix(o, "proc-b#") {
		t.Fatalf("row owner %q after A closed, want B", o)
	}
	mustNext(t, gb)
}

func TestTwoLeasedGeneratorsUnique(t *testing.T) {
	dbs := store(t, "sf_unique", 2)
	var gens []*Generator
	for i, db := range dbs {
		gens = append(gens, newGen(t, Options{Worker: NewMySQLLeaser(db, "proc-"+string(rune('a'+i)), 5*time.Second)}))
	}
	if gens[0].Worker() == gens[1].Worker() {
		t.Fatalf("both generators hold worker %d", gens[0].Worker())
	}
	const perGoroutine = 5000
	results := make([][]int64, 8)
	var wg sync.WaitGroup
	for i := range results {
		g := gens[i%2]
		wg.Go(func() {
			ids, err := g.NextN(context.Background(), perGoroutine, nil)
			if err != nil {
				t.Error(err)
			}
			results[i] = ids
		})
	}
	wg.Wait()
	seen := map[int64]bool{}
	for _, ids := range results {
		for _, id := range ids {
			if id <= 0 || seen[id] {
				t.Fatalf("id %d duplicate or not positive", id)
			}
			seen[id] = true
		}
	}
	if len(seen) != len(results)*perGoroutine {
		t.Fatalf("%d distinct ids, want %d", len(seen), len(results)*perGoroutine)
	}
}

func TestLeasedStartBehindStoredHighWater(t *testing.T) {
	db := store(t, "sf_behind", 1)[0]
	ctx := context.Background()
	now := time.Now()
	ahead := now.Add(2 * time.Second).UnixMilli()
	if _, err := db.Exec("INSERT INTO leaf_worker VALUES (0, '', 0, ?)", ahead); err != nil {
		t.Fatal(err)
	}
	clk := newFakeClock(now)
	g := newGen(t, Options{Clock: clk, Worker: NewMySQLLeaser(db, "p", 30*time.Second), MaxBackward: 5 * time.Second})
	if g.Worker() != 0 {
		t.Fatalf("worker %d", g.Worker())
	}
	if s := clk.Slept(); s < time.Second {
		t.Fatalf("slept %v behind a mark 2s ahead", s)
	}
	if tm := g.Layout().Decode(mustNext(t, g)).Time; tm.UnixMilli() < ahead {
		t.Fatalf("issued at %v, below the previous holder's mark", tm)
	}
	g.Close()

	// Far ahead: passed over (the next id is taken), and the id is left
	// free with its mark intact.
	far := now.Add(time.Hour).UnixMilli()
	db.Exec("UPDATE leaf_worker SET last_timestamp = ? WHERE worker_id = 0", far)
	g2, err := New(ctx, Options{Clock: newFakeClock(now), Worker: NewMySQLLeaser(db, "p", 30*time.Second)})
	if err != nil || g2.Worker() != 1 {
		t.Fatalf("%v, want worker 1", err)
	}
	g2.Close()
	// A fixed id cannot be passed over: refused.
	_, err = New(ctx, Options{Clock: newFakeClock(now), Worker: NewMySQLLeaser(db, "p", 30*time.Second).Fixed(0)})
	if !errors.Is(err, ErrClockBackward) {
		t.Fatalf("%v, want ErrClockBackward", err)
	}
	var owner string
	var ts int64
	db.QueryRow("SELECT owner, last_timestamp FROM leaf_worker WHERE worker_id = 0").Scan(&owner, &ts)
	if owner != "" || ts != far {
		t.Fatalf("after refusing: owner %q last_timestamp %d, want free with %d", owner, ts, far)
	}
}

func TestLeasedRestartWithStoreDownRefuses(t *testing.T) {
	db := store(t, "sf_down", 1)[0]
	file := filepath.Join(t.TempDir(), "state")
	g := newGen(t, Options{Worker: NewMySQLLeaser(db, "p", 5*time.Second), StateFile: file})
	mustNext(t, g)
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	// Port 1 on loopback: connection refused, like a store that is down.
	down, err := sql.Open("mysql", "root@tcp(127.0.0.1:1)/x?timeout=1s")
	if err != nil {
		t.Fatal(err)
	}
	defer down.Close()
	_, err = New(context.Background(), Options{Worker: NewMySQLLeaser(down, "p", 5*time.Second), StateFile: file})
	if err == nil || !strings.Contains(err.Error(), "remembers worker 0") {
		t.Fatalf("restart with the store down: %v", err)
	}
}

// TestLeaserPassesOverIDsAheadOfClock: a free id whose
// recorded high-water mark is 60 s ahead of the clock would make its taker
// refuse ("clock ... behind"); the leaser passes it over and the generator
// starts on the next free id without waiting.
func TestLeaserPassesOverIDsAheadOfClock(t *testing.T) {
	db := store(t, "sf_ahead", 1)[0]
	ctx := context.Background()
	clk := newFakeClock(base)
	ahead := base.Add(time.Minute).UnixMilli()
	if _, err := db.Exec("INSERT INTO leaf_worker VALUES (0, '', 0, ?), (1, 'dead#x', 0, ?)", ahead, base.Add(-time.Second).UnixMilli()); err != nil {
		t.Fatal(err)
	}
	l := NewMySQLLeaser(db, "p", 30*time.Second)
	got, err := l.Acquire(ctx, 3, clk.Now().Add(5*time.Second))
	if err != nil || got.Worker != 1 {
		t.Fatalf("Acquire = %+v, %v; want worker 1 (0 is a minute ahead)", got, err)
	}
	l.Release(ctx, got, base)

	// Ids 0-3 only, so that three generators hold every usable one.
	small := Layout{TimeBits: 41, WorkerBits: 2, SequenceBits: 12}
	var gens []*Generator
	for range 3 {
		g := newGen(t, Options{Clock: clk, Layout: small, Worker: NewMySQLLeaser(db, "p", 30*time.Second), MaxBackward: 5 * time.Second})
		if g.Worker() == 0 {
			t.Fatalf("generator took worker 0, whose mark is a minute ahead")
		}
		gens = append(gens, g)
	}
	if s := clk.Slept(); s > time.Second {
		t.Fatalf("generators waited %v for the clock", s)
	}
	if gens[0].Worker() != 1 || gens[1].Worker() != 2 || gens[2].Worker() != 3 {
		t.Fatalf("workers %d %d %d, want 1 2 3", gens[0].Worker(), gens[1].Worker(), gens[2].Worker())
	}
	// All other ids held: the error says why worker 0 was not taken.
	_, err = New(ctx, Options{Clock: clk, Layout: small, Worker: NewMySQLLeaser(db, "p", 30*time.Second)})
	if !errors.Is(err, ErrNoFreeWorker) || !strings.Contains(err.Error(), "high-water marks after") {
		t.Fatalf("all usable ids held: %v", err)
	}
	// The bad row is untouched, still free for a process whose clock has
	// caught up.
	if o := rowOwner(t, db, 0); o != "" {
		t.Fatalf("row 0 owner %q", o)
	}
}

// TestFixedWorkerRegistered: a fixed id is registered in
// leaf_worker like a leased one; a second process asking for it, fixed or
// the id an auto process leased, is refused with the holder's host, pid
// and lease expiry; it is free again after a release or once the lease
// expired, and the next holder starts above the last one's mark.
func TestFixedWorkerRegistered(t *testing.T) {
	dbs := store(t, "sf_fixed", 2)
	ctx := context.Background()
	const ttl = 2 * time.Second
	a := NewMySQLLeaser(dbs[0], "hosta:4242:127.0.0.1:3307", ttl)
	b := NewMySQLLeaser(dbs[1], "hostb:77:127.0.0.1:3308", ttl)

	ga := newGen(t, Options{Worker: a.Fixed(7)})
	if ga.Worker() != 7 {
		t.Fatalf("worker %d", ga.Worker())
	}
	if o := rowOwner(t, dbs[0], 7); !strings.HasPrefix(o, "hosta:4242:") {
		t.Fatalf("row 7 owner %q", o)
	}
	mustNext(t, ga)

	_, err := New(ctx, Options{Worker: b.Fixed(7)})
	var held *WorkerHeldError
	if !errors.As(err, &held) || !errors.Is(err, ErrWorkerHeld) {
		t.Fatalf("second holder of 7: %v, want WorkerHeldError", err)
	}
	if held.Host != "hosta" || held.PID != "4242" || held.In <= 0 || held.In > ttl {
		t.Fatalf("held error %+v", held)
	}
	for _, want := range []string{"worker id 7", "host hosta", "pid 4242", "expires at"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}

	// An id an auto leaser holds is refused to a fixed holder too, and the
	// auto leaser passes over fixed holdings.
	auto, err := a.Acquire(ctx, 1023, time.Time{})
	if err != nil || auto.Worker != 0 {
		t.Fatalf("auto acquire: %+v %v", auto, err)
	}
	if _, err := b.Fixed(0).Acquire(ctx, 1023, time.Time{}); !errors.Is(err, ErrWorkerHeld) {
		t.Fatalf("fixed 0 while auto holds it: %v", err)
	}
	for range 6 {
		if _, err := a.Acquire(ctx, 1023, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	if l, err := a.Acquire(ctx, 1023, time.Time{}); err != nil || l.Worker != 8 {
		t.Fatalf("auto leaser after 0..6: %+v %v, want 8 (7 is fixed)", l, err)
	}

	// Released on close: free at once, and the next holder starts above
	// everything the first one issued.
	last := mustNext(t, ga)
	if err := ga.Close(); err != nil {
		t.Fatal(err)
	}
	gb := newGen(t, Options{Worker: b.Fixed(7)})
	if id := mustNext(t, gb); id <= last {
		t.Fatalf("next holder issued %d, not above %d", id, last)
	}
	// Abandoned (a crash): refused until the lease expired by the store's
	// clock, then taken.
	gb.abandon()
	if _, err := a.Fixed(7).Acquire(ctx, 1023, time.Time{}); !errors.Is(err, ErrWorkerHeld) {
		t.Fatalf("right after the holder crashed: %v", err)
	}
	deadline := time.Now().Add(3 * ttl)
	for {
		l, err := a.Fixed(7).Acquire(ctx, 1023, time.Time{})
		if err == nil {
			if l.HighWater.IsZero() {
				t.Fatal("took over without the previous holder's mark")
			}
			break
		}
		if !errors.Is(err, ErrWorkerHeld) || time.Now().After(deadline) {
			t.Fatalf("after expiry: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestLeaserStoreDownIsTransient: errors reaching the store are marked
// ErrStoreUnavailable (callers retry), a live holder is not.
func TestLeaserStoreDownIsTransient(t *testing.T) {
	down, err := sql.Open("mysql", "root@tcp(127.0.0.1:1)/x?timeout=1s")
	if err != nil {
		t.Fatal(err)
	}
	defer down.Close()
	l := NewMySQLLeaser(down, "p", time.Second)
	if _, err := l.Acquire(context.Background(), 3, time.Time{}); !errors.Is(err, ErrStoreUnavailable) {
		t.Fatalf("auto: %v", err)
	}
	if _, err := l.Fixed(3).Acquire(context.Background(), 3, time.Time{}); !errors.Is(err, ErrStoreUnavailable) {
		t.Fatalf("fixed: %v", err)
	}
}
