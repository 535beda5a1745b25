package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/leafproxy/leafproxy/internal/sqltext"
	"github.com/leafproxy/leafproxy/proxy/eventloop"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// What a loop hands back to a session's goroutine (handBack.kind).
const (
	handBackClosed  = iota // the loop closed the session: the goroutine ends it
	handBackCommand        // run pkt: the loop could not (it would have waited)
	handBackResume         // finish the response under way (tr): LOCAL INFILE
	handBackIdle           // no command under way: a large one arriving, or the backend spoke unasked
)

// loopBackoff is how many commands a session's goroutine serves after
// taking one over from a loop before it tries the loop again: a client
// whose commands keep needing the goroutine (a prepare per statement on a
// rule table, say) then pays for the move once per loopBackoff commands.
const loopBackoff = 16

type handBack struct {
	kind                          int
	clientFD, backendFD           int
	pkt                           []byte        // handBackCommand
	class                         sqltext.Class // handBackCommand with classed: pkt's class, read on the loop
	classed                       bool
	clientIn                      []byte        // client bytes to read first
	backendIn                     []byte        // backend bytes to read first
	clientPending, backendPending []byte        // bytes to write first
	clientSeq, backendSeq         uint8         // the legs' sequence ids
	response                      respTracker   // handBackResume
	after                         afterAction   // handBackResume
	infile                        bool          // handBackResume: the client's LOCAL INFILE data comes first
	redo                          AnswerWatcher // handBackResume: the response is RelayQueryOr's, and redo's verdict on its first packet is to be carried out
	verdict                       firstVerdict  // with redo
	backendEvent                  bool          // handBackIdle: look at what the backend sent
	debt                          int           // commands the goroutine serves before trying the loop again
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
	if pr, ok := s.b.RW.(*prefixRW); ok && len(pr.prefix) > 0 {
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
	ln := newLane(l, s, cfd, bfd)
	// What the client sent already: buffered by the leg's reader, and what
	// a loop handed back and the reader has not reached yet.
	if n := s.c.Buffered(); n > 0 {
		b, _ := s.c.R.Peek(n)
		ln.clientIn = append([]byte(nil), b...)
	}
	if pr, ok := s.c.RW.(*prefixRW); ok && len(pr.prefix) > 0 {
		ln.clientIn = append(ln.clientIn, pr.prefix...)
		pr.prefix = nil
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
	s.c, s.b = &ln.clientLeg, &ln.backendLeg
	s.parked = false
	s.exec = ln
	handBackc := s.handBackChan()
	s.srv.loopMoves.Add(1)
	s.srv.loopSessions.Add(1)
	if !l.Post(&ln.Lane) {
		// The loop stopped meanwhile (it failed): carry on here.
		s.srv.loopSessions.Add(-1)
		s.exec = onGoroutine{}
		return handBack{kind: handBackIdle, clientFD: cfd, backendFD: bfd, clientIn: ln.clientIn, clientSeq: ln.clientLeg.Seq, backendSeq: ln.backendLeg.Seq, debt: loopBackoff}, true
	}
	return <-handBackc, true
}

// fromLoop takes the session back from its loop and carries on where the
// loop stopped. true: the session is over.
func (s *Session) fromLoop(ctx context.Context, m *handBack) bool {
	if m.kind == handBackClosed {
		s.ending = endClose // the loop has said goodbye to the backend (lane.endBackend)
		return true
	}
	s.goroutineTurns = m.debt
	if err := s.leaveLoop(m); err != nil {
		s.log.Warn("session closed: could not take it back from the event loop", "err", err)
		return true
	}
	switch m.kind {
	case handBackCommand:
		s.srv.armHangupWatch()
		s.handed, s.handedOK = m.class, m.classed
		err := s.dispatch(ctx, m.pkt) // counted when the loop read it
		s.handedOK = false
		s.endCommand()
		if err != nil {
			s.endOnError(err)
			return true
		}
		if s.endIfKilled() {
			return true
		}
	case handBackResume:
		s.srv.armHangupWatch()
		err := s.resume(ctx, m)
		s.endCommand()
		if err != nil {
			s.endOnError(err)
			return true
		}
	case handBackIdle:
		if m.backendEvent {
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
	if m.redo != nil {
		retried, done, err := s.settleFirst(m.verdict, m.after)
		if retried {
			return m.redo.Redo(ctx)
		}
		if done || err != nil {
			return err
		}
	}
	if m.infile {
		if err := s.relayLocalFile(); err != nil {
			return s.setFatal(err)
		}
	}
	if _, err := s.walkFrom(&m.response, walkRelay); err != nil {
		return s.setFatal(err)
	}
	s.applyAfter(m.after, m.response.OK)
	return s.setFatal(s.c.Flush())
}

// leaveLoop gives the session net.Conns over the sockets the loop used
// (the runtime's netpoller watches them again) and writes what the loop
// could not yet.
func (s *Session) leaveLoop(m *handBack) error {
	s.mu.Lock()
	cc, cerr := eventloop.FDConn(m.clientFD)
	bc, berr := eventloop.FDConn(m.backendFD)
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
	s.c = legOver("client", cc, m.clientIn, clientReadBuf, &clientWriters)
	s.c.Seq = m.clientSeq
	s.b = legOver("backend", bc, m.backendIn, backReadBuf, &backWriters)
	s.b.Seq = m.backendSeq
	for _, p := range []struct {
		l    *wire.Leg
		pend []byte
	}{{s.c, m.clientPending}, {s.b, m.backendPending}} {
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

// legOver is a leg on c whose reads return prefix first, with buffers from
// the pools the idle sessions give theirs back to.
func legOver(name string, c net.Conn, prefix []byte, rsize int, writers interface{ Get() any }) *wire.Leg {
	l := &wire.Leg{Conn: c, RW: wire.LegIO(c), Name: name}
	if len(prefix) > 0 {
		l.RW = &prefixRW{prefix: prefix, ReadWriter: l.RW}
	}
	l.R = bufio.NewReaderSize(l.RW, rsize)
	l.W = writers.Get().(*bufio.Writer)
	l.W.Reset(l.RW)
	if len(prefix) > 0 {
		_, _ = l.R.Peek(1) // buffered() now says something is there
	}
	return l
}

// prefixRW reads prefix before the connection (bytes a loop read ahead).
type prefixRW struct {
	prefix []byte
	io.ReadWriter
}

func (p *prefixRW) Read(b []byte) (int, error) {
	if len(p.prefix) > 0 {
		n := copy(b, p.prefix)
		p.prefix = p.prefix[n:]
		return n, nil
	}
	return p.ReadWriter.Read(b)
}
