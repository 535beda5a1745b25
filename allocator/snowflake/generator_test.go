package snowflake

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is an injected clock that moves only when told, or when the
// generator sleeps on it (it then jumps forward by the sleep).
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	slept  time.Duration
	sleeps int
}

func newFakeClock(t time.Time) *fakeClock { return &fakeClock{now: t} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.slept += d
	c.sleeps++
	c.mu.Unlock()
	return nil
}

func (c *fakeClock) Slept() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.slept
}

// base is a fixed instant well inside the default layout.
var base = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newGen(t *testing.T, opts Options) *Generator {
	t.Helper()
	if opts.Worker == nil {
		opts.Worker = FixedWorker(5)
	}
	g, err := New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

func mustNext(t *testing.T, g *Generator) int64 {
	t.Helper()
	id, err := g.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestNextStrictlyIncreasingAndDecodes(t *testing.T) {
	clk := newFakeClock(base)
	g := newGen(t, Options{Clock: clk, Worker: FixedWorker(77)})
	prev := int64(0)
	for i := range 10000 {
		if i%100 == 0 {
			clk.Advance(time.Millisecond)
		}
		id := mustNext(t, g)
		if id <= prev {
			t.Fatalf("id %d after %d", id, prev)
		}
		prev = id
		p := g.Layout().Decode(id)
		if p.Worker != 77 {
			t.Fatalf("worker %d", p.Worker)
		}
		if got, want := p.Time, clk.Now().Truncate(time.Millisecond); !got.Equal(want) {
			t.Fatalf("decoded time %v, clock %v", got, want)
		}
	}
}

func TestSmallBackwardJumpWaitsThenContinues(t *testing.T) {
	clk := newFakeClock(base)
	g := newGen(t, Options{Clock: clk, MaxBackward: 5 * time.Millisecond})
	var ids []int64
	for range 3 {
		clk.Advance(time.Millisecond)
		ids = append(ids, mustNext(t, g))
	}
	lastTick := g.Layout().Decode(ids[len(ids)-1]).Ticks
	clk.Advance(-3 * time.Millisecond) // NTP-like step back, under the bound
	for range 5 {
		ids = append(ids, mustNext(t, g))
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("id %d after %d: not strictly increasing across the backward jump", ids[i], ids[i-1])
		}
	}
	// It waited (about the 3 ms) rather than issuing from the past.
	if s := clk.Slept(); s < 2*time.Millisecond || s > 4*time.Millisecond {
		t.Fatalf("slept %v, want about 3ms", s)
	}
	for _, id := range ids[3:] {
		if tk := g.Layout().Decode(id).Ticks; tk < lastTick {
			t.Fatalf("issued tick %d below last tick %d", tk, lastTick)
		}
	}
}

func TestLargeBackwardJumpRefuses(t *testing.T) {
	clk := newFakeClock(base)
	g := newGen(t, Options{Clock: clk, MaxBackward: 5 * time.Millisecond})
	before := mustNext(t, g)
	clk.Advance(-time.Second)
	for range 3 {
		id, err := g.Next(context.Background())
		if !errors.Is(err, ErrClockBackward) {
			t.Fatalf("got id %d err %v, want ErrClockBackward", id, err)
		}
		if !strings.Contains(err.Error(), "max_backward") {
			t.Fatalf("error does not explain itself: %v", err)
		}
	}
	if clk.Slept() != 0 {
		t.Fatalf("slept %v on a jump beyond the bound", clk.Slept())
	}
	if ids, err := g.NextN(context.Background(), 3, nil); err == nil || len(ids) != 0 {
		t.Fatalf("NextN during a large jump: %v, %v", ids, err)
	}
	clk.Advance(time.Second + time.Millisecond) // the clock catches up
	if after := mustNext(t, g); after <= before {
		t.Fatalf("after recovery %d <= %d", after, before)
	}
}

func TestSequenceOverflowWaitsForNextTick(t *testing.T) {
	clk := newFakeClock(base.Add(300 * time.Microsecond))
	g := newGen(t, Options{Clock: clk, RandomStart: 1})
	l := g.Layout()
	ids, err := g.NextN(context.Background(), 4096, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := l.Decode(ids[0])
	for i, id := range ids {
		p := l.Decode(id)
		if p.Ticks != first.Ticks || p.Sequence != int64(i) {
			t.Fatalf("id %d: %+v, want tick %d seq %d", i, p, first.Ticks, i)
		}
	}
	if clk.Slept() != 0 {
		t.Fatalf("slept %v within one tick's 4096 IDs", clk.Slept())
	}
	next := mustNext(t, g)
	p := l.Decode(next)
	if p.Ticks != first.Ticks+1 || p.Sequence != 0 {
		t.Fatalf("4097th id %+v, want tick %d seq 0", p, first.Ticks+1)
	}
	// It waited exactly the rest of the tick, not longer.
	if s := clk.Slept(); s != 700*time.Microsecond {
		t.Fatalf("slept %v, want the 700us left in the tick", s)
	}
}

func TestTimeBitsOverflowRefuses(t *testing.T) {
	l := Layout{TimeBits: 16, WorkerBits: 4, SequenceBits: 4, Unit: time.Millisecond, Epoch: base}
	last := base.Add(time.Duration(l.MaxTicks()) * time.Millisecond)
	clk := newFakeClock(last)
	g := newGen(t, Options{Clock: clk, Layout: l, RandomStart: 1})
	ids, err := g.NextN(context.Background(), 16, nil) // the whole last tick
	if err != nil {
		t.Fatal(err)
	}
	if ids[15] <= 0 || l.Decode(ids[15]).Ticks != l.MaxTicks() {
		t.Fatalf("last id %d", ids[15])
	}
	// The sequence is used up in the last tick: no tick follows.
	if id, err := g.Next(context.Background()); !errors.Is(err, ErrTimeOverflow) {
		t.Fatalf("got %d, %v; want ErrTimeOverflow", id, err)
	}
	clk.Advance(time.Hour)
	id, err := g.Next(context.Background())
	if !errors.Is(err, ErrTimeOverflow) {
		t.Fatalf("got %d, %v; want ErrTimeOverflow", id, err)
	}
	if !strings.Contains(err.Error(), "ran out at") {
		t.Fatalf("error does not say when the layout ran out: %v", err)
	}
}

func TestRandomStartSpreadsParity(t *testing.T) {
	share := func(randomStart int) float64 {
		clk := newFakeClock(base)
		g := newGen(t, Options{Clock: clk, RandomStart: randomStart})
		even := 0
		for range 2000 { // low traffic: one ID per tick
			clk.Advance(time.Millisecond)
			if mustNext(t, g)%2 == 0 {
				even++
			}
		}
		return float64(even) / 2000
	}
	if s := share(0); s < 0.40 || s > 0.60 {
		t.Fatalf("default random start: even share %.3f, want 0.40-0.60", s)
	}
	// Without the offset every ID is even: the skew the offset exists for.
	if s := share(1); s != 1 {
		t.Fatalf("random start off: even share %.3f, want 1", s)
	}
}

func TestRestartBehindPersistedTimestamp(t *testing.T) {
	file := filepath.Join(t.TempDir(), "snowflake.state")
	clk := newFakeClock(base)
	g1, err := New(context.Background(), Options{Clock: clk, Worker: FixedWorker(3), StateFile: file})
	if err != nil {
		t.Fatal(err)
	}
	var last int64
	for range 50 {
		clk.Advance(time.Millisecond)
		last = mustNext(t, g1)
	}
	if err := g1.Close(); err != nil {
		t.Fatal(err)
	}
	st, ok, err := readState(file)
	if err != nil || !ok || st.Worker != 3 {
		t.Fatalf("state after close: %+v %v %v", st, ok, err)
	}
	if !st.highWater().After(g1.Layout().Decode(last).Time) {
		t.Fatalf("state high-water %v not above the last issued tick", st.highWater())
	}

	t.Run("small lag waits", func(t *testing.T) {
		clk2 := newFakeClock(clk.Now().Add(-2 * time.Second))
		g2 := newGen(t, Options{Clock: clk2, Worker: FixedWorker(3), StateFile: file, MaxBackward: 5 * time.Second})
		if s := clk2.Slept(); s < 2*time.Second || s > 2*time.Second+2*time.Millisecond {
			t.Fatalf("slept %v at start, want about 2s", s)
		}
		if id := mustNext(t, g2); id <= last {
			t.Fatalf("id %d after restart not above %d from before", id, last)
		}
		g2.Close()
	})
	t.Run("large lag refuses", func(t *testing.T) {
		clk3 := newFakeClock(clk.Now().Add(-time.Minute))
		_, err := New(context.Background(), Options{Clock: clk3, Worker: FixedWorker(3), StateFile: file, MaxBackward: 5 * time.Second})
		if !errors.Is(err, ErrClockBackward) {
			t.Fatalf("err %v, want ErrClockBackward", err)
		}
		// The error names both times.
		for _, want := range []string{clk3.Now().UTC().Format(time.RFC3339Nano), "high-water mark", "2026-03-01T12:00:"} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q lacks %q", err, want)
			}
		}
	})
	t.Run("other worker id ignores the mark", func(t *testing.T) {
		clk4 := newFakeClock(clk.Now().Add(-time.Minute))
		g4 := newGen(t, Options{Clock: clk4, Worker: FixedWorker(4), StateFile: filepath.Join(t.TempDir(), "copy")})
		mustNext(t, g4)
	})
}

func TestCrashRestartFixedWorkerHonoursReservation(t *testing.T) {
	file := filepath.Join(t.TempDir(), "state")
	clk := newFakeClock(base)
	g1, err := New(context.Background(), Options{Clock: clk, Worker: FixedWorker(9), StateFile: file, PersistEvery: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var issued []int64
	// Run past the first reservation (3s): the generator must push the
	// mark in the file forward before it issues beyond it.
	for range 40 {
		clk.Advance(100 * time.Millisecond)
		id := mustNext(t, g1)
		issued = append(issued, id)
		st, _, err := readState(file)
		if err != nil {
			t.Fatal(err)
		}
		if tm := g1.Layout().Decode(id).Time; !tm.Before(st.highWater()) {
			t.Fatalf("issued at %v, at or past the persisted mark %v", tm, st.highWater())
		}
	}
	g1.abandon() // crash: no release, no final write
	// The machine comes back with its clock where it was at the crash.
	clk2 := newFakeClock(clk.Now())
	g2 := newGen(t, Options{Clock: clk2, Worker: FixedWorker(9), StateFile: file})
	if clk2.Slept() == 0 {
		t.Fatal("restart after a crash did not wait out the reservation")
	}
	for range 100 {
		if id := mustNext(t, g2); id <= issued[len(issued)-1] {
			t.Fatalf("id %d after crash restart not above %d", id, issued[len(issued)-1])
		}
	}
}

func TestCorruptStateFileRefuses(t *testing.T) {
	file := filepath.Join(t.TempDir(), "state")
	if err := os.WriteFile(file, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(context.Background(), Options{Worker: FixedWorker(1), StateFile: file}); err == nil {
		t.Fatal("started over a corrupt state file")
	}
}

// stubLease is a WorkerSource with a TTL whose renewals the test controls.
type stubLease struct {
	mu      sync.Mutex
	ttl     time.Duration
	renewFn func() error
	renews  int
	hw      time.Time
}

func (s *stubLease) Acquire(context.Context, int64, time.Time) (Lease, error) {
	return Lease{Worker: 2, Token: "t"}, nil
}
func (s *stubLease) Renew(_ context.Context, _ Lease, hw time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.renews++
	if s.renewFn != nil {
		if err := s.renewFn(); err != nil {
			return err
		}
	}
	s.hw = hw
	return nil
}
func (s *stubLease) Release(context.Context, Lease, time.Time) error { return nil }
func (s *stubLease) TTL() time.Duration                              { return s.ttl }

func TestFencingWithInjectedClock(t *testing.T) {
	clk := newFakeClock(base)
	src := &stubLease{ttl: time.Hour} // the background heartbeat never fires during the test
	g := newGen(t, Options{Clock: clk, Worker: src, FenceMargin: 10 * time.Minute})
	if src.renews != 1 {
		t.Fatalf("%d renewals before the first ID, want 1", src.renews)
	}
	// Every ID lies before the high-water mark recorded with the renewal.
	clk.Advance(49 * time.Minute)
	id := mustNext(t, g)
	if tm := g.Layout().Decode(id).Time; !tm.Before(src.hw) {
		t.Fatalf("issued at %v, not before the recorded mark %v", tm, src.hw)
	}
	// Paused past TTL-margin without a renewal: nothing is issued.
	clk.Advance(2 * time.Minute)
	if id, err := g.Next(context.Background()); !errors.Is(err, ErrFenced) {
		t.Fatalf("got %d, %v; want ErrFenced", id, err)
	}
	// A successful renewal resumes issuing.
	if err := g.refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	mustNext(t, g)
	// A renewal that finds the id taken stops the generator for good.
	src.mu.Lock()
	src.renewFn = func() error { return fmt.Errorf("held by x: %w", ErrLeaseLost) }
	src.mu.Unlock()
	if err := g.refresh(context.Background()); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("refresh: %v", err)
	}
	src.mu.Lock()
	src.renewFn = nil
	src.mu.Unlock()
	g.refresh(context.Background())
	if id, err := g.Next(context.Background()); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("after losing the lease: %d, %v", id, err)
	}
}

func TestConcurrentNextUniqueRealClock(t *testing.T) {
	g := newGen(t, Options{Worker: FixedWorker(1)})
	const workers, each = 8, 10000
	out := make([][]int64, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			ids := make([]int64, 0, each)
			for range each / 100 {
				var err error
				if ids, err = g.NextN(context.Background(), 50, ids); err != nil {
					t.Error(err)
					return
				}
				for range 50 {
					id, err := g.Next(context.Background())
					if err != nil {
						t.Error(err)
						return
					}
					ids = append(ids, id)
				}
			}
			out[w] = ids
		})
	}
	wg.Wait()
	seen := make(map[int64]bool, workers*each)
	for _, ids := range out {
		for i, id := range ids {
			if i > 0 && id <= ids[i-1] {
				t.Fatalf("one goroutine saw %d after %d", id, ids[i-1])
			}
			if id <= 0 || seen[id] {
				t.Fatalf("id %d duplicate or not positive", id)
			}
			seen[id] = true
		}
	}
	if len(seen) != workers*each {
		t.Fatalf("%d ids, want %d", len(seen), workers*each)
	}
}

func TestClosedGeneratorRefuses(t *testing.T) {
	g := newGen(t, Options{Worker: FixedWorker(1)})
	mustNext(t, g)
	g.Close()
	if _, err := g.Next(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
}
