package cmdstats

import (
	"sync/atomic"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/internal/metric"
)

// Command kinds counted (CommandStats.Commands).
const (
	Query   = iota // COM_QUERY
	Prepare        // COM_STMT_PREPARE
	Execute        // COM_STMT_EXECUTE and COM_STMT_BULK_EXECUTE
	Other          // everything else: ping, close, reset, init db, ...
	Kinds
)

// Names are the kinds as metrics label them.
var Names = [Kinds]string{"query", "prepare", "execute", "other"}

// comStmtBulkExecute is MariaDB's COM_STMT_BULK_EXECUTE.
const comStmtBulkExecute = 0xfa

// Kind is the kind of a command whose first byte is c.
func Kind(c byte) int {
	switch c {
	case mysql.COM_QUERY:
		return Query
	case mysql.COM_STMT_PREPARE:
		return Prepare
	case mysql.COM_STMT_EXECUTE, comStmtBulkExecute:
		return Execute
	}
	return Other
}

// SessionErrCodes is how many distinct error codes a session counts
// itself; a session that meets more counts the rest in the server's table.
const SessionErrCodes = 8

// Session is one session's share of the statement-path metrics, written
// only by whoever serves the session with plain stores, read by scrapes
// atomically.
type Session struct {
	cmds  [Kinds]metric.Counter
	relay metric.Histogram
	// Error codes in first-seen order: codes[i] is valid for i < n
	// (published after it is written), counted in errs[i].
	n     atomic.Int32
	codes [SessionErrCodes]atomic.Uint32
	errs  [SessionErrCodes]metric.Counter
}

// CountCmd counts a command whose first byte is c.
func (st *Session) CountCmd(c byte) { st.cmds[Kind(c)].Inc() }

// ObserveRelay records a relayed command that took d nanoseconds.
func (st *Session) ObserveRelay(d int64) { st.relay.Observe(d) }

// AddErr counts an ERR with code; false when the session's table is full
// (the server counts it then).
func (st *Session) AddErr(code uint16) bool {
	n := int(st.n.Load())
	for i := range n {
		if uint16(st.codes[i].Load()) == code {
			st.errs[i].Inc()
			return true
		}
	}
	if n == SessionErrCodes {
		return false
	}
	st.codes[n].Store(uint32(code))
	st.errs[n].Inc()
	st.n.Store(int32(n + 1))
	return true
}

// AddTo adds the session's counts to c.
func (st *Session) AddTo(c *CommandStats) {
	for i := range st.cmds {
		c.Commands[i] += st.cmds[i].Load()
	}
	st.relay.AddTo(&c.Relay)
	for i := range int(st.n.Load()) {
		c.Errors[uint16(st.codes[i].Load())] += st.errs[i].Load()
	}
}

// CommandStats is what the proxy's sessions did since start.
type CommandStats struct {
	Commands [Kinds]uint64     // commands received from clients, by kind (Names)
	Errors   map[uint16]uint64 // ERR packets sent to clients, by error code: relayed from the backend or the proxy's own, refused logins included
	Relay    metric.Snapshot   // time from a command's arrival to the end of the backend's answer relayed to the client
	Logins   uint64            // successful logins
}
