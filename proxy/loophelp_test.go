//go:build linux

package proxy

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// loopOf returns e's event loop once a session is on it.
func loopOf(t *testing.T, e *env) *loop {
	t.Helper()
	db := e.open(t, "", "")
	db.SetMaxOpenConns(1)
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return e.srv.LoopStats().Sessions == 1 }, "the session is on the loop")
	e.srv.loopsOnce.Do(func() {}) // started: this orders the read of srv.loop after its start
	if e.srv.loop == nil {
		t.Fatal("no event loop")
	}
	return e.srv.loop
}

// A burst of more ready events than a runner takes at once calls a
// waiting runner to help; a burst one runner takes whole does not.
func TestLoopCallsHelpForFullBatches(t *testing.T) {
	needLoops(t)
	e := startProxy(t, shared.Addr, func(c *Config) { c.EventLoops = 3 })
	l := loopOf(t, e)
	if h := e.srv.LoopStats().Helps; h != 0 {
		t.Fatalf("%d calls for help with one quiet session", h)
	}
	// Dups of one eventfd, each registered on its own: one write makes
	// them all ready at once, in the time the poller takes to wake up.
	// Their indexes name no lane, so the runners only take the events.
	efd, _, errno := syscall.Syscall(syscall.SYS_EVENTFD2, 0, syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errno != 0 {
		t.Fatal(errno)
	}
	defer syscall.Close(int(efd))
	burst := func(n int) {
		t.Helper()
		var fds []int
		for i := range n {
			fd, err := syscall.Dup(int(efd))
			if err != nil {
				t.Fatal(err)
			}
			fds = append(fds, fd)
			ev := syscall.EpollEvent{Events: syscall.EPOLLIN | -syscall.EPOLLET, Fd: int32(maxLanes + 1 + i)}
			if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
				t.Fatal(err)
			}
		}
		one := [8]byte{1}
		if _, err := syscall.Write(int(efd), one[:]); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond) // the runners take them
		for _, fd := range fds {
			_ = syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, fd, nil)
			syscall.Close(fd)
		}
		var b [8]byte
		_, _ = syscall.Read(int(efd), b[:])
	}
	burst(epollBatch / 2)
	if h := e.srv.LoopStats().Helps; h != 0 {
		t.Fatalf("a burst of %d events (a batch takes %d) called for help %d times", epollBatch/2, epollBatch, h)
	}
	burst(3 * epollBatch)
	if e.srv.LoopStats().Helps == 0 {
		t.Fatalf("a burst of %d events called no waiting runner", 3*epollBatch)
	}
}

// When the runner waiting for events ends (its descriptor failed), a
// waiting one takes its place: the loop goes on serving its sessions and
// taking new ones, and still stops.
func TestLoopPromotesARunnerWhenThePollerEnds(t *testing.T) {
	needLoops(t)
	e := startProxy(t, shared.Addr, func(c *Config) { c.EventLoops = 2 })
	l := loopOf(t, e)
	var poller *runner
	for _, r := range l.runners {
		if r.poller {
			poller = r
		}
	}
	if poller == nil || poller != l.runners[0] {
		t.Fatal("the first runner does not wait for events")
	}
	_ = poller.file.Close() // its wait in the netpoller fails: it ends
	waitFor(t, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.alive == 1
	}, "the poller ends")
	for i := range 3 {
		db := e.open(t, "", "")
		db.SetMaxOpenConns(1)
		var v int
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := db.QueryRowContext(ctx, "SELECT 7").Scan(&v)
		cancel()
		if err != nil || v != 7 {
			t.Fatalf("session %d after the poller ended: %d, %v", i, v, err)
		}
	}
	stopped := make(chan struct{})
	go func() { _ = e.stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not stop")
	}
}
