package proxy

import (
	"time"
)

func (s *Server) register(sess *Session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining.Load() {
		return false
	}
	s.sessions[sess.id] = sess
	return true
}

func (s *Server) unregister(sess *Session) {
	s.mu.Lock()
	delete(s.sessions, sess.id)
	s.retireStats(sess)
	s.mu.Unlock()
}

// LoopStats says how the event loops are used.
type LoopStats struct {
	Loops    int    // event loops running
	Sessions int64  // sessions a loop serves now
	Moves    uint64 // times a session moved onto a loop (after login, and after its goroutine served a command)
	Handoffs uint64 // commands a loop handed to the session's goroutine (it would have had to wait)
}

// LoopStats reports the event loops' use; cheap enough for every scrape.
func (s *Server) LoopStats() LoopStats {
	return LoopStats{Loops: int(s.loopCount.Load()), Sessions: s.loopSessions.Load(),
		Moves: s.loopMoves.Load(), Handoffs: s.loopHandoffs.Load()}
}

// SessionInfo describes one logged-in session (for admin views).
type SessionInfo struct {
	ID       uint32 // the id the client was greeted with
	ThreadID uint32 // the backend connection's thread id
	User     string
	Remote   string
	DB       string
	Command  string // "Sleep" or "Query"
	Since    time.Time
}

// SessionList returns the logged-in sessions.
func (s *Server) SessionList() []SessionInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]SessionInfo, 0, len(s.sessions))
	for _, sess := range s.sessions {
		out = append(out, sess.info())
	}
	return out
}
