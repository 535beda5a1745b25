package login

import (
	"fmt"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// Throttle is the failed-login budget of each client host, a token
// bucket: a host holds up to burst failed logins, regains one every
// interval, and once they are spent is refused (error 1129, before the
// greeting) for a while: interval at first, doubling with each failure
// right after a block, up to maxBlock. A bucket that has filled again
// forgets the host. Unlike MariaDB's max_connect_errors the host is never
// locked out for good, and only wrong credentials count (not dropped or
// timed-out handshakes: a load balancer's TCP health check must not block
// its host). Other hosts are not slowed: each has its own bucket.
//
// The table holds at most maxHosts hosts (bounded memory whatever the
// number of addresses): when it is full, a sample of entries is looked at,
// forgiven ones are dropped, else the one whose block ends first.
type Throttle struct {
	burst    float64
	interval time.Duration
	maxBlock time.Duration
	maxHosts int

	mu    sync.Mutex
	hosts map[string]*hostBudget

	refused atomic.Uint64 // connections and logins refused while their host was blocked
	blocks  atomic.Uint64 // times a host was blocked
}

// hostBudget is one host's bucket.
type hostBudget struct {
	tokens  float64   // failed logins left
	at      time.Time // tokens were counted at this time (refill starts here)
	until   time.Time // refused until then
	strikes int       // blocks since the bucket was last full
}

// Defaults of the throttle's limits (the configuration file's are the same values).
const (
	DefaultLoginFailures        = 10
	DefaultLoginFailureInterval = 6 * time.Second
	DefaultLoginBlockMax        = 5 * time.Minute
	// ThrottleHosts bounds the per-host table: about 100 bytes a host.
	ThrottleHosts = 16384
	throttleProbe = 64 // entries looked at to make room
)

// NewThrottle makes a throttle of burst failed logins per host, regaining
// one every interval, blocks up to maxBlock, at most maxHosts hosts; nil
// (no throttle, every method a no-op) when burst is not positive.
func NewThrottle(burst int, interval, maxBlock time.Duration, maxHosts int) *Throttle {
	if burst <= 0 {
		return nil // off
	}
	return &Throttle{burst: float64(burst), interval: interval, maxBlock: max(maxBlock, interval),
		maxHosts: maxHosts, hosts: map[string]*hostBudget{}}
}

// HostKey is the throttle's name for the client at a: its IP address; for
// IPv6 its /64 (one machine usually holds a whole /64); "localhost" for a
// Unix socket.
func HostKey(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return "localhost"
	}
	if ip4 := ta.IP.To4(); ip4 != nil {
		return ip4.String()
	}
	return ta.IP.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// refill brings h's tokens up to now; a full bucket forgets past blocks.
func (t *Throttle) refill(h *hostBudget, now time.Time) {
	if now.Before(h.at) {
		return // blocked: the bucket refills once the block is over
	}
	h.tokens = math.Min(t.burst, h.tokens+float64(now.Sub(h.at))/float64(t.interval))
	h.at = now
	if h.tokens >= t.burst {
		h.strikes = 0
	}
}

// Blocked says whether host is refused now, and for how long still.
func (t *Throttle) Blocked(host string, now time.Time) (time.Duration, bool) {
	if t == nil {
		return 0, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.hosts[host]
	if h == nil || !now.Before(h.until) {
		return 0, false
	}
	t.refused.Add(1)
	return h.until.Sub(now), true
}

// IsBlocked says whether host is blocked now, counting nothing (the
// accept loop leaves a blocked host's connection to its goroutine, which
// refuses it).
func (t *Throttle) IsBlocked(host string, now time.Time) bool {
	if t == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.hosts[host]
	return h != nil && now.Before(h.until)
}

// Fail counts a failed login from host; when that spends the host's
// budget, the host is blocked and Fail returns for how long (else 0).
func (t *Throttle) Fail(host string, now time.Time) time.Duration {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.hosts[host]
	if h == nil {
		t.makeRoom(now)
		h = &hostBudget{tokens: t.burst, at: now}
		t.hosts[host] = h
	}
	t.refill(h, now)
	if h.tokens -= 1; h.tokens >= 1 {
		return 0
	}
	// Spent: refused for interval, doubling with each block in a row.
	h.strikes++
	d := t.maxBlock
	if h.strikes < 32 {
		d = min(t.interval<<(h.strikes-1), t.maxBlock)
	}
	h.tokens = max(h.tokens, 0)
	h.until = now.Add(d)
	h.at = h.until
	t.blocks.Add(1)
	return d
}

// makeRoom drops entries when the table is full (t.mu held): forgiven
// ones (bucket full again, not blocked) among a sample, else the sampled
// one whose block ends first.
func (t *Throttle) makeRoom(now time.Time) {
	if len(t.hosts) < t.maxHosts {
		return
	}
	var victim string
	var victimUntil time.Time
	seen := 0
	for k, h := range t.hosts { // map order is random: a fresh sample each time
		t.refill(h, now)
		if !now.Before(h.until) && h.tokens >= t.burst {
			delete(t.hosts, k)
			if len(t.hosts) < t.maxHosts {
				return
			}
		} else if victim == "" || h.until.Before(victimUntil) {
			victim, victimUntil = k, h.until
		}
		if seen++; seen >= throttleProbe {
			break
		}
	}
	if victim != "" && len(t.hosts) >= t.maxHosts {
		delete(t.hosts, victim)
	}
}

// HostsTracked is the table's size now.
func (t *Throttle) HostsTracked() int {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.hosts)
}

// BlockedHosts counts the hosts refused now.
func (t *Throttle) BlockedHosts(now time.Time) int {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, h := range t.hosts {
		if now.Before(h.until) {
			n++
		}
	}
	return n
}

// HostBlocked is what a blocked host is told: MariaDB's 1129 (ER_HOST_IS_BLOCKED),
// saying for how long and which setting decides.
func HostBlocked(remote net.Addr, wait time.Duration) *Error {
	host := "localhost"
	if ta, ok := remote.(*net.TCPAddr); ok {
		host = ta.IP.String()
	}
	return &Error{mysql.ER_HOST_IS_BLOCKED, "HY000",
		fmt.Sprintf("Host '%s' is blocked for %s because of too many failed logins (leafproxy limits.login_failures)",
			host, wait.Round(100*time.Millisecond))}
}

// Refused counts the connections and logins refused while their host was blocked.
func (t *Throttle) Refused() uint64 {
	if t == nil {
		return 0
	}
	return t.refused.Load()
}

// Blocks counts the times a host was blocked.
func (t *Throttle) Blocks() uint64 {
	if t == nil {
		return 0
	}
	return t.blocks.Load()
}

// Stats counts failed logins and what the throttle did about them.
type Stats struct {
	Failures     uint64 // logins refused for wrong credentials (1045)
	Refused      uint64 // connections and logins refused because their host was blocked (1129)
	Blocks       uint64 // times a host was blocked
	BlockedHosts int    // hosts blocked now
	Hosts        int    // hosts in the throttle's table (at most 16384)
	Dropped      uint64 // pending handshakes closed to make room for others (limits.max_handshakes, max_silent_handshakes)
	Handshakes   int    // handshakes under way now (limits.max_handshakes)
	Silent       int    // connections greeted that have sent nothing yet (limits.max_silent_handshakes)
}

// Stats reports the throttle's counters (t nil: off) with the server's:
// failures (Checker.Failures), dropped, and the handshake budgets' sizes.
func (t *Throttle) Stats(failures, dropped uint64, handshakes, silent int, now time.Time) Stats {
	st := Stats{Failures: failures, Dropped: dropped, Handshakes: handshakes, Silent: silent}
	if t != nil {
		st.Refused, st.Blocks = t.Refused(), t.Blocks()
		st.BlockedHosts, st.Hosts = t.BlockedHosts(now), t.HostsTracked()
	}
	return st
}
