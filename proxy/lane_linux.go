package proxy

import (
	"errors"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/leafproxy/leafproxy/proxy/eventloop"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// lane is a session while the event loop serves it: its two sockets (dups
// made by the session's goroutine, which closed its own net.Conns so that
// the runtime's netpoller no longer watches them; eventloop.Lane, with
// what the runners coordinate on) and what the loop keeps between events.
// One runner at a time handles it (Mu); ownership moves between the loop
// and the session's goroutine with Loop.Post and the session's handBackc
// channel. It is the lane's eventloop.Handler (loopglue_linux.go).
type lane struct {
	eventloop.Lane
	l *loop
	r *eventloop.Runner // the runner handling it now (bind)
	s *Session

	// The session's legs while the loop serves it: no buffers of their own;
	// they write through the runner's writers into the sinks (bind).
	clientLeg, backendLeg   wire.Leg
	clientSink, backendSink sink

	clientIn       []byte // client bytes read but not run yet: a partial or pipelined command
	backendPartial []byte // backend bytes: the start of a packet not yet classifiable
	clientPending  []byte // bytes for the client its socket did not take yet
	backendPending []byte // bytes for the backend its socket did not take yet (see backendFull)

	busy       bool              // a command's response is under way
	response   respTracker       // that response
	facts      wire.RespObserver // the session, as response tells it what the backend said (set once)
	after      afterAction       // applied when it is complete
	inPacket   bool              // inside a physical packet of the response
	bodyLeft   int               // its payload bytes still to pass on
	continued  bool              // the logical packet goes on in the next physical packet
	packetKind int               // what the logical packet was (respTracker), acted on at its end

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
	// watcher: the response under way belongs to RelayQueryOr, whose
	// watcher is asked about its first packet (watchFirst).
	watcher AnswerWatcher
	// rowsWatcher: the response under way is a result set of a watched
	// statement, told when it ends without an ERR.
	rowsWatcher AnswerWatcher
	// okBuf: a reported OK as the client gets it (relayReportedOK).
	okBuf []byte
}

func newLane(l *loop, s *Session, cfd, bfd int) *lane {
	ln := &lane{l: l, s: s, facts: s.facts()}
	ln.Init(ln, cfd, bfd)
	ln.clientSink = sink{ln: ln, fd: cfd, client: true}
	ln.backendSink = sink{ln: ln, fd: bfd}
	ln.clientLeg = wire.Leg{Name: "client", Seq: s.c.Seq}
	ln.backendLeg = wire.Leg{Name: "backend", Seq: s.b.Seq}
	return ln
}

// bind lends the lane runner r's writers for this handling.
func (ln *lane) bind(r *eventloop.Runner) {
	ln.r = r
	r.ClientW.Reset(&ln.clientSink)
	ln.clientLeg.W = r.ClientW
	r.BackendW.Reset(&ln.backendSink)
	ln.backendLeg.W = r.BackendW
}

// handle acts on what happened (eventloop.Pend* bits); the caller holds ln.Mu.
func (ln *lane) handle(bits uint32) {
	if bits&eventloop.PendAttach != 0 {
		if ln.l.Draining() || ln.s.srv.draining.Load() {
			ln.s.log.Debug("session closed: proxy shutting down")
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
func (ln *lane) flushWriters() {
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
func (ln *lane) check() {
	if ln.busy || len(ln.clientPending) > 0 {
		return
	}
	s := ln.s
	if ln.l.Draining() {
		s.log.Debug("session closed: proxy shutting down")
		ln.teardown()
		return
	}
	if limit := s.srv.cfg.Limits.IdleTimeout; limit > 0 && time.Since(time.Unix(0, s.since.Load())) >= limit {
		s.endOnClientError(os.ErrDeadlineExceeded)
		ln.teardown()
	}
}

// readClient reads what the client sent and runs the commands it completes,
// until the socket is empty or the lane cannot take more.
func (ln *lane) readClient() {
	for !ln.Gone && !ln.clientEOF && len(ln.clientIn) < eventloop.BufSize && !ln.backendFull() {
		buf := ln.r.ClientBuf
		n, errno := eventloop.ReadFD(ln.ClientFD, buf)
		switch {
		case errno == unix.EAGAIN:
			ln.clientReadable = false
			return
		case errno != 0:
			ln.s.endOnClientError(&wire.IOError{Leg: "client", Err: os.NewSyscallError("read", errno)})
			ln.teardown()
			return
		case n == 0:
			ln.clientReadable = false
			ln.clientEOF = true
			if !ln.busy && len(ln.clientPending) == 0 && (len(ln.clientIn) == 0 || !ln.backendFull()) {
				ln.clientGone()
			} else if ln.busy && len(ln.clientIn) == 0 {
				ln.s.abandonSoon() // gone mid-command: stop the statement (hangup.go)
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
func (ln *lane) clientGone() {
	if len(ln.clientIn) > 0 {
		ln.s.endOnClientError(&wire.IOError{Leg: "client", Err: io.ErrUnexpectedEOF})
	} else {
		ln.s.endOnClientError(io.EOF)
	}
	ln.teardown()
}

// commands runs the complete commands at the front of buf (the loop's read
// buffer or ln.clientIn) while nothing else is under way and the backend takes
// bytes, and keeps the rest.
func (ln *lane) commands(buf []byte) {
	for !ln.Gone && !ln.busy && len(ln.clientPending) == 0 && !ln.backendFull() && len(buf) >= 4 {
		n := int(buf[0]) | int(buf[1])<<8 | int(buf[2])<<16
		if buf[3] != 0 {
			ln.s.endOnClientError(&wire.IOError{Leg: "client", Err: wire.SequenceError{Got: buf[3], Want: 0}})
			ln.teardown()
			return
		}
		if 4+n > eventloop.BufSize {
			// Larger than the loop reads: the session's goroutine reads it,
			// with limits.command_memory (Session.readCommand).
			ln.handOff(handBack{kind: handBackIdle, debt: 1}, buf)
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
func (ln *lane) command(pkt, rest []byte) {
	s := ln.s
	if len(pkt) == 0 {
		s.log.Info("session closed: empty command packet")
		ln.teardown()
		return
	}
	s.countCommand(pkt[0])
	s.c.Seq = 1 // the command's own packet was sequence 0
	s.cmdSeq = 1
	s.idle.Store(false)
	s.since.Store(ln.r.Now)
	ln.wrote = false
	err := s.dispatch(ln.l.Ctx(), pkt)
	if err != nil && errors.Is(err, ErrWouldBlock) && s.fatal == nil {
		if ln.wrote || ln.busy || ln.r.ClientW.Buffered() > 0 || ln.r.BackendW.Buffered() > 0 {
			// Run again on the goroutine, the command would be sent or
			// answered twice: an interceptor that waits after writing is
			// a bug, and the session cannot go on.
			s.log.Error("session closed: an interceptor returned ErrWouldBlock after writing to the client or the backend")
			ln.teardown()
			return
		}
		ln.handOff(handBack{kind: handBackCommand, pkt: pkt, debt: loopBackoff, class: s.received, classed: s.receivedOK}, rest)
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

// The lane is the session's commandExec while the loop serves it: nothing
// waits, a response is relayed as it arrives (relayBackend).

func (ln *lane) mayWait() error { return ErrWouldBlock }

func (ln *lane) relay(_ *Session, pkt []byte, kind int, a afterAction) (bool, error) {
	return false, ln.send(pkt, kind, a)
}

func (ln *lane) relayPrepare(_ *Session, pkt []byte) (PrepareResult, error) {
	return PrepareResult{}, ln.send(pkt, respPrepare, afterAction{})
}

// relayQueryOr sends the statement at once; w is asked about the first
// packet of its answer as it arrives (watchFirst), and only an ERR to
// retry or a restore hands the session to its goroutine, which carries
// the verdict out (and may Redo).
func (ln *lane) relayQueryOr(s *Session, pkt []byte, w AnswerWatcher) error {
	ln.watcher = w
	err := s.relayQuery(pkt)
	if !ln.busy {
		ln.watcher = nil
	}
	return err
}

// relayExecuteOr is relayQueryOr for an execute packet.
func (ln *lane) relayExecuteOr(s *Session, pkt []byte, w AnswerWatcher) error {
	ln.watcher = w
	err := s.RelayExecute(pkt)
	if !ln.busy {
		ln.watcher = nil
	}
	return err
}

// send writes a command whose response the loop relays as it arrives.
func (ln *lane) send(pkt []byte, kind int, a afterAction) error {
	s := ln.s
	if s.fatal != nil {
		return s.fatal
	}
	if ln.busy {
		// A second relay within one command (an interceptor calling
		// RelayQuery twice): the loop follows one response at a time.
		return s.setFatal(errorf("a command relayed more than one statement on an event loop"))
	}
	if err := s.b.WriteCommand(pkt); err != nil {
		return s.setFatal(err)
	}
	if err := s.b.Flush(); err != nil {
		return s.setFatal(err)
	}
	if kind == respNone {
		s.applyAfter(a, true)
		return nil
	}
	ln.response.Start(kind, kind == respExecute && executeCursor(pkt))
	ln.after = a
	ln.busy = true
	return nil
}

// settle marks the session idle after a command once the client has taken
// the whole answer (KILL closes only idle sessions, Shutdown closes them
// at once), and closes it if the proxy is shutting down.
func (ln *lane) settle() {
	if len(ln.clientPending) > 0 {
		return // drainPend settles it
	}
	s := ln.s
	s.idle.Store(true)
	s.since.Store(ln.r.Now)
	if s.srv.draining.Load() {
		s.log.Debug("session closed: proxy shutting down")
		ln.teardown()
	}
}

// idleAgain ends a response or a wait for the client to take one: the
// session runs what the client sent meanwhile, or waits for it.
func (ln *lane) idleAgain() {
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

// fail ends the session on an error a command met (Session.endOnError
// says what the client is told, if anything).
func (ln *lane) fail(err error) {
	ln.s.setFatal(err)
	ln.s.endOnError(err)
	ln.teardown()
}

// handOff gives the session back to its goroutine with m saying where it
// stands; clientIn is what the client sent that the goroutine must read
// first.
func (ln *lane) handOff(m handBack, clientIn []byte) {
	s := ln.s
	ln.l.Detach(&ln.Lane)
	m.clientFD, m.backendFD = ln.ClientFD, ln.BackendFD
	m.pkt = clone(m.pkt)
	m.clientIn = clone(clientIn)
	m.backendIn = clone(ln.backendPartial)
	m.clientPending, m.backendPending = ln.clientPending, ln.backendPending
	m.clientSeq, m.backendSeq = ln.clientLeg.Seq, ln.backendLeg.Seq
	if m.kind == handBackResume {
		m.response, m.after = ln.response, ln.after
	}
	ln.Gone = true
	s.exec = onGoroutine{}
	s.srv.loopSessions.Add(-1)
	s.srv.loopHandoffs.Add(1)
	s.handBackc <- m
}

// teardown closes the session's sockets; its goroutine then ends.
func (ln *lane) teardown() {
	s := ln.s
	ln.l.Detach(&ln.Lane)
	ln.endBackend()
	s.mu.Lock()
	_ = unix.Close(ln.ClientFD)
	_ = unix.Close(ln.BackendFD)
	s.loopSockets = nil
	s.mu.Unlock()
	ln.Gone = true
	s.exec = onGoroutine{}
	s.srv.loopSessions.Add(-1)
	s.handBackc <- handBack{kind: handBackClosed}
}

// shutdownClient and shutdownBackend end a socket of the lane from another
// goroutine (KILL, Shutdown, a client gone mid-command), under the
// session's lock: the descriptors are the loop's to close, but shutting
// a socket down is safe from anywhere, and the loop then sees it end.
func (ln *lane) shutdownClient()  { _ = unix.Shutdown(ln.ClientFD, unix.SHUT_RDWR) }
func (ln *lane) shutdownBackend() { _ = unix.Shutdown(ln.BackendFD, unix.SHUT_RDWR) }

func clone(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}
