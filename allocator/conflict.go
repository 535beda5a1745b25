package allocator

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/leafproxy/leafproxy/internal/conflict"
)

// startConflictTries is how many times a start-up step (preparing the
// store, checking the snowflake layouts and leasing worker ids) is tried
// while each try meets a store write conflict, before the failure is
// handled as any other (retried in the background, snowflake tags fenced
// meanwhile).
const startConflictTries = 10

// retryConflicts runs do until it succeeds, fails otherwise than with a
// store write conflict (internal/conflict: a deadlock, a Galera
// certification failure, a Galera node not ready), or has met
// startConflictTries conflicts in a row, pausing a short random time
// between tries so that proxies started together stop colliding. Each
// conflict is logged at debug level, as what it is: not an outage.
func retryConflicts(ctx context.Context, log *slog.Logger, what string, do func() error) error {
	for n := 1; ; n++ {
		err := do()
		if err == nil || !conflict.Is(err) || n == startConflictTries {
			return err
		}
		wait := time.Millisecond + rand.N(min(20*time.Millisecond<<min(n-1, 8), time.Second))
		log.Debug(what+" met a store write conflict; retrying", "code", conflict.Code(err), "in_a_row", n,
			"retry_in", wait.Round(time.Millisecond).String(), "err", err)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
	}
}
