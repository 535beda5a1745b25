package snowflake

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

// boundLeaser is a memLeaser whose lease is bound to the process's
// identity (Lease.Bound), from the store's high-water mark hw.
type boundLeaser struct {
	memLeaser
	hw time.Time
}

func (b *boundLeaser) Acquire(context.Context, int64, time.Time) (Lease, error) {
	return Lease{Worker: 3, Token: "id=p1|t", Bound: true, HighWater: b.hw}, nil
}

// A generator whose worker id is bound to its identity issues through a
// store outage of any length, compressed here: renewals fail for 6 lease
// TTLs (1 s each, renewed every 100 ms with a 100 ms margin, so that a
// loaded machine's late ticks leave 800 ms of room; a 10-minute outage is
// 20 of the default 30 s, and each failed renewal extends the generator
// the same way however many came before), and
// every NEXTVAL meanwhile is answered, strictly increasing, never fenced.
// The state file's high-water mark moves on, and a restart of the same
// identity after a crash (the same id, the store's mark from before the
// outage) starts above every ID issued during it. When the store answers
// again, renewals resume.
func TestBoundIssuesThroughOutage(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	var logs testdb.LockedBuffer
	src := &boundLeaser{memLeaser: memLeaser{ttl: time.Second}}
	g := newGen(t, Options{Worker: src, StateFile: state, RenewEvery: 100 * time.Millisecond, FenceMargin: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	prev := mustNext(t, g)

	src.failing.Store(true)
	from := src.renews.Load()
	outage := 6 * src.ttl
	start := time.Now()
	issued := 0
	pace := time.NewTicker(time.Millisecond) // a client's pace
	defer pace.Stop()
	for time.Since(start) < outage {
		<-pace.C
		id, err := g.Next(context.Background())
		if err != nil {
			t.Fatalf("NEXTVAL %v into the outage (%d renewals failed): %v\n%s", time.Since(start).Round(time.Millisecond), src.renews.Load()-from, err, logs.String())
		}
		if id <= prev {
			t.Fatalf("ID %d after %d: not increasing", id, prev)
		}
		prev = id
		issued++
		if f, _ := g.Health(); f {
			t.Fatalf("fenced %v into the outage", time.Since(start))
		}
	}
	if n := src.renews.Load() - from; n < 20 {
		t.Fatalf("only %d renewals failed during the outage: the outage was not exercised", n)
	}
	if strings.Contains(logs.String(), "snowflake generator fenced") || !strings.Contains(logs.String(), "the worker id is bound to this proxy's identity") {
		t.Fatalf("log:\n%s", logs.String())
	}
	st, ok, err := readState(state)
	if err != nil || !ok {
		t.Fatalf("state file: %v %v", ok, err)
	}
	lastTick := (prev >> (g.layout.WorkerBits + g.layout.SequenceBits))
	lastAt := g.layout.Epoch.Add(time.Duration(lastTick) * g.layout.Unit)
	if !st.highWater().After(lastAt) {
		t.Fatalf("state file high-water mark %s is not after the last ID's tick %s", st.highWater(), lastAt)
	}

	// A crash and a restart of the same identity during the outage: the
	// store still has the mark from before it; the state file has more,
	// up to a TTL ahead, which the restart waits out (not refused as a
	// clock behind, though max_backward is smaller).
	src2 := &boundLeaser{memLeaser: memLeaser{ttl: time.Second}, hw: start}
	g2 := newGen(t, Options{Worker: src2, StateFile: state, RenewEvery: 100 * time.Millisecond, FenceMargin: 100 * time.Millisecond,
		MaxBackward: time.Millisecond})
	if first := mustNext(t, g2); first <= prev {
		t.Fatalf("after a restart of the same identity the first ID %d is not above the last before it, %d", first, prev)
	}
	g2.Close()

	src.failing.Store(false)
	testwait.For(t, "renewals to succeed again", func() bool {
		return strings.Contains(logs.String(), "snowflake worker lease renewed after failures")
	}, testwait.Detail(logs.String))
	mustNext(t, g)
}

// Bound but without a state file, a failed renewal fences as before:
// nothing would keep the high-water mark for a restart.
func TestBoundWithoutStateFileFences(t *testing.T) {
	src := &boundLeaser{memLeaser: memLeaser{ttl: 300 * time.Millisecond}}
	g := newGen(t, Options{Worker: src, RenewEvery: 50 * time.Millisecond})
	mustNext(t, g)
	src.failing.Store(true)
	testwait.For(t, "the generator fenced", func() bool { f, _ := g.Health(); return f })
}

// On MariaDB: an id bound to an identity is not taken by another identity
// (bound or not) even long after its heartbeat expired (a store outage
// longer than the TTL, a crashed proxy); the same identity takes it back,
// with its high-water mark, and waits while a live holding of its own
// identity has it; released (a clean shutdown), it is free for anyone.
func TestBoundIDStaysWithItsIdentity(t *testing.T) {
	dbs := store(t, "sf_bound", 4)
	ctx := context.Background()
	bind := func(db *sql.DB, identity string) *MySQLLeaser {
		l, err := NewMySQLLeaser(db, "host:"+identity, 10*time.Second).BindTo(identity)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	p1 := bind(dbs[0], "p1")
	l1, err := p1.Acquire(ctx, 1023, time.Time{})
	if err != nil || l1.Worker != 0 || !l1.Bound {
		t.Fatalf("p1 acquire: %+v %v", l1, err)
	}
	if err := p1.Renew(ctx, l1, time.UnixMilli(1_800_000_000_000)); err != nil {
		t.Fatal(err)
	}
	// An outage far longer than the TTL: the heartbeat is old.
	if _, err := dbs[0].Exec("UPDATE leaf_worker SET heartbeat = heartbeat - 3600000 WHERE worker_id = 0"); err != nil {
		t.Fatal(err)
	}
	l2, err := bind(dbs[1], "p2").Acquire(ctx, 1023, time.Time{})
	if err != nil || l2.Worker == 0 {
		t.Fatalf("another identity took %d (%v): the id bound to p1 must stay p1's", l2.Worker, err)
	}
	l3, err := NewMySQLLeaser(dbs[2], "unbound", 10*time.Second).Acquire(ctx, 1023, time.Time{})
	if err != nil || l3.Worker == 0 || l3.Bound {
		t.Fatalf("an unbound leaser took %+v (%v): the id bound to p1 must stay p1's", l3, err)
	}
	// p1 renews after the outage: the row is still its own.
	if err := p1.Renew(ctx, l1, time.UnixMilli(1_800_000_000_000)); err != nil {
		t.Fatalf("p1's renewal after the outage: %v", err)
	}
	// p1 restarted (a new process, same identity) while its old holding
	// still looks alive: it waits; once expired, it gets its id back.
	p1b := bind(dbs[3], "p1")
	if _, err := p1b.Acquire(ctx, 1023, time.Time{}); !errors.Is(err, ErrIdentityBusy) {
		t.Fatalf("same identity while its holding is live: %v, want ErrIdentityBusy", err)
	}
	if _, err := dbs[0].Exec("UPDATE leaf_worker SET heartbeat = heartbeat - 3600000 WHERE worker_id = 0"); err != nil {
		t.Fatal(err)
	}
	l4, err := p1b.Acquire(ctx, 1023, time.Time{})
	if err != nil || l4.Worker != 0 || l4.HighWater.UnixMilli() != 1_800_000_000_000 {
		t.Fatalf("p1 after a restart: %+v %v; want worker 0 with its high-water mark", l4, err)
	}
	if err := p1.Renew(ctx, l1, time.UnixMilli(1_800_000_000_000)); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("the old p1 process's renewal after the new one took over: %v, want ErrLeaseLost", err)
	}
	if err := p1b.Release(ctx, l4, time.UnixMilli(1_800_000_000_001)); err != nil {
		t.Fatal(err)
	}
	l5, err := NewMySQLLeaser(dbs[2], "unbound2", 10*time.Second).Acquire(ctx, 1023, time.Time{})
	if err != nil || l5.Worker != 0 {
		t.Fatalf("after p1 released its id, another took %+v (%v); want 0", l5, err)
	}
	if _, err := NewMySQLLeaser(dbs[0], "x", time.Second).BindTo("a|b"); err == nil {
		t.Fatal("an identity with | accepted")
	}
}
