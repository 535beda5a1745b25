package service

// HealthProbes counts the probes /healthz and the status page have run.
func (s *Service) HealthProbes() int64 { return s.health.probes.Load() }
