package snowflake

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// persist writes the state file. Unless exact, the mark never moves back, so
// concurrent writers cannot shrink a reservation already relied on.
func (g *Generator) persist(ms int64, exact bool) (int64, error) {
	g.fileMu.Lock()
	defer g.fileMu.Unlock()
	if !exact && ms < g.fileHW {
		ms = g.fileHW
	}
	if err := writeState(g.stateFile, g.lease.Worker, ms); err != nil {
		return 0, err
	}
	g.fileHW = ms
	return ms, nil
}

// refresh renews the lease (leased) or pushes the state file's reservation
// forward (fixed), then moves the deadline. The high-water mark recorded is
// where the new deadline could at most take the generator, so whoever comes
// next starts above anything this one may issue.
func (g *Generator) refresh(ctx context.Context) error {
	sent := g.since()
	if g.ttl > 0 {
		hw := sent + g.ttl
		if err := g.src.Renew(ctx, g.lease, time.UnixMilli(g.ceilMs(hw))); err != nil {
			if errors.Is(err, ErrLeaseLost) {
				g.mu.Lock()
				if g.lost == nil {
					g.lost = fmt.Errorf("snowflake worker %d: %w", g.lease.Worker, err)
				}
				g.mu.Unlock()
				g.log.Error("snowflake worker lease lost; no more IDs from this generator", "worker", g.lease.Worker, "err", err)
				return err
			}
			if g.lease.Bound && g.stateFile != "" {
				return g.issueOn(sent, err)
			}
			// The first failure of a run is a warning; the rest are
			// debug detail: the generator fencing itself is logged once
			// (noteFence).
			if g.renewFailing++; g.renewFailing == 1 {
				g.log.Warn("snowflake worker lease renewal failed; retrying (the generator fences itself if none succeeds in time)",
					"worker", g.lease.Worker, "err", err, "fence_in", max(g.untilFence(), 0).Round(time.Millisecond).String())
			} else {
				g.log.Debug("snowflake worker lease renewal failed", "worker", g.lease.Worker, "err", err, "failures", g.renewFailing)
			}
			return fmt.Errorf("renew lease of worker %d: %w", g.lease.Worker, err)
		}
		if g.renewFailing > 0 {
			g.log.Info("snowflake worker lease renewed after failures", "worker", g.lease.Worker, "failures", g.renewFailing)
			g.renewFailing = 0
		}
		if g.stateFile != "" {
			if _, err := g.persist(g.ceilMs(hw), false); err != nil {
				g.log.Warn("snowflake state file not updated", "err", err)
			}
		}
		g.mu.Lock()
		if d := sent + g.ttl - g.margin; d > g.deadline {
			g.deadline, g.renewedAt = d, sent
		}
		g.mu.Unlock()
		return nil
	}
	written, err := g.persist(g.ceilMs(sent+3*g.persistEvery), false)
	if err != nil {
		g.log.Warn("snowflake state file not updated", "err", err)
		return err
	}
	g.mu.Lock()
	g.deadline = max(g.deadline, time.UnixMilli(written).Sub(g.layout.Epoch))
	g.mu.Unlock()
	return nil
}

// issueOn is a failed renewal of a bound lease (Lease.Bound): no other
// process can take the id while the store records it bound to this
// identity, so the generator goes on issuing through a store outage of
// any length, as a fixed worker id does: the state file records how far
// it may issue (sent + TTL) before the deadline moves there, so a restart
// of the same identity, which gets the id back, starts above every ID
// issued meanwhile. A state file that cannot be written fences it as a
// failed renewal would.
func (g *Generator) issueOn(sent time.Duration, renewErr error) error {
	written, err := g.persist(g.ceilMs(sent+g.ttl), false)
	if err != nil {
		g.log.Warn("snowflake state file not updated", "err", err)
		return fmt.Errorf("renew lease of worker %d: %w (and the state file: %v)", g.lease.Worker, renewErr, err)
	}
	if g.renewFailing++; g.renewFailing == 1 {
		g.log.Warn("snowflake worker lease renewal failed; the worker id is bound to this proxy's identity, so it issues on (the state file keeps its high-water mark) until the store answers",
			"worker", g.lease.Worker, "err", renewErr)
	} else {
		g.log.Debug("snowflake worker lease renewal failed; issuing on the bound id", "worker", g.lease.Worker, "err", renewErr, "failures", g.renewFailing)
	}
	g.mu.Lock()
	if d := min(sent+g.ttl, time.UnixMilli(written).Sub(g.layout.Epoch)) - g.margin; d > g.deadline {
		g.deadline = d
	}
	g.mu.Unlock()
	return nil
}

func (g *Generator) loop() {
	defer close(g.done)
	every := g.persistEvery
	if g.ttl > 0 {
		every = g.renewEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		// A leased generator fences itself at its deadline, which may
		// come between ticks or while a renewal hangs on a store that
		// does not answer: a timer of its own logs it then (noteFence is
		// safe from any goroutine and reads the deadline in force, so a
		// renewal that succeeds first makes it log nothing).
		var fence *time.Timer
		if d := g.untilFence(); g.ttl > 0 && d > 0 {
			fence = time.AfterFunc(d+time.Millisecond, g.noteFence)
		}
		select {
		case <-g.stop:
			stopTimer(fence)
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), every)
		err := g.refresh(ctx)
		cancel()
		stopTimer(fence)
		if errors.Is(err, ErrLeaseLost) {
			return
		}
		g.noteFence()
	}
}

// stopTimer stops t, if any.
func stopTimer(t *time.Timer) {
	if t != nil {
		t.Stop()
	}
}

// untilFence is how long until a leased generator fences itself unless a
// renewal succeeds (negative: fenced).
func (g *Generator) untilFence() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.deadline - g.since()
}

// noteFence logs a leased generator fencing itself (error) and issuing
// again (info), once each: the state changes, not every look at it.
func (g *Generator) noteFence() {
	if g.ttl == 0 {
		return
	}
	now := time.Now()
	if fenced, lost := g.Health(); fenced && !lost {
		if g.fence.Fail(now) {
			g.log.Error("snowflake generator fenced: its worker lease was not renewed in time (is the store reachable?); "+
				"snowflake IDs of this layout are refused until a renewal succeeds",
				"worker", g.lease.Worker, "layout", g.layout.String())
		}
	} else if lasted, ended := g.fence.Recover(now); ended {
		g.log.Info("snowflake generator unfenced: lease renewed, issuing again",
			"worker", g.lease.Worker, "layout", g.layout.String(), "fenced_for", lasted.Round(time.Millisecond).String())
	}
}

// Close stops issuing, releases the worker id and records the exact
// high-water mark (in the store and the state file), so the next holder
// need not wait out a reservation.
func (g *Generator) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	hw := time.Duration((g.lastTick + 1) * g.unit)
	lost := g.lost
	g.mu.Unlock()
	close(g.stop)
	<-g.done

	var errs []error
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if lost == nil {
		if err := g.src.Release(ctx, g.lease, time.UnixMilli(g.ceilMs(hw))); err != nil {
			errs = append(errs, fmt.Errorf("release snowflake worker %d: %w", g.lease.Worker, err))
		}
	}
	if g.stateFile != "" && (lost == nil || g.ttl == 0) {
		if _, err := g.persist(g.ceilMs(hw), true); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
