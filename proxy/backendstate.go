package proxy

// The backend's reachability, as sessions' connects and the service's
// health probes find it (backend.Reach): logged once when the backend
// stops answering and once when it answers again, however many clients
// were refused meanwhile (those are logged at debug level).

// ReportBackend records the outcome of a probe of the backend made
// elsewhere (the service's health probe): nil when the backend answered
// (a refused login is an answer), else why it did not.
func (s *Server) ReportBackend(err error) { s.noteBackend(err) }

// noteBackend records a connect's outcome: err is nil when the backend
// answered (a refusal is an answer), else what went wrong (backend.Reach).
func (s *Server) noteBackend(err error) {
	s.backendDown.Note(err, s.draining.Load, s.cfg.Backend.Addr, s.log)
}

// BackendDown reports whether the last connect or probe found the backend
// unreachable.
func (s *Server) BackendDown() bool { return s.backendDown.Down() }
