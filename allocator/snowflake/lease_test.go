package snowflake

import (
	"context"
	"database/sql"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/allocator/schema"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
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
		testdb.Unavailable(t, mariadb.err)
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
						time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond) // a random back-off: contention, not a wait
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
							time.Sleep(ttl / 4) // hold the lease a while before renewing: the workload, not a wait
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
	// The deadline is the property: fenced before its lease could expire.
	testwait.For(t, "A to stop issuing with its store unreachable (3x the lease TTL)", func() bool {
		id, err := ga.Next(ctx)
		switch {
		case err == nil:
			aIDs = append(aIDs, id)
		case errors.Is(err, ErrFenced):
			return true
		default:
			t.Fatalf("paused A: %v", err)
		}
		return false
	}, testwait.Within(3*ttl))

	// B gets the id once the lease has expired by the database's clock.
	b := NewMySQLLeaser(dbs[1], "proc-b", ttl)
	gb := testwait.Value(t, "B to take the expired id", func() (*Generator, bool) {
		g, err := New(ctx, Options{Layout: layout, Worker: b})
		if err != nil && !errors.Is(err, ErrNoFreeWorker) {
			t.Fatalf("B could not take the expired id: %v", err)
		}
		return g, err == nil
	})
	t.Cleanup(func() { gb.Close() })
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
	testwait.For(t, "A to notice that its lease was taken", func() bool {
		id, err := ga.Next(ctx)
		if err == nil {
			t.Fatalf("A issued %d after its lease passed to B", id)
		}
		return errors.Is(err, ErrLeaseLost)
	})
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
