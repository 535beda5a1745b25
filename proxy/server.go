package proxy

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/backend"
	"github.com/leafproxy/leafproxy/proxy/frontdoor"
	"github.com/leafproxy/leafproxy/proxy/idle"
	"github.com/leafproxy/leafproxy/proxy/login"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// Server accepts MySQL clients and relays each to its own backend connection.
type Server struct {
	cfg             Config
	log             *slog.Logger
	ic              Interceptor
	authMethod      string
	maxPacket       int
	versionOverride string

	clientTLS  *tls.Config
	backendTLS *tls.Config
	users      atomic.Pointer[accounts]
	admins     atomic.Pointer[map[string]bool] // backend-account mode's admins, by user name
	decoy      string                          // password checked for unknown users, so they cost the same

	// backendHello is the backend's greeting as last seen (version,
	// capabilities, status, charset); new clients are greeted with it.
	backendHello login.Greetings

	mem     *idle.Budget
	idleMem idle.Memory

	loopsOnce    sync.Once
	loopsStop    sync.Once
	loop         *loop        // the event loop (its runners: event_loops), started with the first session that can use one
	loopCount    atomic.Int32 // len(loops), for other goroutines
	loopSessions atomic.Int64
	loopMoves    atomic.Uint64
	loopHandoffs atomic.Uint64

	stats       serverStats  // statement-path totals (stats.go), under mu
	noStats     bool         // WithoutStats: sessions count nothing
	backendDown backendReach // the backend did not answer the last connect or probe (backendstate.go)

	throttle          *loginThrottle // failed logins per client host; nil when off
	loginFailures     atomic.Uint64  // logins refused for wrong credentials
	handshakesDropped atomic.Uint64  // pending handshakes closed to make room
	handling          atomic.Int64   // connections whose handle has not returned (tests)
	hangupOn          atomic.Bool    // the hang-up watch runs (hangup.go)

	front frontdoor.Door // the accept loop, session ids, the doorman (frontdoorglue.go)

	accepted atomic.Uint64
	active   atomic.Int64 // logged-in sessions
	draining atomic.Bool
	wg       sync.WaitGroup

	baseCtx    context.Context
	cancelBase context.CancelFunc

	mu       sync.Mutex
	sessions map[uint32]*Session // by proxy session id
	pending  pendingHandshakes   // handshakes under way (limits.max_handshakes)
	silent   pendingHandshakes   // greeted, nothing received yet (proxy/frontdoor; limits.max_silent_handshakes)
	done     chan struct{}       // closed when Shutdown has finished
	doneOnce sync.Once
}

// accounts is the set of proxy users, swapped whole on reload.
type accounts struct {
	byName   map[string]Account
	hashOnly bool // some account has only a password hash
	// backendAuth: no users are configured, the backend authenticates
	// every client (passthrough.go).
	backendAuth bool
}

// Option adjusts a Server.
type Option func(*Server)

// WithLogger sets the structured logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(s *Server) { s.log = l } }

// WithInterceptor installs the hook consulted before relaying queries,
// prepares and executes. nil (the default) means a pure relay.
func WithInterceptor(i Interceptor) Option { return func(s *Server) { s.ic = i } }

// WithAuthMethod selects the authentication plugin the proxy's greeting
// names: mysql_native_password (default) or caching_sha2_password. Clients
// answering with either are checked without a switch; others are switched.
func WithAuthMethod(m string) Option { return func(s *Server) { s.authMethod = m } }

// WithoutStats turns the statement-path counters off (CommandStats then
// reports only logins): for comparing their cost, and for a proxy nobody
// scrapes.
func WithoutStats() Option { return func(s *Server) { s.noStats = true } }

// WithMaxPacket bounds one command packet from a client (default 1 GiB,
// MySQL's own ceiling for max_allowed_packet).
func WithMaxPacket(n int) Option { return func(s *Server) { s.maxPacket = n } }

// WithServerVersion fixes the version string announced to clients; by
// default the proxy announces the backend's.
func WithServerVersion(v string) Option { return func(s *Server) { s.versionOverride = v } }

// sessionIDBase keeps the proxy's session ids apart from backend thread
// ids (frontdoor.SessionIDBase).
const sessionIDBase = frontdoor.SessionIDBase

// NewServer prepares a proxy for cfg. It does not contact the backend.
func NewServer(cfg Config, opts ...Option) (*Server, error) {
	cfg = cfg.withDefaults()
	s := &Server{
		cfg:        cfg,
		log:        slog.Default(),
		authMethod: mysql.AUTH_NATIVE_PASSWORD,
		maxPacket:  1 << 30,
		sessions:   map[uint32]*Session{},
		done:       make(chan struct{}),
		decoy:      randomPassword(),
	}
	s.stats.ended.Errors = map[uint16]uint64{}
	for _, o := range opts {
		o(s)
	}
	if s.authMethod != mysql.AUTH_NATIVE_PASSWORD && s.authMethod != mysql.AUTH_CACHING_SHA2_PASSWORD {
		return nil, fmt.Errorf("auth method %q: want %s or %s", s.authMethod, mysql.AUTH_NATIVE_PASSWORD, mysql.AUTH_CACHING_SHA2_PASSWORD)
	}
	if err := s.setupTLS(); err != nil {
		return nil, err
	}
	s.SetUsers(cfg.Users)
	s.SetAdmins(cfg.Admins)
	s.mem = idle.NewBudget(cfg.Limits.CommandMemory)
	s.throttle = login.NewThrottle(cfg.Limits.LoginFailures, cfg.Limits.LoginFailureInterval, cfg.Limits.LoginBlockMax, login.ThrottleHosts)
	s.idleMem.Done = s.done
	s.baseCtx, s.cancelBase = context.WithCancel(context.Background())
	s.initFront()
	return s, nil
}

// SetUsers replaces the proxy's accounts (a configuration reload): new
// logins use them at once; sessions already logged in keep going. With no
// users, the backend authenticates clients with its own accounts
// (backend-account mode, passthrough.go).
func (s *Server) SetUsers(list []Account) {
	a := &accounts{byName: map[string]Account{}, backendAuth: len(list) == 0}
	for _, u := range list {
		if u.BackendUser == "" {
			u.BackendUser = s.cfg.Backend.User
			if u.BackendPassword == "" {
				u.BackendPassword = s.cfg.Backend.Password
			}
		}
		a.byName[u.Name] = u
		a.hashOnly = a.hashOnly || u.hashOnly()
	}
	s.users.Store(a)
}

func randomPassword() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x", b)
}

// ListenAndServe listens on cfg.Listen (host:port, or a Unix socket path)
// and serves until ctx ends.
func (s *Server) ListenAndServe(ctx context.Context) error {
	l, err := Listen(s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.cfg.Listen, err)
	}
	return s.Serve(ctx, l)
}

// Listen binds addr as Config.Listen reads it: host:port, or a Unix socket
// path (containing '/'), whose file a process that died left behind is
// removed first (one still serving it is an error).
func Listen(addr string) (net.Listener, error) { return frontdoor.Listen(addr) }

// Addr is the address of the first listener (nil before Serve).
func (s *Server) Addr() net.Addr { return s.front.Addr() }

// Draining reports whether Shutdown has begun: no client is accepted any
// more (a readiness probe's answer).
func (s *Server) Draining() bool { return s.draining.Load() }

// Sessions reports the logged-in client sessions now and the connections
// accepted since start (including ones refused or that failed to log in).
// Two atomic loads: cheap enough for a metrics scrape at any rate.
func (s *Server) Sessions() (current int64, accepted uint64) {
	return s.active.Load(), s.accepted.Load()
}

// Serve accepts clients on l until ctx ends or Shutdown is called; when ctx
// ends it shuts down gracefully (cfg.Shutdown.Grace) before returning.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	return s.front.Serve(ctx, l, s.cfg.Shutdown.Grace, "backend", s.cfg.Backend.Addr, "auth", s.authMethod)
}

// Shutdown stops accepting, closes idle sessions at once, lets statements in
// flight finish until ctx ends, then closes whatever is left. It returns
// ctx's error if sessions had to be cut off.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.front.Shutdown(ctx)
	s.cancelBase()
	s.doneOnce.Do(func() { close(s.done) })
	return err
}

// handle runs one client connection from handshake to close; w, when not
// nil, is the connection as the accept loop greeted it (proxy/frontdoor),
// whose first bytes have arrived. Its steps: the handshake budget
// (Door.AdmitHandshake), the login (login), the connection limit
// (Door.AdmitSession), the backend login with users, then the session
// (runSession).
func (s *Server) handle(raw net.Conn, w *frontdoor.Waiting) {
	defer s.wg.Done()
	defer s.handling.Add(-1)
	defer raw.Close()
	id := s.front.SessionID(w)
	remote := frontdoor.Remote(raw)
	log := s.log.With("session", id, "remote", remote)
	// A panic in the handshake (a parser bug on hostile input) costs this
	// connection, not the process.
	defer func() {
		if r := recover(); r != nil {
			log.Error("connection closed: internal error in handshake", "panic", fmt.Sprint(r))
		}
	}()

	// Small buffers until the client has logged in: a flood of strangers
	// costs little memory each.
	c := wire.NewLeg("client", raw, 1<<10, 1<<10)
	host := login.HostKey(raw.RemoteAddr())
	if !s.front.AdmitHandshake(raw, c, host, w) {
		return
	}
	h, bc, ok := s.login(raw, c, host, id, w, log)
	if !ok {
		return
	}
	if bc != nil {
		// Backend-account mode: the client was greeted with its backend
		// thread id, which is then the session's id in every log record.
		log = s.log.With("session", bc.ThreadID, "remote", remote)
	}
	log = log.With("user", h.Resp.User)
	_ = c.Conn.SetDeadline(time.Time{})

	if !s.front.AdmitSession(c, backendNetConn(bc), log) {
		return
	}
	defer s.active.Add(-1)

	if bc == nil {
		var err error
		if bc, err = s.connectBackend(s.baseCtx, backendLoginFor(h)); err != nil {
			s.front.RefuseBackendLogin(c, err, log)
			return
		}
	}
	s.runSession(id, log, c, h, bc)
}

// login runs the client's handshake (greeted already by the accept loop,
// relayed to the backend in backend-account mode, or greeted here as the
// backend would) and takes the connection out of the handshake budget.
// bc is the client's backend connection in backend-account mode (nil
// with users). false: the login failed and the client was told, or the
// connection broke.
func (s *Server) login(raw net.Conn, c *wire.Leg, host string, id uint32, w *frontdoor.Waiting, log *slog.Logger) (h *clientHello, bc *backendConn, ok bool) {
	var err error
	if w != nil {
		h, err = s.clientHandshake(c, w.G, true)
	} else if s.users.Load().backendAuth {
		h, bc, err = s.passThroughHandshake(c)
	} else {
		hello, herr := s.hello(s.baseCtx)
		if herr != nil {
			s.pending.Remove(raw, host, &s.mu)
			// Logged once when the backend stops answering (noteBackend).
			log.Debug("backend unreachable: refusing client", "backend", s.cfg.Backend.Addr, "err", backend.RootCause(herr))
			s.refuseLogin(c, s.backendRefusal(herr))
			return nil, nil, false
		}
		h, err = s.clientHandshake(c, s.greetingFor(id, hello), false)
	}
	s.pending.Remove(raw, host, &s.mu)
	if err != nil {
		var le *login.Error
		if errors.As(err, &le) {
			log.Info("login refused", "code", le.Code, "err", le.Msg)
			s.refuseLogin(c, le)
		} else {
			log.Info("client handshake failed", "err", oneLine(err))
		}
		return nil, nil, false
	}
	return h, bc, true
}

// runSession registers the logged-in client's session, tells the client
// it is in (the backend's own login OK) and serves it until it ends.
func (s *Server) runSession(id uint32, log *slog.Logger, c *wire.Leg, h *clientHello, bc *backendConn) {
	sess := newSession(s, id, log, c, h, bc)
	if !s.register(sess) {
		sess.ending = endQuit
		sess.finish()
		return
	}
	defer s.unregister(sess)
	s.stats.logins.Add(1)
	// The backend's own login OK (status flags, session state) is the
	// client's: both legs start in the same state.
	if err := c.WritePacket(bc.OK); err != nil || c.Flush() != nil {
		sess.ending = endQuit
		sess.finish()
		return
	}
	if h.Resp.Caps&mysql.CLIENT_COMPRESS != 0 {
		c.Compress(false, clientReadBuf, clientWriteBuf)
	} else {
		c.Grow(clientReadBuf, clientWriteBuf)
	}
	sess.serve(s.baseCtx)
}

// oneLine is err's message without stack traces or newlines, for one log line.
func oneLine(err error) string {
	m := err.Error()
	if i := strings.IndexByte(m, '\n'); i >= 0 {
		m = m[:i]
	}
	return m
}
