package service

import "time"

// HealthProbes counts the probes /healthz and the status page have run.
func (s *Service) HealthProbes() int64 { return s.health.probes.Load() }

// ExpireHealth ends the cached health result's life, as its second
// passing would: the next /healthz probes again.
func (s *Service) ExpireHealth() {
	s.health.mu.Lock()
	s.health.lastAt = time.Time{}
	s.health.mu.Unlock()
}
