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

	"github.com/leafproxy/leafproxy/internal/testdb"
	"github.com/leafproxy/leafproxy/internal/testwait"
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
