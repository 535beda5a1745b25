package proxy

import (
	"net"
	"sync"
)

// pendingHandshakes are connections that have not logged in yet, by client
// host, oldest first. They have their own budget (limits.max_handshakes):
// when it is full, the oldest handshake of the host holding the most is
// closed, so a host flooding the proxy with silent connections ages out
// its own, and the budget's share of every other host (one or two
// handshakes each, done in a round trip) is kept.
type pendingHandshakes struct {
	n      int
	byHost map[string][]net.Conn
}

// add registers c (of host) and returns the connection closed to make
// room, if any; mu is the server's lock.
func (p *pendingHandshakes) add(c net.Conn, host string, max int, mu *sync.Mutex) (dropped bool) {
	mu.Lock()
	defer mu.Unlock()
	if p.byHost == nil {
		p.byHost = map[string][]net.Conn{}
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
			cs[0].Close()
			p.drop(victim, 0)
			dropped = true
		}
	}
	p.byHost[host] = append(p.byHost[host], c)
	p.n++
	return dropped
}

// drop forgets host's i-th pending connection (mu held).
func (p *pendingHandshakes) drop(host string, i int) {
	cs := p.byHost[host]
	copy(cs[i:], cs[i+1:])
	cs[len(cs)-1] = nil
	if cs = cs[:len(cs)-1]; len(cs) == 0 {
		delete(p.byHost, host)
	} else {
		p.byHost[host] = cs
	}
	p.n--
}

func (p *pendingHandshakes) remove(c net.Conn, host string, mu *sync.Mutex) {
	mu.Lock()
	defer mu.Unlock()
	for i, x := range p.byHost[host] {
		if x == c {
			p.drop(host, i)
			return
		}
	}
}

// closeAll runs with the server's lock held.
func (p *pendingHandshakes) closeAll() {
	for _, cs := range p.byHost {
		for _, c := range cs {
			c.Close()
		}
	}
	p.byHost, p.n = nil, 0
}
