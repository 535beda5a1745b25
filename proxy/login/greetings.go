package login

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/leafproxy/leafproxy/proxy/wire"
)

// Greetings is the backend's greeting as last seen (version, capabilities,
// status, charset), which new clients are greeted with, and the probe
// login that learns it when none has been seen yet.
type Greetings struct {
	latest atomic.Pointer[wire.Greeting]
	mu     sync.Mutex
	probe  *probeCall // the probe login under way, if any (mu)
}

// probeCall is one probe login, shared by the clients waiting for it.
type probeCall struct {
	done chan struct{}
	g    *wire.Greeting
	err  error
}

// Load is the greeting as last seen; nil before the first.
func (gs *Greetings) Load() *wire.Greeting { return gs.latest.Load() }

// Get returns the greeting new clients are shown, learning it first with
// probe (a backend login, which notes the greeting it gets) when none has
// been seen (start-up, or every earlier attempt failed). Clients arriving
// while a probe is under way share its answer instead of each waiting out
// another connect timeout.
func (gs *Greetings) Get(ctx context.Context, probe func() (*wire.Greeting, error)) (*wire.Greeting, error) {
	if g := gs.latest.Load(); g != nil {
		return g, nil
	}
	gs.mu.Lock()
	if g := gs.latest.Load(); g != nil {
		gs.mu.Unlock()
		return g, nil
	}
	p := gs.probe
	if p == nil {
		p = &probeCall{done: make(chan struct{})}
		gs.probe = p
		go gs.runProbe(p, probe)
	}
	gs.mu.Unlock()
	select {
	case <-p.done:
		return p.g, p.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (gs *Greetings) runProbe(p *probeCall, probe func() (*wire.Greeting, error)) {
	p.g, p.err = probe()
	gs.mu.Lock()
	gs.probe = nil
	gs.mu.Unlock()
	close(p.done)
}

// Note remembers the backend's latest greeting g, so clients see an
// upgraded or restarted backend as it is now.
func (gs *Greetings) Note(g *wire.Greeting) {
	cp := *g
	cp.Scramble = nil
	cp.ThreadID = 0
	if old := gs.latest.Load(); old == nil || old.Version != cp.Version || old.Caps != cp.Caps ||
		old.ExtCaps != cp.ExtCaps || old.Charset != cp.Charset || old.Status != cp.Status {
		gs.latest.Store(&cp)
	}
}
