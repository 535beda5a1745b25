package snowflake

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

// memLeaser is a WorkerSource in memory whose renewals fail on demand (a
// store that stops answering).
type memLeaser struct {
	ttl     time.Duration
	failing atomic.Bool
	renews  atomic.Int64 // Renew calls so far
}

func (m *memLeaser) Acquire(context.Context, int64, time.Time) (Lease, error) {
	return Lease{Worker: 3, Token: "t"}, nil
}
func (m *memLeaser) Renew(context.Context, Lease, time.Time) error {
	m.renews.Add(1)
	if m.failing.Load() {
		return errors.New("store unreachable (test)")
	}
	return nil
}
func (m *memLeaser) Release(context.Context, Lease, time.Time) error { return nil }
func (m *memLeaser) TTL() time.Duration                              { return m.ttl }

// A leased generator whose renewals fail logs the first failure (warn),
// fencing itself when it happens (error) and issuing again (info): once
// each, however many renewals fail in between.
func TestFenceLoggedOnce(t *testing.T) {
	var logs testdb.LockedBuffer
	src := &memLeaser{ttl: 600 * time.Millisecond}
	g := newGen(t, Options{Worker: src, RenewEvery: 50 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	mustNext(t, g)
	const (
		failed   = "snowflake worker lease renewal failed; retrying"
		fenced   = "snowflake generator fenced"
		unfenced = "snowflake generator unfenced"
		renewed  = "snowflake worker lease renewed after failures"
	)
	count := func(s string) int { return strings.Count(logs.String(), s) }

	src.failing.Store(true)
	testwait.For(t, "the generator fenced and its one fencing line", func() bool { f, _ := g.Health(); return f && count(fenced) == 1 }, testwait.Detail(logs.String))
	if _, err := g.Next(context.Background()); !errors.Is(err, ErrFenced) {
		t.Fatalf("Next while fenced: %v", err)
	}
	// Several more failed renewals (the renewal loop logs one's outcome
	// before it makes the next): nothing more at info level.
	moreRenewals := func(n int64) {
		t.Helper()
		from := src.renews.Load()
		testwait.For(t, fmt.Sprintf("%d more renewals", n), func() bool { return src.renews.Load() >= from+n }, testwait.Detail(logs.String))
	}
	moreRenewals(4)
	if count(failed) != 1 || count(fenced) != 1 || count(unfenced) != 0 {
		t.Fatalf("while fenced: %d failure, %d fenced, %d unfenced lines, want 1, 1, 0:\n%s",
			count(failed), count(fenced), count(unfenced), logs.String())
	}

	src.failing.Store(false)
	testwait.For(t, "the one unfencing line", func() bool { return count(unfenced) == 1 }, testwait.Detail(logs.String))
	mustNext(t, g)
	moreRenewals(3)
	if count(failed) != 1 || count(fenced) != 1 || count(unfenced) != 1 || count(renewed) != 1 {
		t.Fatalf("after: %d failure, %d fenced, %d unfenced, %d renewed lines, want 1 each:\n%s",
			count(failed), count(fenced), count(unfenced), count(renewed), logs.String())
	}
	if !strings.Contains(logs.String(), "level=ERROR msg=\"snowflake generator fenced") {
		t.Errorf("fencing not at error level:\n%s", logs.String())
	}
}

// hangLeaser is a memLeaser whose renewals, once hanging is set, wait
// until their context ends (a store that takes connections and never
// answers); inflight counts the renewals under way.
type hangLeaser struct {
	memLeaser
	hanging  atomic.Bool
	inflight atomic.Int64
}

func (h *hangLeaser) Renew(ctx context.Context, l Lease, hw time.Time) error {
	if !h.hanging.Load() {
		return h.memLeaser.Renew(ctx, l, hw)
	}
	h.inflight.Add(1)
	defer h.inflight.Add(-1)
	<-ctx.Done()
	return ctx.Err()
}

// lineWriter records, when a line containing what is written, the value
// of probe at that moment.
type lineWriter struct {
	testdb.LockedBuffer
	what  string
	probe func() int64
	seen  atomic.Int64 // probe+1 at the first such line; 0 before
}

func (w *lineWriter) Write(p []byte) (int, error) {
	if strings.Contains(string(p), w.what) {
		w.seen.CompareAndSwap(0, w.probe()+1)
	}
	return w.LockedBuffer.Write(p)
}

// The fencing is logged when it happens, also while a renewal hangs on a
// store that does not answer (each renewal may take up to the renewal
// interval): the line is written while the hung renewal is still under
// way, not after it gave up. With TTL 5 s, renewals every 3.5 s and a
// 1 s margin, the fence comes 4 s after the last renewal, 0.5 s into the
// hung one, which gives up at 7 s.
func TestFenceLoggedWhileRenewalHangs(t *testing.T) {
	src := &hangLeaser{memLeaser: memLeaser{ttl: 5 * time.Second}}
	w := &lineWriter{what: "snowflake generator fenced", probe: src.inflight.Load}
	g := newGen(t, Options{Worker: src, RenewEvery: 3500 * time.Millisecond, FenceMargin: time.Second,
		Logger: slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	mustNext(t, g)
	src.hanging.Store(true)
	testwait.For(t, "the fencing line", func() bool { return w.seen.Load() != 0 }, testwait.Detail(w.String))
	if got := w.seen.Load() - 1; got != 1 {
		t.Fatalf("renewals under way when the fencing was logged: %d, want 1 (logged only after the hung renewal gave up)\n%s", got, w.String())
	}
	if f, _ := g.Health(); !f {
		t.Fatalf("fencing logged, but the generator is not fenced")
	}
}
