package lane

import (
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/leafproxy/leafproxy/proxy/eventloop"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// Lane is a session while the event loop serves it: its two sockets (dups
// made by the session's goroutine, which closed its own net.Conns so that
// the runtime's netpoller no longer watches them; eventloop.Lane, with
// what the runners coordinate on) and what the loop keeps between events.
// One runner at a time handles it (Mu); ownership moves between the loop
// and the session's goroutine with Loop.Post and Session.Leave. It is the
// lane's eventloop.Handler (handler_linux.go).
type Lane struct {
	eventloop.Lane
	l    *eventloop.Loop
	r    *eventloop.Runner // the runner handling it now (bind)
	sess Session
	log  *slog.Logger

	idle, draining *atomic.Bool  // Config.Idle, Config.Draining
	since          *atomic.Int64 // Config.Since
	idleTimeout    time.Duration
	maxWatchedErr  int

	// The session's legs while the loop serves it: no buffers of their own;
	// they write through the runner's writers into the sinks (bind).
	clientLeg, backendLeg   wire.Leg
	clientSink, backendSink sink

	clientIn       []byte // client bytes read but not run yet: a partial or pipelined command
	backendPartial []byte // backend bytes: the start of a packet not yet classifiable
	clientPending  []byte // bytes for the client its socket did not take yet
	backendPending []byte // bytes for the backend its socket did not take yet (see backendFull)

	busy       bool              // a command's response is under way
	response   wire.RespTracker  // that response
	facts      wire.RespObserver // the session, as response tells it what the backend said (set once)
	inPacket   bool              // inside a physical packet of the response
	bodyLeft   int               // its payload bytes still to pass on
	continued  bool              // the logical packet goes on in the next physical packet
	packetKind int               // what the logical packet was (wire.RespTracker), acted on at its end

	// Events are edge-triggered: once told a socket is readable, the lane
	// reads until it is empty, or notes that it stopped before (a full
	// buffer of pipelined commands, a client that has not taken the last
	// answer) and reads again when it can.
	clientReadable, backendReadable bool
	// The peer closed its side (EPOLLRDHUP, HUP, ERR: told once). The end
	// may sit behind bytes a read returned, so a short read no longer
	// means empty: the lane reads on until it meets the end.
	clientHungUp, backendHungUp bool

	clientEOF bool // the client closed its side; pipelined commands still run
	wrote     bool // the current command has written to a socket (sink.Write)
	// watching: the response under way belongs to RelayQueryOr, whose
	// watcher is asked about its first packet (watchFirst, Session.Judge).
	watching bool
	// rowsWatched: the response under way is a result set of a watched
	// statement, whose watcher is told when it ends without an ERR
	// (Session.Finished).
	rowsWatched bool
	// okBuf: a reported OK as the client gets it (relayReportedOK).
	okBuf []byte
}

// Setup makes ln the lane of sess on loop l over the sockets cfd and bfd
// (dups the session's goroutine made); Loop.Post then hands it to the
// loop. (A Lane is part of what the session keeps for its stay on the
// loop: one allocation.)
func (ln *Lane) Setup(l *eventloop.Loop, sess Session, cfg Config, cfd, bfd int) {
	*ln = Lane{l: l, sess: sess, log: cfg.Log, facts: cfg.Facts,
		idle: cfg.Idle, since: cfg.Since, draining: cfg.Draining,
		idleTimeout: cfg.IdleTimeout, maxWatchedErr: cfg.MaxWatchedErr}
	ln.Init(ln, cfd, bfd)
	ln.clientSink = sink{ln: ln, fd: cfd, client: true}
	ln.backendSink = sink{ln: ln, fd: bfd}
	ln.clientLeg = wire.Leg{Name: "client", Seq: cfg.ClientSeq}
	ln.backendLeg = wire.Leg{Name: "backend", Seq: cfg.BackendSeq}
}

// bind lends the lane runner r's writers for this handling.
func (ln *Lane) bind(r *eventloop.Runner) {
	ln.r = r
	r.ClientW.Reset(&ln.clientSink)
	ln.clientLeg.W = r.ClientW
	r.BackendW.Reset(&ln.backendSink)
	ln.backendLeg.W = r.BackendW
}

// handle acts on what happened (eventloop.Pend* bits); the caller holds ln.Mu.
func (ln *Lane) handle(bits uint32) {
	if bits&eventloop.PendAttach != 0 {
		if ln.l.Draining() || ln.draining.Load() {
			ln.log.Debug("session closed: proxy shutting down")
			ln.teardown()
			return
		}
		// The goroutine may have read commands ahead; and the sockets may
		// have been readable before they were registered.
		ln.clientReadable, ln.backendReadable = true, true
		if len(ln.clientIn) > 0 {
			ln.commands(ln.clientIn)
		}
	}
	if !ln.Gone && bits&(eventloop.PendClientOut|eventloop.PendClientHup) != 0 && len(ln.clientPending) > 0 {
		ln.drainPend(true) // after a hang-up: the write fails if the client is gone
	}
	if !ln.Gone && bits&eventloop.PendBackendOut != 0 && len(ln.backendPending) > 0 {
		ln.drainPend(false)
	}
	if bits&eventloop.PendClientIn != 0 {
		ln.clientReadable = true
	}
	if bits&eventloop.PendBackendIn != 0 {
		ln.backendReadable = true
	}
	if bits&eventloop.PendClientHup != 0 {
		ln.clientHungUp = true
	}
	if bits&eventloop.PendBackendHup != 0 {
		ln.backendHungUp = true
	}
	// Read what there is while the lane can take it; reading may end a
	// response or run commands, after which it can take more. A lane with
	// that much to do gives the runner back after a while and comes again
	// (eventloop.PendMore): no further event would bring it back.
	for i := 0; !ln.Gone; i++ {
		if i == 64 {
			ln.Pend.Or(eventloop.PendMore)
			break
		}
		if ln.backendReadable && ln.busy && len(ln.clientPending) == 0 {
			ln.readBackend()
		} else if ln.backendReadable && !ln.busy {
			ln.backendUnasked()
		} else if ln.clientReadable && !ln.clientEOF && len(ln.clientIn) < eventloop.BufSize && !ln.backendFull() {
			ln.readClient()
		} else {
			break
		}
	}
	if !ln.Gone && bits&eventloop.PendCheck != 0 {
		ln.check()
	}
}

// flushWriters writes what a handling left in the runner's writers (every
// path flushes its own; this keeps an interceptor that forgot from losing
// its bytes to the next lane's bind).
func (ln *Lane) flushWriters() {
	if ln.Gone {
		return
	}
	if ln.r.ClientW.Buffered() > 0 {
		if err := ln.clientLeg.Flush(); err != nil {
			ln.fail(err)
			return
		}
	}
	if ln.r.BackendW.Buffered() > 0 {
		if err := ln.backendLeg.Flush(); err != nil {
			ln.fail(err)
		}
	}
}

// check closes the lane if the proxy is shutting down or it has been idle
// longer than limits.idle_timeout (drain, idle sweep).
func (ln *Lane) check() {
	if ln.busy || len(ln.clientPending) > 0 {
		return
	}
	if ln.l.Draining() {
		ln.log.Debug("session closed: proxy shutting down")
		ln.teardown()
		return
	}
	if limit := ln.idleTimeout; limit > 0 && time.Since(time.Unix(0, ln.since.Load())) >= limit {
		ln.sess.EndOnClientError(os.ErrDeadlineExceeded)
		ln.teardown()
	}
}

// readClient reads what the client sent and runs the commands it completes,
// until the socket is empty or the lane cannot take more.
func (ln *Lane) readClient() {
	for !ln.Gone && !ln.clientEOF && len(ln.clientIn) < eventloop.BufSize && !ln.backendFull() {
		buf := ln.r.ClientBuf
		n, errno := eventloop.ReadFD(ln.ClientFD, buf)
		switch {
		case errno == unix.EAGAIN:
			ln.clientReadable = false
			return
		case errno != 0:
			ln.sess.EndOnClientError(&wire.IOError{Leg: "client", Err: os.NewSyscallError("read", errno)})
			ln.teardown()
			return
		case n == 0:
			ln.clientReadable = false
			ln.clientEOF = true
			if !ln.busy && len(ln.clientPending) == 0 && (len(ln.clientIn) == 0 || !ln.backendFull()) {
				ln.clientGone()
			} else if ln.busy && len(ln.clientIn) == 0 {
				ln.sess.AbandonSoon() // gone mid-command: stop the statement (hangup.go)
			}
			return
		}
		if n < len(buf) && !ln.clientHungUp {
			ln.clientReadable = false // emptied: the next bytes come with an event
		}
		data := buf[:n]
		if len(ln.clientIn) > 0 || ln.busy || len(ln.clientPending) > 0 {
			ln.clientIn = append(ln.clientIn, data...)
			ln.commands(ln.clientIn)
		} else {
			ln.commands(data)
		}
		if !ln.clientReadable {
			return
		}
	}
}

// clientGone ends a lane whose client closed and has nothing left to run.
func (ln *Lane) clientGone() {
	if len(ln.clientIn) > 0 {
		ln.sess.EndOnClientError(&wire.IOError{Leg: "client", Err: io.ErrUnexpectedEOF})
	} else {
		ln.sess.EndOnClientError(io.EOF)
	}
	ln.teardown()
}

// commands runs the complete commands at the front of buf (the loop's read
// buffer or ln.clientIn) while nothing else is under way and the backend takes
// bytes, and keeps the rest.
func (ln *Lane) commands(buf []byte) {
	for !ln.Gone && !ln.busy && len(ln.clientPending) == 0 && !ln.backendFull() && len(buf) >= 4 {
		n := int(buf[0]) | int(buf[1])<<8 | int(buf[2])<<16
		if buf[3] != 0 {
			ln.sess.EndOnClientError(&wire.IOError{Leg: "client", Err: wire.SequenceError{Got: buf[3], Want: 0}})
			ln.teardown()
			return
		}
		if 4+n > eventloop.BufSize {
			// Larger than the loop reads: the session's goroutine reads it,
			// with limits.command_memory (Session.readCommand).
			ln.handOff(HandBack{Kind: HandBackIdle, Debt: 1}, buf)
			return
		}
		if len(buf) < 4+n {
			break
		}
		ln.command(buf[4:4+n], buf[4+n:])
		buf = buf[4+n:]
	}
	if ln.Gone {
		return
	}
	// Keep the rest; buf may be a suffix of ln.clientIn (append copies forwards).
	ln.clientIn = append(ln.clientIn[:0], buf...)
	if len(ln.clientIn) == 0 && cap(ln.clientIn) > eventloop.BufSize {
		ln.clientIn = nil
	}
	if ln.clientEOF && !ln.busy && len(ln.clientPending) == 0 && (len(ln.clientIn) == 0 || !ln.backendFull()) {
		ln.clientGone()
	}
}

// command runs one client command as Session.serve would; rest is what the
// client sent after it.
func (ln *Lane) command(pkt, rest []byte) {
	if len(pkt) == 0 {
		ln.log.Info("session closed: empty command packet")
		ln.teardown()
		return
	}
	ln.clientLeg.Seq = 1 // the command's own packet was sequence 0
	ln.idle.Store(false)
	ln.since.Store(ln.r.Now)
	ln.wrote = false
	wait, err := ln.sess.Command(ln.l.Ctx(), pkt)
	if wait {
		if ln.wrote || ln.busy || ln.r.ClientW.Buffered() > 0 || ln.r.BackendW.Buffered() > 0 {
			// Run again on the goroutine, the command would be sent or
			// answered twice: an interceptor that waits after writing is
			// a bug, and the session cannot go on.
			ln.log.Error("session closed: an interceptor returned ErrWouldBlock after writing to the client or the backend")
			ln.teardown()
			return
		}
		ln.handOff(HandBack{Kind: HandBackCommand, Pkt: pkt, Debt: Backoff}, rest)
		return
	}
	if err != nil {
		ln.fail(err)
		return
	}
	if !ln.busy {
		ln.settle() // commands goes on with what the client sent next
	}
}

// The lane is the session's way of running commands while the loop serves
// it (proxy's commandExec, in proxy/laneglue_linux.go): nothing waits, a
// response is relayed as it arrives (relayBackend).

// Busy reports whether a command's response is under way: the loop
// follows one at a time.
func (ln *Lane) Busy() bool { return ln.busy }

// Expect starts following the response (of kind, wire.RespResult, ...;
// cursor: an execute that opened a cursor) to a command the session has
// just written to the backend leg; it is relayed as it arrives.
func (ln *Lane) Expect(kind int, cursor bool) {
	ln.response.Start(kind, cursor)
	ln.busy = true
}

// Watch says whether the next response is RelayQueryOr's, whose watcher
// is asked about its first packet (Session.Judge).
func (ln *Lane) Watch(on bool) { ln.watching = on }

// settle marks the session idle after a command once the client has taken
// the whole answer (KILL closes only idle sessions, Shutdown closes them
// at once), and closes it if the proxy is shutting down.
func (ln *Lane) settle() {
	if len(ln.clientPending) > 0 {
		return // drainPend settles it
	}
	ln.idle.Store(true)
	ln.since.Store(ln.r.Now)
	if ln.draining.Load() {
		ln.log.Debug("session closed: proxy shutting down")
		ln.teardown()
	}
}

// idleAgain ends a response or a wait for the client to take one: the
// session runs what the client sent meanwhile, or waits for it.
func (ln *Lane) idleAgain() {
	ln.settle()
	if ln.Gone || len(ln.clientPending) > 0 {
		return
	}
	if len(ln.clientIn) > 0 {
		ln.commands(ln.clientIn)
	} else if ln.clientEOF {
		ln.clientGone()
	}
}

// fail ends the session on an error a command met (Session.Fail says
// what the client is told, if anything).
func (ln *Lane) fail(err error) {
	ln.sess.Fail(err)
	ln.teardown()
}

// handOff gives the session back to its goroutine with m saying where it
// stands; clientIn is what the client sent that the goroutine must read
// first.
func (ln *Lane) handOff(m HandBack, clientIn []byte) {
	ln.l.Detach(&ln.Lane)
	m.ClientFD, m.BackendFD = ln.ClientFD, ln.BackendFD
	m.Pkt = clone(m.Pkt)
	m.ClientIn = clone(clientIn)
	m.BackendIn = clone(ln.backendPartial)
	m.ClientPending, m.BackendPending = ln.clientPending, ln.backendPending
	m.ClientSeq, m.BackendSeq = ln.clientLeg.Seq, ln.backendLeg.Seq
	if m.Kind == HandBackResume {
		m.Response = ln.response
	}
	ln.Gone = true
	ln.sess.Leave(m)
}

// teardown closes the session's sockets; its goroutine then ends.
func (ln *Lane) teardown() {
	ln.l.Detach(&ln.Lane)
	ln.sess.Teardown(ln.busy, len(ln.backendPending) == 0)
	ln.Gone = true
	ln.sess.Leave(HandBack{Kind: HandBackClosed})
}

// ShutdownClient and ShutdownBackend end a socket of the lane from another
// goroutine (KILL, Shutdown, a client gone mid-command), under the
// session's lock: the descriptors are the loop's to close, but shutting
// a socket down is safe from anywhere, and the loop then sees it end.
func (ln *Lane) ShutdownClient()  { _ = unix.Shutdown(ln.ClientFD, unix.SHUT_RDWR) }
func (ln *Lane) ShutdownBackend() { _ = unix.Shutdown(ln.BackendFD, unix.SHUT_RDWR) }

// Legs are the session's legs while the loop serves it: no buffers of
// their own, they write through the runner's writers.
func (ln *Lane) Legs() (client, backend *wire.Leg) { return &ln.clientLeg, &ln.backendLeg }

// AddClientIn adds b to what the client sent that the lane runs first
// (what the session's goroutine had read ahead).
func (ln *Lane) AddClientIn(b []byte) { ln.clientIn = append(ln.clientIn, b...) }

// ClientIn is what the client sent that the lane has not run yet.
func (ln *Lane) ClientIn() []byte { return ln.clientIn }

// State is where a lane stands, for tests (under Mu) and their failure
// messages.
type State struct {
	Busy, ClientReadable, BackendReadable, ClientEOF bool
	// Bytes the client sent that have not run, and bytes the sockets did
	// not take yet.
	ClientIn, BackendPending, ClientPending int
}

// State says where the lane stands; the caller holds Mu.
func (ln *Lane) State() State {
	return State{Busy: ln.busy, ClientReadable: ln.clientReadable, BackendReadable: ln.backendReadable, ClientEOF: ln.clientEOF,
		ClientIn: len(ln.clientIn), BackendPending: len(ln.backendPending), ClientPending: len(ln.clientPending)}
}

// Rearm has the loop look at the lane again (Loop.Rearm).
func (ln *Lane) Rearm() { ln.l.Rearm(&ln.Lane) }

func clone(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}
