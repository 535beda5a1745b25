package proxy

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/leafproxy/leafproxy/internal/sqltext"
	"github.com/leafproxy/leafproxy/proxy/eventloop"
	lanes "github.com/leafproxy/leafproxy/proxy/lane"
	"github.com/leafproxy/leafproxy/proxy/relay"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// loopBackoff is how many commands a session's goroutine serves after
// taking one over from a loop before it tries the loop again (lane.Backoff).
const loopBackoff = lanes.Backoff

// handBack is what a lane hands back to a session's goroutine: where the
// lane left it (lane.HandBack) and what the session had kept for it
// (laneSession.Leave).
type handBack struct {
	lanes.HandBack
	class   sqltext.Class // HandBackCommand with classed: Pkt's class, read on the loop
	classed bool
	after   afterAction   // HandBackResume
	watcher AnswerWatcher // HandBackResume with Redo: whose verdict on the first packet is to be carried out
	verdict relay.Verdict // with watcher
}

// loopsOn: LEAFPROXY_LOOP=0 keeps every session on its own goroutine (for
// comparing; bench/haproxy_test.go's LEAFPROXY_BENCH_VARIANTS).
var loopsOn = os.Getenv("LEAFPROXY_LOOP") != "0"

// startLoops creates the server's event loop with Config.EventLoops
// runners.
func (srv *Server) startLoops() {
	n := srv.cfg.EventLoops
	if n == 0 {
		n = runtime.GOMAXPROCS(0)
	}
	if n < 0 || !loopsOn {
		return
	}
	l, err := eventloop.New(srv.baseCtx, n, srv.cfg.Limits.IdleTimeout, srv.log)
	if err != nil {
		srv.log.Warn("event loops unavailable; sessions run on their own goroutines", "err", err)
		return
	}
	srv.loop = l
	srv.loopCount.Store(int32(n))
}

// stopLoops stops the loop once every session has ended (Shutdown);
// calling it again does nothing.
func (srv *Server) stopLoops() {
	srv.loopsStop.Do(func() {
		if srv.loop != nil {
			srv.loop.Close()
		}
		srv.loopCount.Store(0)
	})
}

func (srv *Server) drainLoops() {
	if srv.loop != nil {
		srv.loop.RequestDrain()
	}
}

// loopFor is the loop that may take the session now, or nil: none
// configured, a leg that is not a plain socket (TLS, compression, a test's
// pipe), or something already read from the backend that the goroutine
// must look at.
func (s *Session) loopFor() *loop {
	if s.noLoop {
		return nil
	}
	s.srv.loopsOnce.Do(s.srv.startLoops)
	l := s.srv.loop
	if l == nil || s.c.Comp != nil || !plainConn(s.c.Conn) || !plainConn(s.b.Conn) {
		s.stayOffLoop()
		return nil
	}
	if s.b.R != nil && s.b.Buffered() > 0 {
		return nil
	}
	if pr, ok := s.b.RW.(*lanes.PrefixRW); ok && len(pr.Prefix) > 0 {
		return nil // the backend said something the goroutine has not read
	}
	if l.Dead() {
		return nil
	}
	return l
}

func plainConn(c net.Conn) bool {
	switch c.(type) {
	case *net.TCPConn, *net.UnixConn:
		return true
	}
	return false
}

// runOnLoop moves the session onto l and waits until l hands it back or
// ends it. false: the move did not happen (nothing changed).
func (s *Session) runOnLoop(l *loop) (handBack, bool) {
	cfd, err := eventloop.DupSocket(s.c.Conn)
	if err != nil {
		s.stayOffLoop()
		s.log.Warn("session stays off the event loop", "err", err)
		return handBack{}, false
	}
	bfd, err := eventloop.DupSocket(s.b.Conn)
	if err != nil {
		unix.Close(cfd)
		s.stayOffLoop()
		s.log.Warn("session stays off the event loop", "err", err)
		return handBack{}, false
	}
	for _, fd := range []int{cfd, bfd} {
		if err := eventloop.AssertNonblocking(fd); err != nil {
			unix.Close(cfd)
			unix.Close(bfd)
			s.stayOffLoop()
			s.log.Error("session stays off the event loop", "err", err)
			return handBack{}, false
		}
	}
	g := newLaneSession(l, s, cfd, bfd)
	ln := &g.ln
	// What the client sent already: buffered by the leg's reader, and what
	// a loop handed back and the reader has not reached yet.
	if n := s.c.Buffered(); n > 0 {
		b, _ := s.c.R.Peek(n)
		ln.AddClientIn(b)
	}
	if pr, ok := s.c.RW.(*lanes.PrefixRW); ok && len(pr.Prefix) > 0 {
		ln.AddClientIn(pr.Prefix)
		pr.Prefix = nil
	}
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		unix.Close(cfd)
		unix.Close(bfd)
		return handBack{}, false
	}
	oldC, oldB := s.cconn, s.bconn
	s.cconn, s.bconn, s.loopSockets = nil, nil, ln
	s.mu.Unlock()
	// Closing the originals takes them out of the runtime's netpoller; the
	// dups stay open, watched by the loop alone.
	oldC.Close()
	oldB.Close()
	if !s.parked {
		s.park()
	}
	s.c, s.b = ln.Legs()
	s.parked = false
	s.exec = g
	handBackc := s.handBackChan()
	s.srv.loopMoves.Add(1)
	s.srv.loopSessions.Add(1)
	if !l.Post(&ln.Lane) {
		// The loop stopped meanwhile (it failed): carry on here.
		s.srv.loopSessions.Add(-1)
		s.exec = onGoroutine{}
		return handBack{HandBack: lanes.HandBack{Kind: lanes.HandBackIdle, ClientFD: cfd, BackendFD: bfd, ClientIn: ln.ClientIn(), ClientSeq: s.c.Seq, BackendSeq: s.b.Seq, Debt: loopBackoff}}, true
	}
	return <-handBackc, true
}

// fromLoop takes the session back from its loop and carries on where the
// loop stopped. true: the session is over.
func (s *Session) fromLoop(ctx context.Context, m *handBack) bool {
	if m.Kind == lanes.HandBackClosed {
		s.ending = endClose // the loop has said goodbye to the backend (laneSession.Teardown)
		return true
	}
	s.goroutineTurns = m.Debt
	if err := s.leaveLoop(m); err != nil {
		s.log.Warn("session closed: could not take it back from the event loop", "err", err)
		return true
	}
	switch m.Kind {
	case lanes.HandBackCommand:
		s.srv.armHangupWatch()
		s.handed, s.handedOK = m.class, m.classed
		err := s.dispatch(ctx, m.Pkt) // counted when the loop read it
		s.handedOK = false
		s.endCommand()
		if err != nil {
			s.endOnError(err)
			return true
		}
		if s.endIfKilled() {
			return true
		}
	case lanes.HandBackResume:
		s.srv.armHangupWatch()
		err := s.resume(ctx, m)
		s.endCommand()
		if err != nil {
			s.endOnError(err)
			return true
		}
	case lanes.HandBackIdle:
		if m.BackendEvent {
			if err := s.backendGone(); err != nil {
				s.endOnClientError(err)
				return true
			}
		}
	}
	return false
}

// resume finishes a response the loop began (handBackResume).
func (s *Session) resume(ctx context.Context, m *handBack) error {
	if m.Redo {
		retried, done, err := s.settleFirst(m.verdict, m.after)
		if retried {
			return m.watcher.Redo(ctx)
		}
		if done || err != nil {
			return err
		}
	}
	if m.Infile {
		if err := s.relayLocalFile(); err != nil {
			return s.setFatal(err)
		}
	}
	if _, err := s.walkFrom(&m.Response, walkRelay); err != nil {
		return s.setFatal(err)
	}
	s.applyAfter(m.after, m.Response.OK)
	return s.setFatal(s.c.Flush())
}

// leaveLoop gives the session net.Conns over the sockets the loop used
// (the runtime's netpoller watches them again) and writes what the loop
// could not yet.
func (s *Session) leaveLoop(m *handBack) error {
	s.mu.Lock()
	cc, cerr := eventloop.FDConn(m.ClientFD)
	bc, berr := eventloop.FDConn(m.BackendFD)
	s.loopSockets = nil
	if cerr == nil && berr == nil {
		s.cconn, s.bconn = cc, bc
	}
	closing := s.closing.Load()
	s.mu.Unlock()
	if cerr != nil || berr != nil {
		if cc != nil {
			cc.Close()
		}
		if bc != nil {
			bc.Close()
		}
		return fmt.Errorf("reopen the session's sockets: %v, %v", cerr, berr)
	}
	if closing { // a forced close raced the move: the next I/O fails and ends the session
		cc.Close()
		bc.Close()
	}
	s.c = lanes.LegOver("client", cc, m.ClientIn, clientReadBuf, &clientWriters)
	s.c.Seq = m.ClientSeq
	s.b = lanes.LegOver("backend", bc, m.BackendIn, backReadBuf, &backWriters)
	s.b.Seq = m.BackendSeq
	for _, p := range []struct {
		l    *wire.Leg
		pend []byte
	}{{s.c, m.ClientPending}, {s.b, m.BackendPending}} {
		if len(p.pend) == 0 {
			continue
		}
		if _, err := p.l.W.Write(p.pend); err != nil {
			return s.setFatal(p.l.Fail(err))
		}
		if err := p.l.Flush(); err != nil {
			return s.setFatal(err)
		}
	}
	s.srv.idleMem.TookBack(s.bufferBytes())
	return nil
}
