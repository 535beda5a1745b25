package proxy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// rawIO keeps net.Conn's contract where the relay relies on it: data both
// ways (a write larger than the socket buffers waits for the reader), EOF,
// read deadlines, and net.ErrClosed after Close.
func TestRawIO(t *testing.T) {
	if raceBuild || !rawIOOn {
		t.Skip("raw socket I/O is off (race build or LEAFPROXY_RAWIO=0)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		acc <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	peer := <-acc
	rw, ok := legIO(c).(*rawIO)
	if !ok {
		t.Fatalf("legIO of a TCP conn is %T", legIO(c))
	}

	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB: more than the socket buffers
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(peer, int64(len(big))))
		got <- b
	}()
	if n, err := rw.Write(big); n != len(big) || err != nil {
		t.Fatalf("Write: %d, %v", n, err)
	}
	if b := <-got; !bytes.Equal(b, big) {
		t.Fatalf("peer read %d bytes, not what was written", len(b))
	}

	go peer.Write([]byte("hello"))
	b := make([]byte, 16)
	if n, err := io.ReadAtLeast(rw, b, 5); n != 5 || err != nil || string(b[:5]) != "hello" {
		t.Fatalf("Read: %d %q %v", n, b[:n], err)
	}

	_ = c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := rw.Read(b); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read past the deadline: %v", err)
	}
	_ = c.SetReadDeadline(time.Time{})

	peer.Close()
	if n, err := rw.Read(b); n != 0 || err != io.EOF {
		t.Fatalf("Read after the peer closed: %d, %v", n, err)
	}
	c.Close()
	if _, err := rw.Read(b); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Read after Close: %v", err)
	}
	if _, err := rw.Write(b); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Write after Close: %v", err)
	}
}
