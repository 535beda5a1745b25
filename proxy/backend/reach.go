package backend

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/leafproxy/leafproxy/internal/edge"
)

// Reach is the backend's reachability, as sessions' connects and the
// service's health probes find it: logged once when the backend stops
// answering and once when it answers again (internal/edge), however many
// clients were refused meanwhile (those are logged at debug level by
// package proxy).
type Reach struct{ down edge.Tracker }

// Note records a connect's or probe's outcome: err is nil when the
// backend answered (a refused login is an answer: Outcome), else what
// went wrong. draining says the server is shutting down: a canceled
// connect is then no backend problem. addr is backend.addr, for the log.
func (r *Reach) Note(err error, draining func() bool, addr string, log *slog.Logger) {
	now := time.Now()
	if err == nil {
		if lasted, ended := r.down.Recover(now); ended {
			log.Info("backend up: answering again", "backend", addr, "down_for", lasted.Round(time.Millisecond).String())
		}
		return
	}
	if errors.Is(err, context.Canceled) && draining() {
		return // shutting down, not a backend problem
	}
	if r.down.Fail(now) {
		log.Error("backend down: cannot connect; clients are refused (1429) until it answers", "backend", addr, "err", oneLine(RootCause(err)))
	}
}

// Down reports whether the last connect or probe found the backend
// unreachable.
func (r *Reach) Down() bool { return r.down.Down() }

// oneLine is err's message up to its first line break.
func oneLine(err error) string {
	m := err.Error()
	if i := strings.IndexByte(m, '\n'); i >= 0 {
		m = m[:i]
	}
	return m
}
