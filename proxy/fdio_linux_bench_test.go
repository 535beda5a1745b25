package proxy

import (
	"syscall"
	"testing"

	"github.com/leafproxy/leafproxy/proxy/eventloop"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// The cost of the event loop's socket I/O per call: a 16-byte write and
// the read that takes it, on a non-blocking Unix socket pair (no
// netpoller, no waiting; what remains is the system calls and their
// runtime bookkeeping).
func BenchmarkLoopSocketWriteRead(b *testing.B) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer syscall.Close(fds[0])
	defer syscall.Close(fds[1])
	msg := make([]byte, 16)
	buf := make([]byte, 64)
	b.ReportAllocs()
	for b.Loop() {
		if n, e := eventloop.WriteFD(fds[0], msg); n != len(msg) || e != 0 {
			b.Fatalf("write: %d, %v", n, e)
		}
		if n, e := eventloop.ReadFD(fds[1], buf); n != len(msg) || e != 0 {
			b.Fatalf("read: %d, %v", n, e)
		}
	}
}

// The same through rawIO, the legs' I/O on a session's goroutine (inside
// the netpoller's RawConn callbacks).
func BenchmarkRawIOWriteRead(b *testing.B) {
	c, peer := tcpPair(b)
	w, ok := wire.LegIO(peer).(*wire.RawIO)
	r, ok2 := wire.LegIO(c).(*wire.RawIO)
	if !ok || !ok2 {
		b.Skip("raw socket I/O is off (LEAFPROXY_RAWIO=0)")
	}
	msg := make([]byte, 16)
	buf := make([]byte, 64)
	b.ReportAllocs()
	for b.Loop() {
		if n, err := w.Write(msg); n != len(msg) || err != nil {
			b.Fatalf("write: %d, %v", n, err)
		}
		got := 0
		for got < len(msg) {
			n, err := r.Read(buf)
			if err != nil {
				b.Fatal(err)
			}
			got += n
		}
	}
}
