package login

import (
	"iter"
	"net"
	"sync"
)

// Pending are connections that have not logged in yet, by client
// host, oldest first, under a budget: when it is full, the oldest
// handshake of the host holding the most is closed, so a host flooding
// the proxy with silent connections ages out its own, and the budget's
// share of every other host (one or two handshakes each, done in a round
// trip) is kept. Package proxy's server has two: Server.pending, handshakes under way
// on their own goroutine (limits.max_handshakes), and Server.silent,
// connections the accept loop greeted that have not sent a byte yet
// (proxy/frontdoor; limits.max_silent_handshakes). One of those has no
// goroutine yet: closing it also forgets it there, which ends it.
type Pending struct {
	n      int
	byHost map[string][]PendingConn
}

// PendingConn is a connection in a Pending budget.
type PendingConn struct {
	C net.Conn
	W Ender // not nil while the accept loop's poller may hold it
}

// Ender is a connection the accept loop's poller may hold: End closes it
// if the poller still holds it (true); false: it has a goroutine, or is
// closed already.
type Ender interface{ End() bool }

// N is how many connections are pending (the server's lock held).
func (p *Pending) N() int { return p.n }

// close closes a pending connection: its goroutine, if it has one, ends
// on the error; one still waiting for its first byte is ended here.
func (pc PendingConn) close() {
	if pc.W == nil || !pc.W.End() {
		pc.C.Close()
	}
}

// Add registers c (of host) and returns the connection closed to make
// room, if any; mu is the server's lock.
func (p *Pending) Add(c net.Conn, host string, max int, mu *sync.Mutex) (dropped bool) {
	mu.Lock()
	defer mu.Unlock()
	return p.AddLocked(PendingConn{C: c}, host, max)
}

// AddLocked is Add with mu held.
func (p *Pending) AddLocked(pc PendingConn, host string, max int) (dropped bool) {
	if p.byHost == nil {
		p.byHost = map[string][]PendingConn{}
	}
	if max > 0 && p.n >= max {
		// The host with the most pending handshakes gives one up; on a
		// tie, the newcomer's own host.
		victim, most := host, len(p.byHost[host])
		for h, cs := range p.byHost {
			if len(cs) > most {
				victim, most = h, len(cs)
			}
		}
		if most > 0 {
			cs := p.byHost[victim]
			oldest := cs[0]
			p.drop(victim, 0)
			oldest.close()
			dropped = true
		}
	}
	p.byHost[host] = append(p.byHost[host], pc)
	p.n++
	return dropped
}

// drop forgets host's i-th pending connection (mu held). The oldest (i
// 0, what a full budget drops) costs no copy: a flooding host may hold
// thousands.
func (p *Pending) drop(host string, i int) {
	cs := p.byHost[host]
	if i < len(cs)/2 {
		copy(cs[1:i+1], cs[:i])
		cs[0] = PendingConn{}
		cs = cs[1:]
	} else {
		copy(cs[i:], cs[i+1:])
		cs[len(cs)-1] = PendingConn{}
		cs = cs[:len(cs)-1]
	}
	if len(cs) == 0 {
		delete(p.byHost, host)
	} else {
		p.byHost[host] = cs
	}
	p.n--
}

func (p *Pending) Remove(c net.Conn, host string, mu *sync.Mutex) {
	mu.Lock()
	defer mu.Unlock()
	p.RemoveLocked(c, host)
}

// RemoveLocked is Remove with mu held; false: c was not there (dropped
// to make room).
func (p *Pending) RemoveLocked(c net.Conn, host string) bool {
	for i, x := range p.byHost[host] {
		if x.C == c {
			p.drop(host, i)
			return true
		}
	}
	return false
}

// CloseAll runs with the server's lock held.
func (p *Pending) CloseAll() {
	for _, cs := range p.byHost {
		for _, c := range cs {
			c.close()
		}
	}
	p.byHost, p.n = nil, 0
}

// Conns are the pending connections (the server's lock held).
func (p *Pending) Conns() iter.Seq[net.Conn] {
	return func(yield func(net.Conn) bool) {
		for _, cs := range p.byHost {
			for _, c := range cs {
				if !yield(c.C) {
					return
				}
			}
		}
	}
}
