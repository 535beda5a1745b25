package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/internal/sqltext"
	"github.com/leafproxy/leafproxy/proxy/cmdstats"
	"github.com/leafproxy/leafproxy/proxy/kill"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// Session is one client connection and its pinned backend connection. Its
// methods are meant for an Interceptor, which runs on whoever serves the
// session's command: the session's own goroutine, or an event loop's
// runner while a loop serves it (then the methods that would wait return
// ErrWouldBlock), never both at once. None of them is safe for use from
// any other goroutine.
//
// Its state is grouped by concern, as net/http separates conn, connReader
// and response: the session's identity and legs here, the rest in the
// groups below. Each group's comment says who may touch it, and the
// methods whose body touches only one group's state have that group as
// their receiver (func (bf *backendFacts) setStatus), so a receiver says
// which state a method may touch; a *Session method may touch any. Most
// groups are embedded (their fields and methods are promoted, so code
// reads s.db, s.setStatus, s.ending); kill.State and infileState are named
// fields (s.kills.Add, s.infile.t). "The owner" is whoever runs the
// session's commands now: its own goroutine, or, while an event loop
// serves it (exec is its lane), the loop runner holding the lane
// (lane.mu); the goroutine then waits on handBackc and touches nothing.
// Only sessionShared is for other goroutines.
type Session struct {
	// Identity and negotiation: set at login, replaced by a change user
	// (auth_changeuser.go) on the owner; user and account are written
	// under mu there, which other sessions read them under (mayKill,
	// userName, abandon).
	srv       *Server
	id        uint32 // the proxy's session id: its key in Server.sessions
	clientID  uint32 // the connection id the client was greeted with
	log       *slog.Logger
	user      string
	account   Account
	remote    string
	caps      uint32 // client capability flags, as negotiated
	extCaps   uint32 // MariaDB extended capabilities, as negotiated
	collation uint8
	scramble  []byte // the greeting's, for COM_CHANGE_USER
	attrs     []byte

	changeUserFails uint8 // refused COM_CHANGE_USERs (auth_changeuser.go)

	// The legs, the owner's: the goroutine's buffered connections, or the
	// lane's legs over the loop's non-blocking descriptors.
	c *wire.Leg // client
	b *wire.Leg // backend

	sessionShared
	backendFacts
	commandState
	loopState
	hangupState
	kills  kill.State // KILL beyond one command (package proxy/kill)
	infile infileState
	idleState
	statsState
	sessionBuffers
}

// sessionShared is what other goroutines read, or close, while the owner
// serves the session: other sessions' KILL (threadID, closeIfIdle), the
// server (Shutdown's poke and forced close, lookups by thread id, admin
// views through info), the hang-up watch (cconn, idle, since). The owner
// writes it, under mu or atomically; nothing else is written here by
// others but the closing flag. Its methods close its connections under
// mu, for whichever goroutine asks: closeConns, closeIfIdle, pokeIfIdle
// (sessionendglue.go), cutBackend (hangup.go).
type sessionShared struct {
	// mu guards what other goroutines close (forceClose, KILL, Shutdown):
	// the connections while the session's goroutine serves it, the loop's
	// descriptors while a loop does (and until the goroutine has taken
	// them back); and user (read by other sessions).
	mu          sync.Mutex
	cconn       net.Conn
	bconn       net.Conn
	loopSockets *lane         // the sockets an event loop serves the session on
	threadID    atomic.Uint32 // the backend connection's thread id
	closing     atomic.Bool
	idle        atomic.Bool
	since       atomic.Int64           // unix nanos when the current command (or idleness) began
	dbShared    atomic.Pointer[string] // db, for other goroutines (info)
}

// backendFacts is the backend session's state as the proxy tracks it, for
// the interceptor's planning and the answers the proxy writes: current
// database, status flags, sql_mode, the last prepared statement, the
// insert id to report. Owner only (other goroutines see the database
// through sessionShared.dbShared, which is why setDB is a *Session
// method). Its methods keep these facts: setStatus (relay.go), stmtID
// (dispatch.go), and those below (the database and sql_mode caches, the
// last prepare, the insert id override of the next OK).
type backendFacts struct {
	db     string
	dbOK   bool // false: db must be re-read (after a multi-statement)
	status uint16
	mode   string
	modeOK bool
	// modeStmts: the client prepared (COM_STMT_PREPARE) a SET naming
	// sql_mode, so any COM_STMT_EXECUTE may change the mode.
	modeStmts bool
	// okInsertID, when set, replaces the insert id 0 of the next
	// response's first OK packet (RelayQueryInsertID); okBuf is its
	// scratch.
	okInsertID uint64
	okBuf      []byte
	// okReport: okInsertID is the insert id of the next response's first
	// packet if that is an OK, whatever its own (an AnswerWatcher's
	// verdict; settleFirst).
	okReport bool
	// relayedErrs counts the ERR packets relayed to the client.
	relayedErrs int
	// okInsertIDs, when set, is okInsertID for each result of a
	// multi-statement text in turn (RelayQueryInsertIDs).
	okInsertIDs []uint64
	lastPrep    uint32 // the statement id the backend gave the last prepare
	lastPrepOK  bool
}

// forgetDB marks the database as unknown: it is read again when asked
// for (DB), after a statement that may have changed it unseen.
func (bf *backendFacts) forgetDB() { bf.dbOK = false }

// forgetMode marks sql_mode as unknown: SQLMode reads it again.
func (bf *backendFacts) forgetMode() { bf.modeOK = false }

// cachedMode is the sql_mode last read, ok false when it must be read again.
func (bf *backendFacts) cachedMode() (mode string, ok bool) { return bf.mode, bf.modeOK }

// cacheMode records mode, just read from the backend.
func (bf *backendFacts) cacheMode(mode string) { bf.mode, bf.modeOK = mode, true }

// setPrepared records id as the statement the last prepare made, which an
// execute of "the last prepared statement" means (stmtID).
func (bf *backendFacts) setPrepared(id uint32) { bf.lastPrep, bf.lastPrepOK = id, true }

// forgetPrepared: the last prepare failed (or the session was reset), so
// "the last prepared statement" resolves to no older one.
func (bf *backendFacts) forgetPrepared() { bf.lastPrepOK = false }

// reset forgets what COM_RESET_CONNECTION resets: sql_mode and the last
// prepared statement.
func (bf *backendFacts) reset() {
	bf.forgetMode()
	bf.forgetPrepared()
}

// countRelayedErr counts an ERR packet relayed to the client.
func (bf *backendFacts) countRelayedErr() { bf.relayedErrs++ }

// commandState is the command path's: the session's context (serve's),
// the value an interceptor keeps with the session (SetValue), the error
// that ends the session once the command returns (setFatal), and what
// the command under way holds. Owner only. Its methods: setFatal
// (dispatch.go), the command's class (commandClass, beginClass, classOf,
// endClass: keyword.go), and giving up what the command holds
// (takeHeldMem, takeLarge; the *Session caller returns it to the server).
type commandState struct {
	ctx       context.Context
	value     any
	fatal     error
	heldMem   int64 // bytes of the command memory budget the current command holds
	cmdSeq    uint8 // the client leg's sequence id once the command (or its LOCAL INFILE data) was read
	largeHeld bool  // this session holds the server's slot for reading a 16 MiB+ command
	// class is the current COM_QUERY's or COM_STMT_PREPARE's class, of
	// the text classText (the packet buffer's, nil between commands):
	// classified once by the command's method (comQuery, comPrepare),
	// handed to KILL's reading (decideKill), the
	// interceptor (Class) and the relay's USE/SET tracking. classified
	// counts the Classify calls, for the test that each command is
	// classified once.
	class      sqltext.Class
	classText  []byte
	classified int
	// received is the class of the command packet's own text (receivedOK:
	// this command has one), which a loop hands back with the command;
	// handed is that class, for the goroutine's run of the same command.
	received, handed     sqltext.Class
	receivedOK, handedOK bool
}

// takeHeldMem is the command memory the command held, now given up by
// the session (the caller releases it to the budget).
func (c *commandState) takeHeldMem() int64 {
	held := c.heldMem
	c.heldMem = 0
	return held
}

// takeLarge reports, and clears, that the session holds the server's slot
// for reading a 16 MiB+ command (the caller frees it).
func (c *commandState) takeLarge() bool {
	if !c.largeHeld {
		return false
	}
	c.largeHeld = false
	return true
}

// loopState is who runs the session's commands (commandexec.go,
// handoff_linux.go). The session's goroutine sets exec to the lane before
// posting it to a loop and back when the loop hands the session back on
// handBackc (the loop's only write here: one send per stay; it reads
// exec, as every session method does, while it serves the session, and
// session methods that would wait then return ErrWouldBlock).
// goroutineTurns and noLoop are the goroutine's alone. Its methods are
// the goroutine's: stayOffLoop, handBackChan.
type loopState struct {
	exec           commandExec   // onGoroutine, or the session's lane while an event loop serves it
	handBackc      chan handBack // the loop hands the session back here
	goroutineTurns int           // commands to serve here before trying the loop again
	noLoop         bool          // never: a leg is TLS, compressed or not a socket
}

// stayOffLoop keeps the session on its goroutine for good (a leg an event
// loop cannot serve, or a move that failed).
func (ls *loopState) stayOffLoop() { ls.noLoop = true }

// handBackChan is the channel a loop hands the session back on, made on
// the session's first move to a loop.
func (ls *loopState) handBackChan() chan handBack {
	if ls.handBackc == nil {
		ls.handBackc = make(chan handBack, 1)
	}
	return ls.handBackc
}

// hangupState is how the session ends (hangup.go): ending is the
// goroutine's plan for the backend connection, left that the client
// closed without COM_QUIT (the owner's; the loop reads left while it
// serves the session). abandoned is set once, by whoever first tells the
// backend to stop the statement of a client that went away (the owner,
// or the hang-up watch, a goroutine of the server); hup is the watch's,
// under sessionShared.mu. Its methods, isAbandoned and markAbandoned, are
// for either (abandoned is atomic).
type hangupState struct {
	ending    uint8
	left      bool // the client closed its connection without COM_QUIT
	abandoned atomic.Bool
	hup       hangupPeeker // the hang-up watch's look at cconn (s.mu)
}

// isAbandoned says the backend was told to stop the statement of a
// client that went away (abandon).
func (h *hangupState) isAbandoned() bool { return h.abandoned.Load() }

// markAbandoned marks the session abandoned; true for the first caller
// only, which then stops the statement.
func (h *hangupState) markAbandoned() bool { return h.abandoned.CompareAndSwap(false, true) }

// infileState is the LOCAL INFILE of the statement under way when an
// interceptor transforms its file (infile.go). Owner only, for one
// command. A named field, s.infile: begin, fail and end are the
// statement's transformation from start to end.
type infileState struct {
	t   InfileTransformer // RelayQueryInfile: the file of the statement under way goes through it
	err error             // its error, which the client gets as the answer
}

// begin makes t the transformer of the statement about to run.
func (in *infileState) begin(t InfileTransformer) { in.t, in.err = t, nil }

// fail records the transformer's error, which the client gets as the
// statement's answer.
func (in *infileState) fail(err error) { in.err = err }

// end ends the statement's transformation and returns its error.
func (in *infileState) end() error {
	err := in.err
	in.t, in.err = nil, nil
	return err
}

// idleState is the session between commands on its goroutine
// (idlewatch.go): its buffers given back, the idle watch's look at the
// backend connection. The goroutine's alone. Its method peekerFor is
// the idle watch's look; park and unpark (idlewatch.go) stay *Session
// methods, as they move the legs' buffers too.
type idleState struct {
	parked    bool               // idle: buffers given back (park)
	bpeek     *wire.SocketPeeker // the idle watch's look at bconn (nil: not a socket)
	bpeekConn net.Conn           // the connection bpeek was made for
}

// peekerFor is the idle watch's look at conn, made on the first look and
// again for a new backend connection (change user).
func (is *idleState) peekerFor(conn net.Conn) *wire.SocketPeeker {
	if is.bpeekConn != conn {
		is.bpeek, is.bpeekConn = wire.NewSocketPeeker(conn), conn
	}
	return is.bpeek
}

// statsState is the session's statement-path metrics (stats.go): written
// by the owner with plain stores, read by scrapes atomically. Its methods
// count (countCmd, countErrCode, observeRelay) and keep the relayed flag
// (markRelayed, takeRelayed); the *Session methods in stats.go call them
// unless the server counts nothing (noStats).
type statsState struct {
	stats   cmdstats.Session // statement-path metrics (stats.go, package proxy/cmdstats)
	relayed bool             // the command under way relayed a response (timed at its end)
}

// countCmd counts a command whose first byte is c.
func (st *statsState) countCmd(c byte) { st.stats.CountCmd(c) }

// countErrCode counts an ERR with code; false when the session's table of
// codes is full (the server counts it then).
func (st *statsState) countErrCode(code uint16) bool { return st.stats.AddErr(code) }

// observeRelay records a relayed command that took d nanoseconds.
func (st *statsState) observeRelay(d int64) { st.stats.ObserveRelay(d) }

// markRelayed notes that the command under way relayed a response, which
// is timed when the command ends (endCommand).
func (st *statsState) markRelayed() { st.relayed = true }

// takeRelayed reports, and clears, that the command relayed a response.
func (st *statsState) takeRelayed() bool {
	if !st.relayed {
		return false
	}
	st.relayed = false
	return true
}

// sessionBuffers are the owner's reused buffers. Its methods decide
// which to keep: trimOut (backendstmt.go), trimScratch, keepCmd, dropOver
// (park), and bytes, their size.
type sessionBuffers struct {
	cmd     []byte // reused command buffer
	out     []byte // reused outgoing command buffer
	scratch []byte // reused buffer for proxy-originated responses
	head    [wire.HeadLen]byte
}

// bytes is the capacity of the reused command buffers.
func (bufs *sessionBuffers) bytes() int { return cap(bufs.cmd) + cap(bufs.out) + cap(bufs.scratch) }

// dropOver drops the reused buffers larger than limit (park: idleBuf).
func (bufs *sessionBuffers) dropOver(limit int) {
	if cap(bufs.cmd) > limit {
		bufs.cmd = nil
	}
	if cap(bufs.out) > limit {
		bufs.out = nil
	}
	if cap(bufs.scratch) > limit {
		bufs.scratch = nil
	}
}

// keepCmd keeps pkt's buffer as the command buffer for the next command,
// unless it grew past keepBuf.
func (bufs *sessionBuffers) keepCmd(pkt []byte) {
	if cap(pkt) <= keepBuf {
		bufs.cmd = pkt[:0]
	} else {
		bufs.cmd = nil
	}
}

// trimScratch drops the scratch buffer once it grew past keepBuf.
func (bufs *sessionBuffers) trimScratch() {
	if cap(bufs.scratch) > keepBuf {
		bufs.scratch = nil
	}
}

const (
	clientReadBuf  = 4 << 10
	clientWriteBuf = 32 << 10
	backReadBuf    = 32 << 10
	backWriteBuf   = 4 << 10
	keepBuf        = 1 << 20 // larger reused buffers are dropped after use
	idleBuf        = 4 << 10 // larger reused buffers are dropped when the session parks
)

func newSession(srv *Server, id uint32, log *slog.Logger, c *wire.Leg, h *clientHello, bc *backendConn) *Session {
	s := &Session{
		srv: srv, id: id, clientID: id, log: log, user: h.Resp.User, account: h.account,
		caps: h.Resp.Caps, extCaps: h.Resp.ExtCaps, collation: h.Resp.Charset,
		scramble: h.Scramble, attrs: h.Resp.Attrs,
		c:             c,
		loopState:     loopState{exec: onGoroutine{}},
		sessionShared: sessionShared{cconn: c.Conn},
		backendFacts:  backendFacts{db: h.Resp.DB, dbOK: true},
	}
	s.remote = "unix"
	if a := c.Conn.RemoteAddr(); a != nil && a.String() != "" && a.String() != "@" {
		s.remote = a.String()
	}
	s.setBackend(bc)
	if h.account.backendAuth {
		s.clientID = bc.ThreadID // greeted with its backend thread id (passThroughHandshake)
	}
	s.since.Store(time.Now().UnixNano())
	return s
}

// setBackend makes bc the session's backend connection (login or change
// user); the status flags start as its login OK reported them.
func (s *Session) setBackend(bc *backendConn) {
	s.mu.Lock()
	s.bconn = bc.Conn
	s.mu.Unlock()
	s.b = wire.NewLeg("backend", bc.Conn, backReadBuf, backWriteBuf)
	if bc.Compressed {
		s.b.Compress(true, clientReadBuf, clientWriteBuf)
	}
	s.threadID.Store(bc.ThreadID)
	s.status = mysql.SERVER_STATUS_AUTOCOMMIT
	if _, _, st, _ := wire.OKInfo(bc.OK); len(bc.OK) >= 7 {
		s.status = st
	}
	db := s.db
	s.dbShared.Store(&db)
}

var errQuit = errors.New("client quit")

// Error codes the proxy sends for its own failures. They must be server
// codes: libmariadb (the mariadb CLI) turns a server-sent code in the client
// range 2000-2999 (2003, 2013) into 2027 "Received malformed packet".
const (
	// errBackendLost is ER_NET_READ_ERROR ("Got an error reading
	// communication packets").
	errBackendLost = 1158
)

// serve runs the command loop until the client quits, a leg fails or the
// server shuts the session down.
func (s *Session) serve(base context.Context) {
	ctx, cancel := context.WithCancel(base)
	defer cancel()
	s.ctx = ctx
	defer s.finish()
	// A bug that panics while serving one client must cost that client its
	// connection, not every session of the proxy.
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("session closed: internal error", "panic", fmt.Sprint(r))
			s.log.Debug("panic stack", "stack", string(debug.Stack()))
		}
		// A command that ended in a panic still gives back the command
		// memory it held (limits.command_memory).
		if held := s.takeHeldMem(); held > 0 {
			s.srv.mem.Release(held)
		}
	}()
	s.log.Debug("session started", "db", s.db, "backend_thread", s.threadID.Load())
	if ic := s.srv.ic; ic != nil {
		defer ic.SessionClosed(s)
	}
	var now int64 // the clock reading the last command ended with, if it took one
	for {
		// Order matters against Server.Shutdown: mark idle, then look at
		// draining; Shutdown sets draining, then pokes idle sessions.
		s.idle.Store(true)
		if now == 0 {
			now = time.Now().UnixNano()
		}
		s.since.Store(now) // idle from when the last answer went out
		now = 0
		if s.srv.draining.Load() {
			s.log.Debug("session closed: proxy shutting down")
			s.ending = endQuit
			return
		}
		if s.goroutineTurns > 0 {
			s.goroutineTurns--
		} else if l := s.loopFor(); l != nil {
			if m, moved := s.runOnLoop(l); moved {
				if s.fromLoop(ctx, &m) || s.endIfAbandoned() {
					return
				}
				continue
			}
		}
		if err := s.awaitCommand(); err != nil {
			s.endOnClientError(err)
			return
		}
		if s.parked {
			s.unpark()
		}
		s.c.Seq = 0
		pkt, err := s.readCommand()
		s.cmdSeq = s.c.Seq
		s.idle.Store(false)
		s.since.Store(time.Now().UnixNano())
		if err != nil {
			s.endOnClientError(err)
			return
		}
		if len(pkt) == 0 {
			s.log.Info("session closed: empty command packet")
			s.ending = endQuit
			return
		}
		s.srv.armHangupWatch()
		s.countCommand(pkt[0])
		err = s.dispatch(ctx, pkt)
		now = s.endCommand()
		s.releaseCommand(pkt)
		if err != nil {
			s.endOnError(err)
			return
		}
		if s.endIfAbandoned() || s.endIfKilled() {
			return
		}
	}
}
