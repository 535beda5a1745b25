package raw

import (
	"bytes"
	"testing"

	"golang.org/x/sys/unix"
)

// Read, Write and EpollTake on a non-blocking socket pair: bytes both
// ways, EAGAIN where a blocking call would wait, the end of the stream,
// and readiness reported without waiting.
func TestReadWriteEpoll(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(epfd)
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: 7}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, fds[1], &ev); err != nil {
		t.Fatal(err)
	}
	events := make([]unix.EpollEvent, 4)
	if n, e := EpollTake(epfd, events); n != 0 || e != 0 {
		t.Fatalf("EpollTake with nothing ready: %d, %v", n, e)
	}
	buf := make([]byte, 64)
	if n, e := Read(fds[1], buf); n != 0 || e != unix.EAGAIN {
		t.Fatalf("Read of an empty socket: %d, %v; want EAGAIN", n, e)
	}
	msg := []byte("hello, loop")
	if n, e := Write(fds[0], msg); n != len(msg) || e != 0 {
		t.Fatalf("Write: %d, %v", n, e)
	}
	if n, e := EpollTake(epfd, events); n != 1 || e != 0 || events[0].Fd != 7 || events[0].Events&unix.EPOLLIN == 0 {
		t.Fatalf("EpollTake after a write: %d, %v, %+v", n, e, events[0])
	}
	if n, e := Read(fds[1], buf); e != 0 || !bytes.Equal(buf[:n], msg) {
		t.Fatalf("Read: %q, %v", buf[:n], e)
	}
	// A full socket takes nothing more: EAGAIN, not a wait.
	big := make([]byte, 1<<20)
	for {
		n, e := Write(fds[0], big)
		if e == unix.EAGAIN {
			break
		}
		if e != 0 || n == 0 {
			t.Fatalf("Write into a filling socket: %d, %v", n, e)
		}
	}
	unix.Close(fds[0])
	for {
		n, e := Read(fds[1], big)
		if e != 0 {
			t.Fatalf("Read after the peer closed: %v", e)
		}
		if n == 0 {
			break // the end of the stream
		}
	}
	unix.Close(fds[1])
	if n, e := Read(fds[1], buf); n != 0 || e != unix.EBADF {
		t.Fatalf("Read of a closed descriptor: %d, %v", n, e)
	}
}
