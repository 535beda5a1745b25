package eventloop

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The loop's own tests, with a fake session (Handler) over socket pairs:
// no protocol, no server, no database. Package proxy's loop tests run the
// real lanes through it.

// fakeLane is a Handler that reads what arrives on its sockets and
// reports each Serve's bits; a test drives the peer ends.
type fakeLane struct {
	Lane
	t    *testing.T
	l    *Loop
	logs *syncBuffer

	peerClient, peerBackend int // the test's ends of the socket pairs

	mu       sync.Mutex
	bits     uint32 // every bit Serve was given so far
	client   bytes.Buffer
	backend  bytes.Buffer
	changed  chan struct{} // a value after each Serve
	panicOn  string        // Serve panics when the client sent this
	binds    atomic.Int32
	teardown atomic.Int32
}

// syncBuffer is a bytes.Buffer for a logger several goroutines write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newFakeLane makes two non-blocking socket pairs and a lane over the
// loop's ends; the lane is not posted yet.
func newFakeLane(t *testing.T, l *Loop, logs *syncBuffer) *fakeLane {
	t.Helper()
	pair := func() (int, int) {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		return fds[0], fds[1]
	}
	c, pc := pair()
	b, pb := pair()
	f := &fakeLane{t: t, l: l, logs: logs, peerClient: pc, peerBackend: pb, changed: make(chan struct{}, 1)}
	f.Init(f, c, b)
	t.Cleanup(func() {
		for _, fd := range []int{f.peerClient, f.peerBackend} {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
		if f.teardown.Load() == 0 {
			unix.Close(c)
			unix.Close(b)
		}
	})
	return f
}

func (f *fakeLane) Serve(r *Runner, bits uint32) {
	f.mu.Lock()
	f.bits |= bits
	drain := func(fd int, into *bytes.Buffer, buf []byte) {
		for {
			n, e := ReadFD(fd, buf)
			if n > 0 {
				into.Write(buf[:n])
				continue
			}
			if e == unix.EINTR {
				continue
			}
			return // EAGAIN (edge-triggered: read until empty), end or error
		}
	}
	if bits&(PendClientIn|PendAttach) != 0 {
		drain(f.ClientFD, &f.client, r.ClientBuf)
	}
	if bits&(PendBackendIn|PendAttach) != 0 {
		drain(f.BackendFD, &f.backend, r.BackendBuf)
	}
	boom := f.panicOn != "" && strings.Contains(f.client.String(), f.panicOn)
	f.mu.Unlock()
	select {
	case f.changed <- struct{}{}:
	default:
	}
	if boom {
		panic("fake lane: " + f.panicOn)
	}
}

func (f *fakeLane) Bind(*Runner) { f.binds.Add(1) }

func (f *fakeLane) Teardown() {
	if f.teardown.Add(1) != 1 {
		f.t.Errorf("Teardown called %d times", f.teardown.Load())
		return
	}
	f.l.Detach(&f.Lane)
	f.Gone = true
	unix.Close(f.ClientFD)
	unix.Close(f.BackendFD)
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

func (f *fakeLane) Logger() *slog.Logger { return slog.New(slog.NewTextHandler(f.logs, nil)) }

// waitFor waits until cond holds for f (checked after each Serve, and
// every 50 ms in case a signal was coalesced), failing after 10 s.
func (f *fakeLane) waitFor(what string, cond func() bool) {
	f.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		f.mu.Lock()
		ok := cond()
		state := fmt.Sprintf("bits %#x, client %q, backend %q", f.bits, f.client.String(), f.backend.String())
		f.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-f.changed:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			f.t.Fatalf("timed out waiting for %s (%s)", what, state)
		}
	}
}

func write(t *testing.T, fd int, s string) {
	t.Helper()
	if _, err := unix.Write(fd, []byte(s)); err != nil {
		t.Fatal(err)
	}
}

func newLoop(t *testing.T, runners int, idle time.Duration, logs io.Writer) *Loop {
	t.Helper()
	l, err := New(context.Background(), runners, idle, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestLoopServesLanes: a posted lane is bound and attached (PendAttach,
// with what was already in its sockets), and then each leg's data, and
// the client's hang-up, reach its Serve; Teardown detaches it, and the
// loop closes cleanly with nothing left.
func TestLoopServesLanes(t *testing.T) {
	logs := new(syncBuffer)
	l := newLoop(t, 2, 0, logs)
	f := newFakeLane(t, l, logs)
	write(t, f.peerClient, "read ahead;")
	if !l.Post(&f.Lane) {
		t.Fatal("Post refused by a running loop")
	}
	f.waitFor("the attach", func() bool { return f.bits&PendAttach != 0 && f.client.String() == "read ahead;" })
	if f.binds.Load() == 0 {
		t.Error("the lane was not bound to a runner before it was served")
	}
	write(t, f.peerClient, "from client")
	f.waitFor("the client's data", func() bool { return f.bits&PendClientIn != 0 && f.client.String() == "read ahead;from client" })
	write(t, f.peerBackend, "from backend")
	f.waitFor("the backend's data", func() bool { return f.bits&PendBackendIn != 0 && f.backend.String() == "from backend" })
	unix.Close(f.peerClient)
	f.peerClient = -1 // closed: not again at the end
	f.waitFor("the client's hang-up", func() bool { return f.bits&PendClientHup != 0 })

	f.Mu.Lock()
	f.Teardown()
	attached := f.Attached()
	f.Mu.Unlock()
	if attached {
		t.Error("the lane is still attached after Teardown (Detach)")
	}
	l.Close()
	if f.teardown.Load() != 1 {
		t.Errorf("Teardown ran %d times, want 1 (Close must not close a lane that left)", f.teardown.Load())
	}
	if !l.Dead() {
		t.Error("a closed loop does not report Dead")
	}
	if l.Post(&newFakeLane(t, l, logs).Lane) {
		t.Error("a closed loop took a lane")
	}
}

// TestLoopRescuesPanickingLane: a lane whose session panics is torn down
// and logged; the loop goes on serving the others.
func TestLoopRescuesPanickingLane(t *testing.T) {
	logs := new(syncBuffer)
	l := newLoop(t, 1, 0, logs)
	defer l.Close()
	bad, good := newFakeLane(t, l, logs), newFakeLane(t, l, logs)
	bad.panicOn = "boom"
	for _, f := range []*fakeLane{bad, good} {
		if !l.Post(&f.Lane) {
			t.Fatal("Post refused")
		}
		f.waitFor("the attach", func() bool { return f.bits&PendAttach != 0 })
	}
	write(t, bad.peerClient, "boom")
	bad.waitFor("the teardown after the panic", func() bool { return bad.teardown.Load() == 1 })
	if !strings.Contains(logs.String(), "internal error") || !strings.Contains(logs.String(), "fake lane: boom") {
		t.Errorf("the panic was not logged with its value: %q", logs.String())
	}
	write(t, good.peerClient, "still served")
	good.waitFor("the other lane's data", func() bool { return good.client.String() == "still served" })
	good.Mu.Lock()
	good.Teardown()
	good.Mu.Unlock()
}

// TestLoopCloseTearsDownLanes: the last runner to stop closes every lane
// still attached (bound to it first) and every lane still in the inbox.
func TestLoopCloseTearsDownLanes(t *testing.T) {
	logs := new(syncBuffer)
	l := newLoop(t, 2, 0, logs)
	lanes := []*fakeLane{newFakeLane(t, l, logs), newFakeLane(t, l, logs), newFakeLane(t, l, logs)}
	for _, f := range lanes {
		if !l.Post(&f.Lane) {
			t.Fatal("Post refused")
		}
	}
	for _, f := range lanes {
		f.waitFor("the attach", func() bool { return f.bits&PendAttach != 0 })
	}
	binds := lanes[0].binds.Load()
	l.Close()
	for i, f := range lanes {
		if n := f.teardown.Load(); n != 1 {
			t.Errorf("lane %d: Teardown ran %d times at Close, want 1", i, n)
		}
	}
	if lanes[0].binds.Load() <= binds {
		t.Error("a lane was torn down at Close without being bound to the closing runner first")
	}
}

// TestLoopDrain: RequestDrain makes every attached lane look at itself
// (PendCheck) and the loop report Draining.
func TestLoopDrain(t *testing.T) {
	logs := new(syncBuffer)
	l := newLoop(t, 2, 0, logs)
	defer l.Close()
	f := newFakeLane(t, l, logs)
	if !l.Post(&f.Lane) {
		t.Fatal("Post refused")
	}
	f.waitFor("the attach", func() bool { return f.bits&PendAttach != 0 })
	if l.Draining() {
		t.Fatal("Draining before RequestDrain")
	}
	l.RequestDrain()
	f.waitFor("the drain's check", func() bool { return f.bits&PendCheck != 0 })
	if !l.Draining() {
		t.Error("Draining is false after the drain pass")
	}
	f.Mu.Lock()
	f.Teardown()
	f.Mu.Unlock()
}

// TestLoopIdleSweep: with an idle timeout, a lane that receives nothing
// is still looked at (PendCheck), so that the session can close itself.
func TestLoopIdleSweep(t *testing.T) {
	logs := new(syncBuffer)
	l := newLoop(t, 2, 100*time.Millisecond, logs) // a sweep every 10 ms
	defer l.Close()
	f := newFakeLane(t, l, logs)
	if !l.Post(&f.Lane) {
		t.Fatal("Post refused")
	}
	f.waitFor("the attach", func() bool { return f.bits&PendAttach != 0 })
	f.mu.Lock()
	f.bits = 0
	f.mu.Unlock()
	f.waitFor("the idle sweep's check", func() bool { return f.bits&PendCheck != 0 })
	if f.bits&(PendClientIn|PendBackendIn) != 0 {
		t.Errorf("a sweep of a silent lane reported data: bits %#x", f.bits)
	}
	f.Mu.Lock()
	f.Teardown()
	f.Mu.Unlock()
}

// TestLoopSlotReuse: a lane that left frees its slot for the next one,
// and data for the new lane reaches the new lane only.
func TestLoopSlotReuse(t *testing.T) {
	logs := new(syncBuffer)
	l := newLoop(t, 1, 0, logs)
	defer l.Close()
	first := newFakeLane(t, l, logs)
	if !l.Post(&first.Lane) {
		t.Fatal("Post refused")
	}
	first.waitFor("the attach", func() bool { return first.bits&PendAttach != 0 })
	first.Mu.Lock()
	slot := first.idx
	first.Teardown()
	first.Mu.Unlock()
	second := newFakeLane(t, l, logs)
	if !l.Post(&second.Lane) {
		t.Fatal("Post refused")
	}
	second.waitFor("the attach", func() bool { return second.bits&PendAttach != 0 })
	second.Mu.Lock()
	reused, gen1, gen2 := second.idx == slot, first.gen, second.gen
	second.Mu.Unlock()
	if !reused || gen1 == gen2 {
		t.Errorf("slot %d gen %d reused as slot %d gen %d: want the same slot, a new generation", slot, gen1, second.idx, gen2)
	}
	write(t, second.peerBackend, "new")
	second.waitFor("the new lane's data", func() bool { return second.backend.String() == "new" })
	if first.backend.Len() != 0 {
		t.Errorf("the lane that left got %q", first.backend.String())
	}
	second.Mu.Lock()
	second.Teardown()
	second.Mu.Unlock()
}

// TestPendBits: what each epoll event becomes on each leg.
func TestPendBits(t *testing.T) {
	for _, tt := range []struct {
		events       uint32
		client, back uint32
	}{
		{unix.EPOLLIN, PendClientIn, PendBackendIn},
		{unix.EPOLLOUT, PendClientOut, PendBackendOut},
		{unix.EPOLLIN | unix.EPOLLOUT, PendClientIn | PendClientOut, PendBackendIn | PendBackendOut},
		{unix.EPOLLRDHUP, PendClientIn | PendClientHup, PendBackendIn | PendBackendHup},
		{unix.EPOLLHUP, PendClientIn | PendClientHup, PendBackendIn | PendBackendHup},
		{unix.EPOLLERR | unix.EPOLLOUT, PendClientIn | PendClientHup | PendClientOut, PendBackendIn | PendBackendHup | PendBackendOut},
		{0, 0, 0},
	} {
		if got := pendBits(tt.events, true); got != tt.client {
			t.Errorf("pendBits(%#x, client) = %#x, want %#x", tt.events, got, tt.client)
		}
		if got := pendBits(tt.events, false); got != tt.back {
			t.Errorf("pendBits(%#x, backend) = %#x, want %#x", tt.events, got, tt.back)
		}
	}
}

// TestDoorman: a held connection is started by its first bytes, expired
// at its deadline when silent, and a claimed one is neither.
func TestDoorman(t *testing.T) {
	started, expired := make(chan int, 4), make(chan int, 4)
	d, err := NewDoorman(10*time.Millisecond, DoormanCalls[int]{
		Start:  func(w int) { started <- w },
		Expire: func(w int) { expired <- w },
		Log:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	pair := func() (int, int) {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
		return fds[0], fds[1]
	}
	hold := func(w int, fd int, deadline time.Time) int32 {
		tok, ok := d.Hold(w, deadline)
		if !ok {
			t.Fatal("Hold refused by a running doorman")
		}
		if err := d.Watch(tok, uintptr(fd)); err != nil {
			t.Fatal(err)
		}
		return tok
	}
	wait := func(ch chan int, want int, what string) {
		t.Helper()
		select {
		case w := <-ch:
			if w != want {
				t.Fatalf("%s: connection %d, want %d", what, w, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: connection %d never came", what, want)
		}
	}

	talker, talkerPeer := pair()
	hold(1, talker, time.Now().Add(time.Hour))
	write(t, talkerPeer, "hello")
	wait(started, 1, "started by its first bytes")

	silent, _ := pair()
	hold(2, silent, time.Now().Add(30*time.Millisecond))
	wait(expired, 2, "expired at its deadline")

	claimed, claimedPeer := pair()
	tok := hold(3, claimed, time.Now().Add(30*time.Millisecond))
	if w, ok := d.Claim(tok); !ok || w != 3 {
		t.Fatalf("Claim = %d, %v; want 3, true", w, ok)
	}
	if _, ok := d.Claim(tok); ok {
		t.Error("a connection was claimed twice")
	}
	write(t, claimedPeer, "late")
	// The next connection's expiry shows the doorman has swept past the
	// claimed one's deadline and its bytes: neither called back for it.
	later, _ := pair()
	hold(4, later, time.Now().Add(60*time.Millisecond))
	wait(expired, 4, "the later connection expired")
	select {
	case w := <-started:
		t.Errorf("connection %d started after it was claimed", w)
	case w := <-expired:
		t.Errorf("connection %d expired after it was claimed", w)
	default:
	}

	d.Stop()
	if !d.Stopping() {
		t.Error("Stopping is false after Stop")
	}
	if _, ok := d.Hold(5, time.Now().Add(time.Hour)); ok {
		t.Error("a stopped doorman took a connection")
	}
}
