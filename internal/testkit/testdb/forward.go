package testdb

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Forwarder is a loopback TCP endpoint standing in for a virtual IP or a
// load balancer in front of a database: connections are relayed to the
// current target; SetTarget moves the endpoint (a failover) and cuts the
// connections relayed so far; Stall makes it accept connections and never
// answer (a hung server, a black-holed network).
type Forwarder struct {
	Addr string

	listener net.Listener
	mu       sync.Mutex
	target   string // "" while stalled
	conns    map[net.Conn]struct{}
	closed   bool
	wg       sync.WaitGroup
}

// NewForwarder listens on a free loopback port and relays to target ("" to
// start stalled). Closed when the test ends.
func NewForwarder(tb testing.TB, target string) *Forwarder {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	f := &Forwarder{Addr: l.Addr().String(), listener: l, target: target, conns: map[net.Conn]struct{}{}}
	f.wg.Add(1)
	go f.accept()
	tb.Cleanup(f.Close)
	return f
}

func (f *Forwarder) accept() {
	defer f.wg.Done()
	for {
		c, err := f.listener.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		if f.closed {
			f.mu.Unlock()
			c.Close()
			return
		}
		f.conns[c] = struct{}{}
		target := f.target
		f.mu.Unlock()
		if target == "" {
			continue // stalled: held open, never answered, cut by the next SetTarget
		}
		f.wg.Add(1)
		go f.relay(c, target)
	}
}

func (f *Forwarder) relay(c net.Conn, target string) {
	defer f.wg.Done()
	defer f.drop(c)
	b, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		b.Close()
		return
	}
	f.conns[b] = struct{}{}
	f.mu.Unlock()
	defer f.drop(b)
	done := make(chan struct{}, 2)
	go func() { io.Copy(b, c); done <- struct{}{} }()
	go func() { io.Copy(c, b); done <- struct{}{} }()
	<-done
}

func (f *Forwarder) drop(c net.Conn) {
	c.Close()
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
}

// SetTarget relays new connections to addr and cuts every connection made
// so far, as a moved virtual IP does.
func (f *Forwarder) SetTarget(addr string) {
	f.mu.Lock()
	f.target = addr
	f.cutLocked()
	f.mu.Unlock()
}

// Stall accepts new connections and never answers them; existing ones are
// cut.
func (f *Forwarder) Stall() { f.SetTarget("") }

func (f *Forwarder) cutLocked() {
	for c := range f.conns {
		c.Close()
		delete(f.conns, c)
	}
}

// Close stops listening and cuts everything.
func (f *Forwarder) Close() {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return
	}
	f.closed = true
	f.cutLocked()
	f.mu.Unlock()
	f.listener.Close()
	f.wg.Wait()
}
