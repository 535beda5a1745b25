package proxy

import (
	"sync/atomic"
	"time"

	"github.com/leafproxy/leafproxy/proxy/cmdstats"
	"github.com/leafproxy/leafproxy/proxy/login"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// Statement-path metrics (what is counted, and how, is package
// proxy/cmdstats's). Each session counts its own commands, the ERR
// packets its client receives and how long relayed commands take
// (cmdstats.Session, written only by whoever serves the session: its
// goroutine or the loop runner holding it); a scrape adds up the live
// sessions and the totals of ended ones (Server.CommandStats). No shared
// word is written per command, nothing is looked up by label, nothing
// allocates. Relayed commands are timed with the clock readings the
// command path takes anyway: on an event loop, the runner's one reading
// per batch of events (runner.now) at the command and at the response's
// end; on a session's goroutine, the reading at the command's start and
// one more when its answer is through.

// Command kinds counted (CommandStats.Commands).
const (
	CmdQuery   = cmdstats.Query   // COM_QUERY
	CmdPrepare = cmdstats.Prepare // COM_STMT_PREPARE
	CmdExecute = cmdstats.Execute // COM_STMT_EXECUTE and COM_STMT_BULK_EXECUTE
	CmdOther   = cmdstats.Other   // everything else: ping, close, reset, init db, ...
	CmdKinds   = cmdstats.Kinds
)

// CmdNames are the kinds as metrics label them.
var CmdNames = cmdstats.Names

// CommandStats is what the proxy's sessions did since start
// (package proxy/cmdstats).
type CommandStats = cmdstats.CommandStats

// serverStats are the server's totals: sessions that ended, errors of
// connections that never became sessions (refused logins) and of sessions
// whose own table was full. Guarded by Server.mu, which also guards the
// session table, so that a session's counts move from the live sessions
// to the totals in one step a scrape cannot see half of.
type serverStats struct {
	ended  CommandStats
	logins atomic.Uint64
}

// countCommand counts a command read from the client (once: a command an
// event loop hands to the session's goroutine is not counted again).
func (s *Session) countCommand(c byte) {
	if s.srv.noStats {
		return
	}
	s.countCmd(c)
}

// countErr counts an ERR packet with code sent to the client.
func (s *Session) countErr(code uint16) {
	if s.srv.noStats {
		return
	}
	if !s.countErrCode(code) {
		s.srv.countErr(code)
	}
}

// countErrPacket counts a relayed ERR packet (its first bytes: 0xFF, code).
func (s *Session) countErrPacket(head []byte) {
	if len(head) >= 3 {
		s.countErr(uint16(head[1]) | uint16(head[2])<<8)
	}
}

// relayDone records the end of a relayed response at now (unix nanos);
// the command began at s.since. A response with no answer (STMT_CLOSE,
// SEND_LONG_DATA) is not timed.
func (s *Session) relayDone(now int64) {
	if !s.srv.noStats {
		s.observeRelay(now - s.since.Load())
	}
}

// endCommand ends a command on the session's goroutine: a command whose
// answer the backend gave (walkFrom relayed it) is timed now. It returns
// the clock reading it took (0: none), which the session's idle time
// starts from, so timing costs no reading of its own.
func (s *Session) endCommand() int64 {
	if !s.takeRelayed() {
		return 0
	}
	now := time.Now().UnixNano()
	s.relayDone(now)
	return now
}

// countErr counts an ERR sent outside a session's own table (a refused
// login, a session that met more codes than it keeps).
func (srv *Server) countErr(code uint16) {
	srv.mu.Lock()
	srv.stats.ended.Errors[code]++
	srv.mu.Unlock()
}

// refuseLogin answers a connection that does not become a session with
// e, counted.
func (srv *Server) refuseLogin(c *wire.Leg, e *login.Error) {
	if !srv.noStats {
		srv.countErr(e.Code)
	}
	login.WriteError(c, e)
}

// retire moves an ending session's counts into the totals; srv.mu held.
func (srv *Server) retireStats(sess *Session) {
	if !srv.noStats {
		sess.stats.AddTo(&srv.stats.ended)
	}
}

// CommandStats adds up the statement-path counts of every session, live
// and ended. It walks the sessions under the server's lock: a few
// microseconds per thousand sessions, once per scrape.
func (srv *Server) CommandStats() CommandStats {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	c := srv.stats.ended
	c.Errors = make(map[uint16]uint64, len(srv.stats.ended.Errors))
	for k, v := range srv.stats.ended.Errors {
		c.Errors[k] = v
	}
	for _, sess := range srv.sessions {
		sess.stats.AddTo(&c)
	}
	c.Logins = srv.stats.logins.Load()
	return c
}
