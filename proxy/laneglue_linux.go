package proxy

import (
	"context"
	"errors"

	"golang.org/x/sys/unix"

	"github.com/leafproxy/leafproxy/proxy/eventloop"
	lanes "github.com/leafproxy/leafproxy/proxy/lane"
	"github.com/leafproxy/leafproxy/proxy/relay"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// The event loop's engine is package eventloop; a session it serves is a
// lane (package proxy/lane), which the engine calls through
// eventloop.Handler, and which calls the session through lane.Session:
// laneSession, here, also the session's commandExec while the loop
// serves it.

// loop is the server's event loop (Server.loop).
type loop = eventloop.Loop

// lane is a session while the event loop serves it (Session.loopSockets).
type lane = lanes.Lane

// laneSession is a session as its lane sees it, and the session's
// commandExec while the loop serves it: nothing waits, a command is sent
// and its response relayed by the lane as it arrives. It holds what the
// lane keeps for the session between a command and the end of its
// response.
type laneSession struct {
	s       *Session
	ln      lane
	after   afterAction   // applied when the response under way is complete (Finished)
	watcher AnswerWatcher // RelayQueryOr's: asked about its answer's first packet (Judge), told of its rows (Finished)
	redo    AnswerWatcher // Judge's hand-off: whose verdict the goroutine carries out
	verdict relay.Verdict // with redo
}

// newLaneSession is s's lane on l over the sockets cfd and bfd.
func newLaneSession(l *loop, s *Session, cfd, bfd int) *laneSession {
	g := &laneSession{s: s}
	g.ln.Setup(l, g, lanes.Config{
		Log: s.log, Facts: s.facts(),
		Idle: &s.idle, Since: &s.since, Draining: &s.srv.draining,
		IdleTimeout: s.srv.cfg.Limits.IdleTimeout, MaxWatchedErr: maxRetryErr,
		ClientSeq: s.c.Seq, BackendSeq: s.b.Seq,
	}, cfd, bfd)
	return g
}

// lane.Session.

func (g *laneSession) Command(ctx context.Context, pkt []byte) (bool, error) {
	s := g.s
	s.countCommand(pkt[0])
	s.cmdSeq = 1
	err := s.dispatch(ctx, pkt)
	return err != nil && errors.Is(err, ErrWouldBlock) && s.fatal == nil, err
}

func (g *laneSession) Finished(now int64, ok, rows bool) {
	if w := g.watcher; w != nil {
		g.watcher = nil
		if rows {
			w.OnRows()
		}
	}
	g.s.relayDone(now)
	g.s.applyAfter(g.after, ok)
	g.after = afterAction{}
}

func (g *laneSession) RelayedErr(head []byte) { g.s.relayedErr(head) }

func (g *laneSession) Judge(isErr bool, p []byte) (int, uint64) {
	w := g.watcher
	g.watcher = nil
	v := relay.Judge(w, isErr, p)
	switch v.Act {
	case relay.ActRelay:
		return lanes.JudgeRelay, 0
	case relay.ActReport:
		return lanes.JudgeReport, v.InsertID
	}
	g.redo, g.verdict = w, v
	return lanes.JudgeHandOff, 0
}

func (g *laneSession) Fail(err error) {
	g.s.setFatal(err)
	g.s.endOnError(err)
}

func (g *laneSession) EndOnClientError(err error) { g.s.endOnClientError(err) }

func (g *laneSession) AbandonSoon() { g.s.abandonSoon() }

// Teardown: how the backend hears that the session ends (hangup.go) is
// COM_QUIT between commands, unless the client left without one;
// mid-command the statement is killed (its client is gone or the session
// is being cut); nothing when the backend failed or a command is half
// written. Then the lane's sockets close.
func (g *laneSession) Teardown(busy, quit bool) {
	s := g.s
	var ie *wire.IOError
	switch {
	case errors.As(s.fatal, &ie) && ie.Leg == "backend":
	case busy:
		s.abandon()
	case quit && !s.left:
		_, _ = eventloop.WriteFD(g.ln.BackendFD, comQuit[:])
	}
	s.mu.Lock()
	_ = unix.Close(g.ln.ClientFD)
	_ = unix.Close(g.ln.BackendFD)
	s.loopSockets = nil
	s.mu.Unlock()
}

func (g *laneSession) Leave(m lanes.HandBack) {
	s := g.s
	hb := handBack{HandBack: m}
	switch m.Kind {
	case lanes.HandBackCommand:
		hb.class, hb.classed = s.received, s.receivedOK
	case lanes.HandBackResume:
		hb.after = g.after
		if m.Redo {
			hb.watcher, hb.verdict = g.redo, g.verdict
		}
	}
	s.exec = onGoroutine{}
	s.srv.loopSessions.Add(-1)
	if m.Kind != lanes.HandBackClosed {
		s.srv.loopHandoffs.Add(1)
	}
	s.handBackc <- hb
}

// commandExec.

func (*laneSession) mayWait() error { return ErrWouldBlock }

func (g *laneSession) relay(_ *Session, pkt []byte, kind int, a afterAction) (bool, error) {
	return false, g.send(pkt, kind, a)
}

func (g *laneSession) relayPrepare(_ *Session, pkt []byte) (PrepareResult, error) {
	return PrepareResult{}, g.send(pkt, respPrepare, afterAction{})
}

// relayQueryOr sends the statement at once; w is asked about the first
// packet of its answer as it arrives (Judge), and only an ERR to retry or
// a restore hands the session to its goroutine, which carries the verdict
// out (and may Redo).
func (g *laneSession) relayQueryOr(s *Session, pkt []byte, w AnswerWatcher) error {
	g.watcher = w
	g.ln.Watch(true)
	err := s.relayQuery(pkt)
	if !g.ln.Busy() {
		g.watcher = nil
		g.ln.Watch(false)
	}
	return err
}

// relayExecuteOr is relayQueryOr for an execute packet.
func (g *laneSession) relayExecuteOr(s *Session, pkt []byte, w AnswerWatcher) error {
	g.watcher = w
	g.ln.Watch(true)
	err := s.RelayExecute(pkt)
	if !g.ln.Busy() {
		g.watcher = nil
		g.ln.Watch(false)
	}
	return err
}

// send writes a command whose response the lane relays as it arrives.
func (g *laneSession) send(pkt []byte, kind int, a afterAction) error {
	s := g.s
	if s.fatal != nil {
		return s.fatal
	}
	if g.ln.Busy() {
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
	g.ln.Expect(kind, kind == respExecute && executeCursor(pkt))
	g.after = a
	return nil
}
