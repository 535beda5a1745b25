package proxy

import (
	"net"
	"testing"
)

// tcpPair is a connected pair of loopback TCP sockets, closed when the
// test ends (proxy/wire's rawio_test.go has its own).
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
