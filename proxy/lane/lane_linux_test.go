package lane

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
	"github.com/leafproxy/leafproxy/proxy/eventloop"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// The lane's own tests: a real event loop, socket pairs for the client
// and the backend, and a fake session that relays each command as
// package proxy's lane glue does (WriteCommand on the lane's backend leg,
// then Expect). No protocol server, no database: the test plays both
// peers byte by byte.

// fakeSession is the lane's Session: it records what the lane tells it.
type fakeSession struct {
	ln *Lane

	mu        sync.Mutex
	commands  [][]byte
	finished  []bool // each response's ok
	errHeads  [][]byte
	clientErr error
	teardowns int
	quit      bool
	left      chan HandBack

	waitOn  string // Command answers wait=true for a command holding this
	watch   bool   // RelayQueryOr: the first packet goes to Judge
	judgeID uint64 // Judge reports this insert id
}

func (f *fakeSession) Command(_ context.Context, pkt []byte) (bool, error) {
	f.mu.Lock()
	f.commands = append(f.commands, bytes.Clone(pkt))
	wait, watch := f.waitOn != "" && bytes.Contains(pkt, []byte(f.waitOn)), f.watch
	f.mu.Unlock()
	if wait {
		return true, nil
	}
	_, b := f.ln.Legs()
	if err := b.WriteCommand(pkt); err != nil {
		return false, err
	}
	if err := b.Flush(); err != nil {
		return false, err
	}
	f.ln.Watch(watch)
	f.ln.Expect(wire.RespResult, false)
	return false, nil
}

func (f *fakeSession) Finished(_ int64, ok, _ bool) {
	f.mu.Lock()
	f.finished = append(f.finished, ok)
	f.mu.Unlock()
}

func (f *fakeSession) RelayedErr(head []byte) {
	f.mu.Lock()
	f.errHeads = append(f.errHeads, bytes.Clone(head))
	f.mu.Unlock()
}

func (f *fakeSession) Judge(isErr bool, _ []byte) (int, uint64) {
	if isErr {
		return JudgeRelay, 0
	}
	return JudgeReport, f.judgeID
}

func (f *fakeSession) Fail(err error) { f.EndOnClientError(err) }

func (f *fakeSession) EndOnClientError(err error) {
	f.mu.Lock()
	f.clientErr = err
	f.mu.Unlock()
}

func (f *fakeSession) AbandonSoon() {}

func (f *fakeSession) Teardown(_, quit bool) {
	f.mu.Lock()
	f.teardowns++
	f.quit = quit
	f.mu.Unlock()
	unix.Close(f.ln.ClientFD)
	unix.Close(f.ln.BackendFD)
}

func (f *fakeSession) Leave(m HandBack) { f.left <- m }

// facts is the session as a response tells it what the backend said.
type facts struct{}

func (facts) SetStatus(uint16)   {}
func (facts) SetPrepared(uint32) {}
func (facts) ForgetPrepared()    {}
func (facts) LocalFiles() bool   { return false }

// lock locks the session's record; the returned func unlocks it.
func (f *fakeSession) lock() func() { f.mu.Lock(); return f.mu.Unlock }

// rig is a loop, a lane on it and the test's ends of its sockets.
type rig struct {
	t               *testing.T
	loop            *eventloop.Loop
	ln              *Lane
	sess            *fakeSession
	client, backend int // the peers' ends (blocking, with a timeout)
	idle            atomic.Bool
	since           atomic.Int64
	draining        atomic.Bool
}

func newRig(t *testing.T, sess *fakeSession) *rig {
	t.Helper()
	loop, err := eventloop.New(context.Background(), 1, 0, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	pair := func(lane int) (int, int) {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.SetNonblock(fds[lane], true); err != nil {
			t.Fatal(err)
		}
		tv := unix.NsecToTimeval(int64(10 * time.Second))
		_ = unix.SetsockoptTimeval(fds[1-lane], unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
		return fds[lane], fds[1-lane]
	}
	cfd, client := pair(0)
	bfd, backend := pair(0)
	r := &rig{t: t, loop: loop, ln: new(Lane), sess: sess, client: client, backend: backend}
	sess.ln = r.ln
	if sess.left == nil {
		sess.left = make(chan HandBack, 4)
	}
	r.ln.Setup(loop, sess, Config{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Facts: facts{},
		Idle: &r.idle, Since: &r.since, Draining: &r.draining, MaxWatchedErr: 512}, cfd, bfd)
	t.Cleanup(func() {
		unix.Close(client)
		unix.Close(backend)
		loop.Close()
	})
	if !loop.Post(&r.ln.Lane) {
		t.Fatal("Post refused")
	}
	return r
}

// packet frames payload with seq.
func packet(seq byte, payload []byte) []byte {
	n := len(payload)
	return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}, payload...)
}

func (r *rig) write(fd int, b []byte) {
	r.t.Helper()
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if err != nil {
			r.t.Fatal(err)
		}
		b = b[n:]
	}
}

// read reads exactly n bytes from the peer end fd (10 s at most).
func (r *rig) read(fd, n int) []byte {
	r.t.Helper()
	b := make([]byte, n)
	for got := 0; got < n; {
		k, err := unix.Read(fd, b[got:])
		if err != nil || k == 0 {
			r.t.Fatalf("read %d of %d bytes: %v (got %q)", got, n, err, b[:got])
		}
		got += k
	}
	return b
}

// nothing asserts that the peer end fd has nothing to read now.
func (r *rig) nothing(fd int, what string) {
	r.t.Helper()
	var b [64]byte
	n, _, err := unix.Recvfrom(fd, b[:], unix.MSG_DONTWAIT)
	if err == nil && n > 0 {
		r.t.Fatalf("%s: got %q", what, b[:n])
	}
}

// waitFor waits until cond holds (checked under the session's lock).
func (r *rig) waitFor(what string, cond func() bool) {
	r.t.Helper()
	testwait.For(r.t, what, func() bool {
		unlock := r.sess.lock()
		defer unlock()
		return cond()
	}, testwait.Within(10*time.Second))
}

// handedBack waits for the lane to hand its session back, of kind.
func (r *rig) handedBack(kind int, what string) HandBack {
	r.t.Helper()
	select {
	case m := <-r.sess.left:
		if m.Kind != kind {
			r.t.Fatalf("%s: handed back kind %d, want %d", what, m.Kind, kind)
		}
		return m
	case <-time.After(10 * time.Second):
		r.t.Fatalf("%s: the session was not handed back", what)
	}
	return HandBack{}
}

var okPacket = []byte{0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00} // 0 rows, insert id 0, autocommit

// TestLaneRelaysACommand: the client's command reaches the backend as it
// was sent; the backend's answer, arriving in pieces, reaches the client
// whole and in order; the session is told the response ended with OK and
// is idle again.
func TestLaneRelaysACommand(t *testing.T) {
	r := newRig(t, &fakeSession{})
	query := append([]byte{0x03}, "SELECT 1"...)
	r.write(r.client, packet(0, query))
	if got, want := r.read(r.backend, 4+len(query)), packet(0, query); !bytes.Equal(got, want) {
		t.Fatalf("the backend got %q, want %q", got, want)
	}
	// A result set of one column and one row, written a few bytes at a
	// time, as a slow backend's segments would come.
	var resp []byte
	resp = append(resp, packet(1, []byte{0x01})...)
	resp = append(resp, packet(2, append([]byte{3, 'd', 'e', 'f', 0, 0, 0, 1, '1', 0, 0x0c, 0x3f, 0, 1, 0, 0, 0, 8, 0x81, 0}, 0, 0))...)
	resp = append(resp, packet(3, []byte{0xfe, 0, 0, 0x02, 0})...)
	resp = append(resp, packet(4, []byte{1, '1'})...)
	resp = append(resp, packet(5, []byte{0xfe, 0, 0, 0x02, 0})...)
	for i := 0; i < len(resp); i += 3 {
		r.write(r.backend, resp[i:min(i+3, len(resp))])
	}
	if got := r.read(r.client, len(resp)); !bytes.Equal(got, resp) {
		t.Fatalf("the client got\n%q, want\n%q", got, resp)
	}
	r.waitFor("the end of the response", func() bool { return len(r.sess.finished) == 1 })
	if r.sess.finished[0] {
		t.Error("a result set was reported as an OK")
	}
	r.waitFor("the session idle", func() bool { return r.idle.Load() })
}

// TestLanePipelinedCommands: two commands sent at once run one after the
// other: the second reaches the backend only when the first's answer is
// through.
func TestLanePipelinedCommands(t *testing.T) {
	r := newRig(t, &fakeSession{})
	first, second := append([]byte{0x03}, "DO 1"...), append([]byte{0x03}, "DO 2"...)
	r.write(r.client, append(packet(0, first), packet(0, second)...))
	if got := r.read(r.backend, 4+len(first)); !bytes.Equal(got, packet(0, first)) {
		t.Fatalf("the backend got %q first", got)
	}
	r.nothing(r.backend, "the second command before the first's answer")
	r.write(r.backend, packet(1, okPacket))
	if got := r.read(r.backend, 4+len(second)); !bytes.Equal(got, packet(0, second)) {
		t.Fatalf("the backend got %q second", got)
	}
	r.write(r.backend, packet(1, okPacket))
	want := append(packet(1, okPacket), packet(1, okPacket)...)
	if got := r.read(r.client, len(want)); !bytes.Equal(got, want) {
		t.Fatalf("the client got %q, want %q", got, want)
	}
	r.waitFor("both responses' ends", func() bool { return len(r.sess.finished) == 2 && r.sess.finished[0] && r.sess.finished[1] })
}

// TestLaneErrAnswer: an ERR is relayed, and the session is shown its
// head before it goes.
func TestLaneErrAnswer(t *testing.T) {
	r := newRig(t, &fakeSession{})
	query := append([]byte{0x03}, "SELEC 1"...)
	r.write(r.client, packet(0, query))
	r.read(r.backend, 4+len(query))
	errp := packet(1, append([]byte{0xff, 0x28, 0x04, '#', '4', '2', '0', '0', '0'}, "You have an error"...))
	r.write(r.backend, errp)
	if got := r.read(r.client, len(errp)); !bytes.Equal(got, errp) {
		t.Fatalf("the client got %q, want %q", got, errp)
	}
	r.waitFor("the ERR's end", func() bool { return len(r.sess.finished) == 1 })
	unlock := r.sess.lock()
	defer unlock()
	if r.sess.finished[0] {
		t.Error("an ERR was reported as an OK")
	}
	if len(r.sess.errHeads) != 1 || len(r.sess.errHeads[0]) == 0 || r.sess.errHeads[0][0] != 0xff {
		t.Errorf("RelayedErr was told %q, want the ERR's head", r.sess.errHeads)
	}
}

// TestLaneWatchedOKReported: a watched answer's OK goes to Judge, and the
// client gets it with the insert id Judge reports.
func TestLaneWatchedOKReported(t *testing.T) {
	r := newRig(t, &fakeSession{watch: true, judgeID: 48000018})
	query := append([]byte{0x03}, "INSERT INTO t (v) VALUES (1)"...)
	r.write(r.client, packet(0, query))
	r.read(r.backend, 4+len(query))
	r.write(r.backend, packet(1, []byte{0x00, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00}))
	want := packet(1, wire.OKWithInsertID(nil, []byte{0x00, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00}, 48000018))
	if got := r.read(r.client, len(want)); !bytes.Equal(got, want) {
		t.Fatalf("the client got %q, want %q (insert id 48000018)", got, want)
	}
}

// TestLaneHandsBackAWaitingCommand: a command the session would wait for
// goes back to the session's goroutine with what the client sent after
// it, and the lane leaves the loop.
func TestLaneHandsBackAWaitingCommand(t *testing.T) {
	r := newRig(t, &fakeSession{waitOn: "NEXTVAL"})
	wait, next := append([]byte{0x03}, "SELECT NEXTVAL('cold')"...), packet(0, append([]byte{0x03}, "DO 1"...))
	r.write(r.client, append(packet(0, wait), next...))
	m := r.handedBack(HandBackCommand, "a waiting command")
	if !bytes.Equal(m.Pkt, wait) || !bytes.Equal(m.ClientIn, next) {
		t.Fatalf("handed back pkt %q, client bytes %q; want the command and the next one", m.Pkt, m.ClientIn)
	}
	if m.ClientFD != r.ln.ClientFD || m.BackendFD != r.ln.BackendFD {
		t.Error("the hand-back does not carry the lane's sockets")
	}
	unix.Close(m.ClientFD)
	unix.Close(m.BackendFD)
	r.nothing(r.backend, "a handed-back command")
}

// TestLaneClientGone: a client that closes between commands ends the
// session: told io.EOF, COM_QUIT allowed (nothing waits for the backend),
// handed back closed.
func TestLaneClientGone(t *testing.T) {
	r := newRig(t, &fakeSession{})
	unix.Shutdown(r.client, unix.SHUT_WR)
	r.handedBack(HandBackClosed, "a gone client")
	unlock := r.sess.lock()
	defer unlock()
	if !errors.Is(r.sess.clientErr, io.EOF) || r.sess.teardowns != 1 || !r.sess.quit {
		t.Errorf("client error %v, teardowns %d, quit %v; want io.EOF, 1, true", r.sess.clientErr, r.sess.teardowns, r.sess.quit)
	}
}

// TestLaneSequenceError: a command whose packet is not sequence 0 ends
// the session with the protocol error, and nothing reaches the backend.
func TestLaneSequenceError(t *testing.T) {
	r := newRig(t, &fakeSession{})
	r.write(r.client, packet(3, append([]byte{0x03}, "DO 1"...)))
	r.handedBack(HandBackClosed, "a command out of sequence")
	unlock := r.sess.lock()
	defer unlock()
	var se wire.SequenceError
	if !errors.As(r.sess.clientErr, &se) {
		t.Errorf("client error %v, want a wire.SequenceError", r.sess.clientErr)
	}
	if len(r.sess.commands) != 0 {
		t.Errorf("the session ran %d commands", len(r.sess.commands))
	}
}
