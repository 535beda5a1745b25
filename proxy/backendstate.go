package proxy

import (
	"context"
	"errors"
	"time"
)

// The backend's reachability, as sessions' connects and the service's
// health probes find it: logged once when the backend stops answering and
// once when it answers again (internal/edge), however many clients were
// refused meanwhile (those are logged at debug level).

// ReportBackend records the outcome of a probe of the backend made
// elsewhere (the service's health probe): nil when the backend answered
// (a refused login is an answer), else why it did not.
func (s *Server) ReportBackend(err error) { s.noteBackend(err) }

// noteBackend records a connect's outcome: err is nil when the backend
// answered (a refusal is an answer), else what went wrong.
func (s *Server) noteBackend(err error) {
	now := time.Now()
	if err == nil {
		if lasted, ended := s.backendDown.Recover(now); ended {
			s.log.Info("backend up: answering again", "backend", s.cfg.Backend.Addr, "down_for", lasted.Round(time.Millisecond).String())
		}
		return
	}
	if errors.Is(err, context.Canceled) && s.draining.Load() {
		return // shutting down, not a backend problem
	}
	if s.backendDown.Fail(now) {
		s.log.Error("backend down: cannot connect; clients are refused (1429) until it answers", "backend", s.cfg.Backend.Addr, "err", oneLine(rootCause(err)))
	}
}

// BackendDown reports whether the last connect or probe found the backend
// unreachable.
func (s *Server) BackendDown() bool { return s.backendDown.Down() }
