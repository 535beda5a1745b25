package service

import (
	"context"
	"net/http"
	"time"
)

// Probe is what /livez and /readyz answer: a verdict and, when it is
// not ok, why. /readyz adds the dependency checks it read (/healthz's).
type Probe struct {
	OK        bool      `json:"ok"`
	Status    string    `json:"status"` // ok, or: restart_needed (/livez), not_ready (/readyz)
	Reason    string    `json:"reason,omitempty"`
	CheckedAt time.Time `json:"checked_at"`
	Health    *Health   `json:"health,omitempty"`
}

// Live is /livez: the process serves (this answer is proof of it) and
// nothing it has found needs a restart. Only a snowflake worker lease
// lost to another process does (its tags issue nothing until leafproxy
// restarts and leases another id). No dependency is probed: a backend
// or store outage is no reason to restart a proxy, which would throw
// its buffered IDs away.
func (s *Service) Live() Probe {
	p := Probe{OK: true, Status: "ok", CheckedAt: time.Now()}
	for _, g := range s.Sequences.SnowflakeGenerators() {
		if g.Generator == nil {
			continue
		}
		if _, lost := g.Generator.Health(); lost {
			p.OK, p.Status = false, "restart_needed"
			p.Reason = "the snowflake worker lease of layout " + g.Layout.String() + " went to another process: snowflake IDs resume only after a restart"
			break
		}
	}
	return p
}

// Ready is /readyz: the proxy can serve a new client now. Not while it
// shuts down (it accepts no more), while the backend refuses or does not
// answer (/healthz's probe, cached a second), nor while a snowflake
// generator refuses IDs with the store up (a fault of this proxy's: the
// others may serve). A store outage alone leaves it ready while it can
// still issue IDs: a segment tag's buffered IDs, or a snowflake generator
// not fenced; every proxy sharing the store is in the same outage, and
// taking them all out of a load balancer would stop the statements that
// need no new ID too.
func (s *Service) Ready(ctx context.Context) Probe {
	h := s.health.get(ctx)
	p := Probe{Status: "not_ready", CheckedAt: time.Now(), Health: &h}
	switch {
	case s.Proxy.Draining():
		p.Reason = "shutting down: no new clients accepted"
	case !h.Backend.OK:
		p.Reason = "backend: " + h.Backend.Error
	case !h.Store.OK && !s.canIssue():
		p.Reason = "store: " + h.Store.Error + "; and no buffered segment IDs nor snowflake generator to issue from meanwhile"
	case h.Store.OK && h.Snowflake != nil && !h.Snowflake.OK:
		p.Reason = "snowflake: " + h.Snowflake.Error
	default:
		p.OK, p.Status = true, "ok"
	}
	return p
}

// canIssue says whether some tag can still issue an ID without the store:
// a segment tag with IDs buffered, or a snowflake generator that is
// neither fenced nor lost.
func (s *Service) canIssue() bool {
	segs := s.Sequences.Segments()
	for _, tag := range segs.Tags() {
		if st, ok := segs.Stats(tag); ok && (st.Remaining > 0 || st.NextReady) {
			return true
		}
	}
	for _, g := range s.Sequences.SnowflakeGenerators() {
		if g.Generator == nil {
			continue
		}
		if fenced, lost := g.Generator.Health(); !fenced && !lost {
			return true
		}
	}
	return false
}

// serveProbe writes p: 200 when ok, else 503.
func serveProbe(w http.ResponseWriter, p Probe) {
	code := http.StatusOK
	if !p.OK {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, p)
}
