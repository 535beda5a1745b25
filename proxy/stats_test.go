package proxy

import (
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/cmdstats"
)

func statsServer() *Server {
	srv := &Server{sessions: map[uint32]*Session{}}
	srv.stats.ended.Errors = map[uint16]uint64{}
	return srv
}

// A session's counts show in CommandStats while it lives and stay in the
// totals after it ends; error codes beyond the session's own table go to
// the server's.
func TestCommandStats(t *testing.T) {
	srv := statsServer()
	s := &Session{srv: srv, id: 7}
	srv.sessions[s.id] = s
	for _, c := range []byte{mysql.COM_QUERY, mysql.COM_QUERY, mysql.COM_STMT_PREPARE, mysql.COM_STMT_EXECUTE, comStmtBulkExecute, mysql.COM_PING} {
		s.countCommand(c)
	}
	for code := uint16(1000); code < 1000+cmdstats.SessionErrCodes+3; code++ {
		s.countErr(code)
	}
	s.countErr(1000)
	s.countErrPacket([]byte{0xFF, 0x7A, 0x04, '#'}) // 1146
	s.since.Store(time.Now().Add(-3 * time.Millisecond).UnixNano())
	s.relayDone(time.Now().UnixNano())
	check := func(when string) {
		t.Helper()
		c := srv.CommandStats()
		if want := [CmdKinds]uint64{CmdQuery: 2, CmdPrepare: 1, CmdExecute: 2, CmdOther: 1}; c.Commands != want {
			t.Errorf("%s: commands %v, want %v", when, c.Commands, want)
		}
		if c.Errors[1000] != 2 || c.Errors[1146] != 1 || len(c.Errors) != cmdstats.SessionErrCodes+4 {
			t.Errorf("%s: errors %v", when, c.Errors)
		}
		for code := uint16(1001); code < 1000+cmdstats.SessionErrCodes+3; code++ {
			if c.Errors[code] != 1 {
				t.Errorf("%s: code %d counted %d times", when, code, c.Errors[code])
			}
		}
		if c.Relay.Count() != 1 || c.Relay.SumNanos < uint64(3*time.Millisecond) {
			t.Errorf("%s: relay %d observations, %v", when, c.Relay.Count(), time.Duration(c.Relay.SumNanos))
		}
	}
	check("live")
	srv.unregister(s)
	check("ended")

	off := statsServer()
	off.noStats = true
	o := &Session{srv: off, id: 1}
	off.sessions[1] = o
	o.countCommand(mysql.COM_QUERY)
	o.countErr(1146)
	o.relayDone(time.Now().UnixNano())
	if c := off.CommandStats(); c.Commands != [CmdKinds]uint64{} || len(c.Errors) != 0 || c.Relay.Count() != 0 {
		t.Errorf("counted with stats off: %+v", c)
	}
}

// What counting adds to a relayed command on an event loop: the command
// counted, and its response timed with the runner's clock reading (no
// reading of its own).
func BenchmarkCountLoopCommand(b *testing.B) {
	s := &Session{srv: statsServer()}
	now := time.Now().UnixNano()
	for b.Loop() {
		s.countCommand(mysql.COM_QUERY)
		s.since.Store(now)
		now += 40e3
		s.relayDone(now)
	}
}

// The same on a session's own goroutine: endCommand takes the clock
// reading the session's idle time then starts from (serve took one there
// before), so the work added is this minus BenchmarkClockReading.
func BenchmarkCountGoroutineCommand(b *testing.B) {
	s := &Session{srv: statsServer()}
	for b.Loop() {
		s.countCommand(mysql.COM_QUERY)
		s.relayed = true
		s.since.Store(s.endCommand())
	}
}

// For scale: what the goroutine path does per command already.
func BenchmarkClockReading(b *testing.B) {
	var s Session
	for b.Loop() {
		s.since.Store(time.Now().UnixNano())
	}
}
