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
			g.log.Warn("snowflake worker lease renewal failed", "worker", g.lease.Worker, "err", err)
			return fmt.Errorf("renew lease of worker %d: %w", g.lease.Worker, err)
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

func (g *Generator) loop() {
	defer close(g.done)
	every := g.persistEvery
	if g.ttl > 0 {
		every = g.renewEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), every)
		err := g.refresh(ctx)
		cancel()
		if errors.Is(err, ErrLeaseLost) {
			return
		}
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
