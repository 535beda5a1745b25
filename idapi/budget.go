package idapi

import (
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Limits is the API port's own budget, apart from the SQL port's: what a
// flood of connections or requests at it can take (issue 40: without a
// cap, 20,000 token-less keep-alive connections reached the open-file
// limit, and the SQL port's accept failed).
type Limits struct {
	// MaxConnections bounds the API's open connections; one past it is
	// answered 503 and closed at once, before any request is read.
	MaxConnections int
	// MaxConnectionsPerHost bounds one client address's share of them.
	MaxConnectionsPerHost int
	// HeaderTimeout is how long a client has to send a request's headers
	// (the whole request: the API reads no bodies).
	HeaderTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle that long.
	IdleTimeout time.Duration
	// WriteTimeout bounds a request from its headers read to its answer
	// written: a client that does not read its answer loses the
	// connection (its IDs were counted as handed out).
	WriteTimeout time.Duration
	// MaxHeaderBytes bounds a request's headers; larger gets 431.
	MaxHeaderBytes int
}

// The Limits a zero field means (config writes them as values; a test
// in service keeps the two equal).
const (
	DefaultMaxConnections        = 1024
	DefaultMaxConnectionsPerHost = 128
	DefaultHeaderTimeout         = 5 * time.Second
	DefaultIdleTimeout           = 30 * time.Second
	DefaultWriteTimeout          = 30 * time.Second
	DefaultMaxHeaderBytes        = 16 << 10
)

func (l *Limits) applyDefaults() {
	def := func(p *int, v int) {
		if *p <= 0 {
			*p = v
		}
	}
	defD := func(p *time.Duration, v time.Duration) {
		if *p <= 0 {
			*p = v
		}
	}
	def(&l.MaxConnections, DefaultMaxConnections)
	def(&l.MaxConnectionsPerHost, DefaultMaxConnectionsPerHost)
	def(&l.MaxHeaderBytes, DefaultMaxHeaderBytes)
	defD(&l.HeaderTimeout, DefaultHeaderTimeout)
	defD(&l.IdleTimeout, DefaultIdleTimeout)
	defD(&l.WriteTimeout, DefaultWriteTimeout)
}

// Server is the http.Server that serves the API within its Limits;
// errLog receives net/http's own lines (nil: the standard logger). Serve
// it on Listener's wrapping of the socket, which holds the connection
// caps.
func (a *API) Server(errLog *log.Logger) *http.Server {
	l := a.opts.Limits
	return &http.Server{
		Handler:           a,
		ReadHeaderTimeout: l.HeaderTimeout,
		ReadTimeout:       l.HeaderTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		// net/http reads up to 4 KiB past MaxHeaderBytes before it
		// answers 431.
		MaxHeaderBytes: l.MaxHeaderBytes,
		ErrorLog:       errLog,
	}
}

// Listener wraps l with the API's connection caps: a connection past
// Limits.MaxConnections, or past Limits.MaxConnectionsPerHost from its
// address, is answered 503 (in the proxy's wording, with what to change)
// and closed as it is accepted, so it holds no descriptor, goroutine or
// buffer; each is counted (leafproxy_id_api_connections_refused_total).
func (a *API) Listener(l net.Listener) net.Listener {
	return &capListener{Listener: l, a: a, perHost: map[string]int{}}
}

type capListener struct {
	net.Listener
	a       *API
	mu      sync.Mutex
	total   int
	perHost map[string]int
}

// Accept returns the next connection within the caps, refusing those
// past them.
func (l *capListener) Accept() (net.Conn, error) {
	lim := l.a.opts.Limits
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		host := hostOf(c.RemoteAddr().String())
		l.mu.Lock()
		var why string
		status := "503 Service Unavailable"
		switch {
		case l.total >= lim.MaxConnections:
			why = "leafproxy: the HTTP ID API has " + strconv.Itoa(l.total) + " connections open, its limit (id_api.max_connections)"
		case l.a.unauth.blocked(host, time.Now()):
			status = "429 Too Many Requests"
			why = "leafproxy: too many requests without a valid token from this address (bursts of " + strconv.Itoa(unauthBurst) + ", " +
				strconv.Itoa(unauthRate) + " a second after): refused until it slows down; send Authorization: Bearer <token>"
		case l.perHost[host] >= lim.MaxConnectionsPerHost:
			why = "leafproxy: " + strconv.Itoa(l.perHost[host]) + " connections from this address are open, its limit (id_api.max_connections_per_host); reuse them (keep-alive)"
		default:
			l.total++
			l.perHost[host]++
			l.a.m.conns.Store(int64(l.total))
		}
		l.mu.Unlock()
		if why == "" {
			return &capConn{Conn: c, l: l, host: host}, nil
		}
		l.refuse(c, status, why)
	}
}

// refuse answers status (503, or 429 for a throttled address) on a
// connection just accepted and closes it. The answer fits the new
// socket's empty send buffer, so the write does not wait; the deadline
// bounds it anyway.
func (l *capListener) refuse(c net.Conn, status, why string) {
	l.a.m.refusedConns.Inc()
	body := why + "\n"
	_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	_, _ = c.Write([]byte("HTTP/1.1 " + status + "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nRetry-After: 1\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + body))
	_ = c.Close()
}

func (l *capListener) release(host string) {
	l.mu.Lock()
	l.total--
	if l.perHost[host]--; l.perHost[host] <= 0 {
		delete(l.perHost, host)
	}
	l.a.m.conns.Store(int64(l.total))
	l.mu.Unlock()
}

// capConn gives its place back once, at its first Close.
type capConn struct {
	net.Conn
	l      *capListener
	host   string
	closed atomic.Bool
}

// Write passes the server's writes on, but for the answers net/http
// writes itself, before any handler, to a request it cannot read (431
// for headers past MaxHeaderBytes, 400 for a malformed request): their
// body, Go's status text, becomes the proxy's own wording.
func (c *capConn) Write(b []byte) (int, error) {
	if own, ok := c.l.a.ownWording(b); ok {
		if _, err := c.Conn.Write(own); err != nil {
			return 0, err
		}
		return len(b), nil
	}
	return c.Conn.Write(b)
}

// goErrorHeaders are the headers net/http writes between the status line
// and the body of its own error answers (a handler's answers carry a
// Date, and their headers sorted: Connection never follows Content-Type).
const goErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// ownWording rewrites one of net/http's own error answers, b, in the
// proxy's wording; ok is false for anything else.
func (a *API) ownWording(b []byte) ([]byte, bool) {
	s := string(b)
	if len(s) > 512 || !strings.HasPrefix(s, "HTTP/1.1 4") {
		return nil, false
	}
	status, body, found := strings.Cut(s[len("HTTP/1.1 "):], goErrorHeaders)
	if !found || !strings.HasPrefix(body, status) {
		return nil, false
	}
	var msg string
	switch {
	case strings.HasPrefix(status, "431 "):
		msg = "leafproxy: request headers larger than " + strconv.Itoa(a.opts.Limits.MaxHeaderBytes) + " bytes (id_api.max_header_bytes)"
		a.m.done(epOther, 431, time.Now())
	case strings.HasPrefix(status, "400 "):
		msg = "leafproxy: malformed HTTP request"
		if _, why, ok := strings.Cut(body, ": "); ok {
			msg += ": " + clip(why, 128)
		}
		a.m.done(epOther, 400, time.Now())
	default:
		return nil, false
	}
	msg += "\n"
	return []byte("HTTP/1.1 " + status + "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: " +
		strconv.Itoa(len(msg)) + "\r\n\r\n" + msg), true
}

func (c *capConn) Close() error {
	err := c.Conn.Close()
	if c.closed.CompareAndSwap(false, true) {
		c.l.release(c.host)
	}
	return err
}

// hostOf is addr without its port.
func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

// auditLimiter lets through at most auditBurst audit lines at once and
// auditRate a second after that; the rest are counted
// (leafproxy_id_api_audit_suppressed_total) and the next line written
// says how many it stands for (issue 40: a flood of refused requests
// grew the log faster than the requests came).
type auditLimiter struct {
	mu         sync.Mutex
	tokens     float64
	last       time.Time
	suppressed int64
}

const (
	auditRate  = 10 // lines a second, sustained
	auditBurst = 50
	// auditPathBytes bounds a path (and a tag) in an audit line.
	auditPathBytes = 128
)

// allow reports whether a line may be written now and how many were
// suppressed since the last one written.
func (l *auditLimiter) allow(now time.Time) (bool, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last.IsZero() {
		l.tokens = auditBurst
	} else {
		l.tokens = min(auditBurst, l.tokens+now.Sub(l.last).Seconds()*auditRate)
	}
	l.last = now
	if l.tokens < 1 {
		l.suppressed++
		return false, 0
	}
	l.tokens--
	n := l.suppressed
	l.suppressed = 0
	return true, n
}

// clip is s cut to n bytes (on a rune boundary), marked when cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i] + "...(" + strconv.Itoa(len(s)) + " bytes)"
}

// unauthThrottle counts, per client address, requests that came without
// a valid token (401s, and any other answer to a token-less request): an
// address past unauthBurst of them, regaining unauthRate a second, has
// its new connections refused at accept (no goroutine, no parsing, no
// audit line) until it slows down, as the SQL port refuses a host whose
// failed logins are over budget (issue 40: a token-less request flood
// cost every other client its CPU). Addresses with valid tokens are
// never counted.
type unauthThrottle struct {
	mu    sync.Mutex
	hosts map[string]*unauthBudget
}

type unauthBudget struct {
	left float64
	last time.Time
}

const (
	unauthBurst = 100
	unauthRate  = 10
	// unauthHosts bounds the addresses remembered; past it the oldest
	// knowledge is dropped (a fresh start for every address).
	unauthHosts = 65536
)

// budget is host's budget refilled to now (nil: none spent).
func (u *unauthThrottle) budget(host string, now time.Time) *unauthBudget {
	b := u.hosts[host]
	if b == nil {
		return nil
	}
	b.left = min(unauthBurst, b.left+now.Sub(b.last).Seconds()*unauthRate)
	b.last = now
	if b.left >= unauthBurst {
		delete(u.hosts, host)
		return nil
	}
	return b
}

// spend counts one token-less request from host.
func (u *unauthThrottle) spend(host string, now time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	b := u.budget(host, now)
	if b == nil {
		if u.hosts == nil || len(u.hosts) >= unauthHosts {
			u.hosts = map[string]*unauthBudget{}
		}
		b = &unauthBudget{left: unauthBurst, last: now}
		u.hosts[host] = b
	}
	b.left = max(0, b.left-1)
}

// blocked reports whether host is past its budget.
func (u *unauthThrottle) blocked(host string, now time.Time) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	b := u.budget(host, now)
	return b != nil && b.left < 1
}
