package wire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// rawIO keeps net.Conn's contract where the relay relies on it: data both
// ways (a write larger than the socket buffers waits for the reader), EOF,
// read deadlines, and net.ErrClosed after Close.
func TestRawIO(t *testing.T) {
	if !rawIOOn {
		t.Skip("raw socket I/O is off (LEAFPROXY_RAWIO=0)")
	}
	c, peer := tcpPair(t)
	rw, ok := LegIO(c).(*RawIO)
	if !ok {
		t.Fatalf("legIO of a TCP conn is %T", LegIO(c))
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

// A held command (leg.flushForResponse) is written by the next Read, which
// then waits for the response: the peer sees the bytes in the order they
// were written, the response is never missed (a fast echo peer, many
// rounds, each read bounded by a deadline), and a command the socket
// cannot take at once (its send buffer full) still leaves whole before
// the read.
func TestRawIOHold(t *testing.T) {
	if !rawIOOn {
		t.Skip("raw socket I/O is off (LEAFPROXY_RAWIO=0)")
	}
	c, peer := tcpPair(t)
	rw := LegIO(c).(*RawIO)
	hold := func(p []byte) {
		t.Helper()
		rw.holdNext = true
		if n, err := rw.Write(p); n != len(p) || err != nil {
			t.Fatalf("held Write: %d, %v", n, err)
		}
		rw.holdNext = false
	}

	// Echo peer: every 8-byte command comes back at once. It takes its
	// connection as an argument: the test reuses the variable for the
	// next pair while this goroutine may still be returning.
	go func(peer net.Conn) {
		b := make([]byte, 8)
		for {
			if _, err := io.ReadFull(peer, b); err != nil {
				return
			}
			if _, err := peer.Write(b); err != nil {
				return
			}
		}
	}(peer)
	b := make([]byte, 8)
	for i := range 2000 {
		cmd := []byte(fmt.Sprintf("%08d", i))
		hold(cmd[:5])
		if len(rw.held) != 5 {
			t.Fatalf("round %d: %d bytes held, want 5", i, len(rw.held))
		}
		if _, err := rw.Write(cmd[5:]); err != nil { // held bytes go first
			t.Fatal(err)
		}
		hold(nil) // nothing to hold: no-op
		hold(cmd[:0])
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadFull(rw, b); err != nil || !bytes.Equal(b, cmd) {
			t.Fatalf("round %d: read %q, %v; want %q", i, b, err, cmd)
		}
		hold(cmd)
		if _, err := io.ReadFull(rw, b); err != nil || !bytes.Equal(b, cmd) {
			t.Fatalf("round %d, held: read %q, %v; want %q", i, b, err, cmd)
		}
	}
	c.Close()
	peer.Close()

	// Send buffer full: the held command is written in parts, waiting for
	// room, then the response is read.
	c, peer = tcpPair(t)
	rw = LegIO(c).(*RawIO)
	_ = c.(*net.TCPConn).SetWriteBuffer(4096)
	_ = peer.(*net.TCPConn).SetReadBuffer(4096)
	sc, _ := c.(*net.TCPConn).SyscallConn()
	var filler []byte
	chunk := bytes.Repeat([]byte{'f'}, 1024)
	_ = sc.Write(func(fd uintptr) bool {
		for {
			n, err := unix.Write(int(fd), chunk)
			if err != nil {
				return true
			}
			filler = append(filler, chunk[:n]...)
		}
	})
	cmd := bytes.Repeat([]byte("C"), maxHeld)
	hold(cmd)
	full := make(chan struct{})
	rw.sendFull = sync.OnceFunc(func() { close(full) })
	got := make(chan []byte, 1)
	go func() {
		<-full // the read found the send buffer full
		all, _ := io.ReadAll(io.LimitReader(peer, int64(len(filler)+len(cmd))))
		got <- all
		_, _ = peer.Write([]byte("response"))
	}()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(rw, b); err != nil || string(b) != "response" {
		t.Fatalf("read after a held command larger than the room: %q, %v", b, err)
	}
	if all := <-got; !bytes.Equal(all, append(filler, cmd...)) {
		t.Fatalf("peer got %d bytes, want the %d filler bytes then the %d-byte command", len(all), len(filler), len(cmd))
	}
}

func tcpPair(t testing.TB) (net.Conn, net.Conn) {
	t.Helper()
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
	t.Cleanup(func() { c.Close(); peer.Close() })
	return c, peer
}
