package allocator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// A start-up step that meets store write conflicts is tried again until it
// succeeds; any other failure, and conflicts that do not stop, end it.
func TestRetryConflicts(t *testing.T) {
	deadlock := fmt.Errorf("lease a worker id from leaf_worker: %w", &mysql.MySQLError{Number: 1213, Message: "Deadlock found"})
	down := errors.New("dial tcp: connection refused")
	for _, c := range []struct {
		name      string
		errs      []error // what the tries return, in turn; nil after
		wantTries int
		wantErr   error
	}{
		{"conflicts then success", []error{deadlock, deadlock, deadlock}, 4, nil},
		{"store down: no retry", []error{down}, 1, down},
		{"conflict then down", []error{deadlock, down}, 2, down},
		{"endless conflicts", repeat(deadlock, 100), startConflictTries, deadlock},
	} {
		t.Run(c.name, func(t *testing.T) {
			tries := 0
			err := retryConflicts(context.Background(), slog.New(slog.DiscardHandler), "test", func() error {
				tries++
				if tries <= len(c.errs) {
					return c.errs[tries-1]
				}
				return nil
			})
			if tries != c.wantTries || !errors.Is(err, c.wantErr) && err != c.wantErr {
				t.Fatalf("%d tries, %v; want %d, %v", tries, err, c.wantTries, c.wantErr)
			}
		})
	}
}

func repeat(err error, n int) []error {
	out := make([]error, n)
	for i := range out {
		out[i] = err
	}
	return out
}
