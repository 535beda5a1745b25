// Package bench holds the end-to-end comparison suites: the same load tool
// (package loadgen) against MariaDB directly, through a plain TCP relay and
// through leafproxy, in one run. The suites are gated by LEAFPROXY_BENCH=1
// so the default test command does not pay for them; docs/bench-proxy.md
// has the commands and the figures.
package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
)

// Relay is the floor for any proxy hop: it accepts TCP connections and
// copies bytes both ways to a target, one goroutine per direction, with a
// user-space buffer, so it pays the same read/write syscalls and wake-ups as
// a proxy and nothing else (no parsing, no framing). It deliberately does
// not use io.Copy between the sockets, which would splice(2) in the kernel
// and measure a floor no user-space proxy can reach.
type Relay struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// StartRelay listens on a free loopback port and relays to target.
func StartRelay(ctx context.Context, target string) (*Relay, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("relay listen: %w", err)
	}
	r := &Relay{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	r.wg.Add(1)
	go r.accept()
	return r, nil
}

// Addr is the relay's host:port.
func (r *Relay) Addr() string { return r.ln.Addr().String() }

// Close stops accepting, cuts every relayed connection and waits for the
// copying goroutines.
func (r *Relay) Close() error {
	r.mu.Lock()
	r.closed = true
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	err := r.ln.Close()
	r.wg.Wait()
	return err
}

func (r *Relay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		c.Close()
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

func (r *Relay) untrack(c net.Conn) {
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
	c.Close()
}

func (r *Relay) accept() {
	defer r.wg.Done()
	for {
		client, err := r.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		r.wg.Add(1)
		go r.serve(client)
	}
}

func (r *Relay) serve(client net.Conn) {
	defer r.wg.Done()
	if !r.track(client) {
		return
	}
	defer r.untrack(client)
	backend, err := net.Dial("tcp", r.target)
	if err != nil {
		return
	}
	if !r.track(backend) {
		return
	}
	defer r.untrack(backend)
	done := make(chan struct{}, 2)
	go func() { pipe(backend, client); done <- struct{}{} }()
	go func() { pipe(client, backend); done <- struct{}{} }()
	// Either side closing ends the session: close both so the other copy
	// returns too.
	<-done
	client.Close()
	backend.Close()
	<-done
}

// pipe copies src to dst until either fails.
func pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
