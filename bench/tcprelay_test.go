package bench

import (
	"bytes"
	"context"
	"io"
	"net"
	"testing"
)

// TestRelayCopiesBothWays runs in the default suite (no database): an echo
// server behind the relay gets back exactly what was sent, and Close cuts
// live sessions.
func TestRelayCopiesBothWays(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	r, err := StartRelay(context.Background(), ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	msg := bytes.Repeat([]byte("leafproxy\x00\xff"), 100_000) // larger than the relay's buffer
	go c.Write(msg)
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, msg) {
		t.Fatal("relay altered the bytes")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("session still open after Close")
	}
}
