package lane

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/leafproxy/leafproxy/proxy/wire"
)

// Session is what a lane needs of the session it serves: package proxy's
// *Session, through proxy/laneglue_linux.go. A command that runs on the
// loop calls it twice, Command and Finished (RelayedErr too when the
// answer is an ERR, Judge when RelayQueryOr's watcher is asked); the rest
// is for the ends of a stay on the loop.
type Session interface {
	// Command runs the client's command pkt as Session.serve would
	// (counted, then dispatched); the lane has set the client leg's
	// sequence id and the session's idleness. wait: it would have waited
	// (ErrWouldBlock, the session not failed), and is to run again on the
	// session's goroutine.
	Command(ctx context.Context, pkt []byte) (wait bool, err error)
	// Finished ends the response under way, at now (unix nanos): ok, it
	// began with OK; rows, it was a result set of a watched statement
	// that ended without an ERR (AnswerWatcher.OnRows).
	Finished(now int64, ok, rows bool)
	// RelayedErr is told the first bytes (up to wire.HeadLen) of an ERR
	// that ends a response, before it is relayed.
	RelayedErr(head []byte)
	// Judge asks RelayQueryOr's watcher about the first packet of its
	// answer, an ERR (isErr) or an OK, with payload p: relay it
	// (JudgeRelay), relay it with insert id id (JudgeReport), or hand the
	// session to its goroutine, which carries the verdict out
	// (JudgeHandOff).
	Judge(isErr bool, p []byte) (act int, id uint64)
	// Fail records err as the session's fatal error and tells the
	// client what it should hear of it (Session.endOnError).
	Fail(err error)
	// EndOnClientError ends the session on err met on its client leg.
	EndOnClientError(err error)
	// AbandonSoon stops the statement under way of a client gone
	// mid-command.
	AbandonSoon()
	// Teardown tells the backend the session ends (busy: a command's
	// response is under way; quit: nothing waits for the backend, so
	// COM_QUIT may be written) and closes the lane's sockets.
	Teardown(busy, quit bool)
	// Leave hands the session back to its goroutine (m.Kind; after
	// Teardown, HandBackClosed); the lane is Gone.
	Leave(m HandBack)
}

// What Judge says to do with the first packet of a watched answer.
const (
	JudgeRelay   = iota // relay it as it is
	JudgeReport         // relay it with the insert id Judge gave
	JudgeHandOff        // leave it unrelayed to the session's goroutine
)

// What a lane hands back to a session's goroutine (HandBack.Kind).
const (
	HandBackClosed  = iota // the loop closed the session: the goroutine ends it
	HandBackCommand        // run Pkt: the loop could not (it would have waited)
	HandBackResume         // finish the response under way (Response): LOCAL INFILE, or a watcher's verdict
	HandBackIdle           // no command under way: a large one arriving, or the backend spoke unasked
)

// Backoff is how many commands a session's goroutine serves after
// taking one over from a loop before it tries the loop again: a client
// whose commands keep needing the goroutine (a prepare per statement on a
// rule table, say) then pays for the move once per Backoff commands.
const Backoff = 16

// HandBack is where a lane leaves its session when it hands it back to
// the session's goroutine: the sockets, the bytes read or to write, the
// legs' sequence ids and the response under way.
type HandBack struct {
	Kind                          int
	ClientFD, BackendFD           int
	Pkt                           []byte // HandBackCommand
	ClientIn                      []byte // client bytes to read first
	BackendIn                     []byte // backend bytes to read first
	ClientPending, BackendPending []byte // bytes to write first
	ClientSeq, BackendSeq         uint8  // the legs' sequence ids
	Response                      wire.RespTracker
	Infile                        bool // HandBackResume: the client's LOCAL INFILE data comes first
	Redo                          bool // HandBackResume: the response is RelayQueryOr's, and its watcher's verdict (Judge) is to be carried out
	BackendEvent                  bool // HandBackIdle: look at what the backend sent
	Debt                          int  // commands the goroutine serves before trying the loop again
}

// Config is what a lane keeps of its session besides Session: plain
// values and the session's atomics it keeps up to date.
type Config struct {
	Log   *slog.Logger
	Facts wire.RespObserver // the session, as a response tells it what the backend said
	// Idle and Since: the session is idle (KILL closes only idle
	// sessions), since when (unix nanos).
	Idle  *atomic.Bool
	Since *atomic.Int64
	// Draining: the proxy is shutting down.
	Draining *atomic.Bool
	// IdleTimeout is limits.idle_timeout.
	IdleTimeout time.Duration
	// MaxWatchedErr bounds the ERR a watcher is asked about.
	MaxWatchedErr int
	// ClientSeq and BackendSeq are the legs' sequence ids.
	ClientSeq, BackendSeq uint8
}
