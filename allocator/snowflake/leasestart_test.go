package snowflake

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

// Generators over leased worker ids: unique IDs, starts behind the
// stored high-water mark or with the store down, ids ahead of the clock,
// fixed ids registered like leased ones.

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
	l := testwait.Value(t, "the takeover after the lease expired", func() (Lease, bool) {
		l, err := a.Fixed(7).Acquire(ctx, 1023, time.Time{})
		if err != nil && !errors.Is(err, ErrWorkerHeld) {
			t.Fatalf("after expiry: %v", err)
		}
		return l, err == nil
	})
	if l.HighWater.IsZero() {
		t.Fatal("took over without the previous holder's mark")
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
