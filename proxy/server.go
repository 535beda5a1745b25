package proxy

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	gmserver "github.com/go-mysql-org/go-mysql/server"

	"github.com/leafproxy/leafproxy/config"
)

// Server accepts MySQL clients and relays each to its own backend connection.
type Server struct {
	cfg              *config.Config
	log              *slog.Logger
	ic               Interceptor
	authMethod       string
	maxPacket        int
	handshakeTimeout time.Duration

	clientTLS  *tls.Config
	pubKey     []byte
	backendTLS *tls.Config
	provider   gmserver.CredentialProvider
	users      map[string]config.User // name -> account with backend credentials resolved

	// gm is go-mysql's server configuration; replaced (rarely) when the
	// backend's version string becomes known so clients see the real one.
	gm      atomic.Pointer[gmserver.Server]
	version atomic.Pointer[string]

	nextID   atomic.Uint64
	active   atomic.Int64
	draining atomic.Bool
	wg       sync.WaitGroup

	baseCtx    context.Context
	cancelBase context.CancelFunc

	mu        sync.Mutex
	listeners []net.Listener
	sessions  map[*Session]struct{}
	done      chan struct{} // closed when Shutdown has finished
	doneOnce  sync.Once
}

// Option adjusts a Server.
type Option func(*Server)

// WithLogger sets the structured logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(s *Server) { s.log = l } }

// WithInterceptor installs the hook consulted before relaying queries,
// prepares and executes. nil (the default) means a pure relay.
func WithInterceptor(i Interceptor) Option { return func(s *Server) { s.ic = i } }

// WithAuthMethod selects the authentication plugin the proxy asks clients
// for: mysql_native_password (default) or caching_sha2_password. Clients
// offering the other one are asked to switch.
func WithAuthMethod(m string) Option { return func(s *Server) { s.authMethod = m } }

// WithMaxPacket bounds one command packet from a client (default 1 GiB,
// MySQL's own ceiling for max_allowed_packet).
func WithMaxPacket(n int) Option { return func(s *Server) { s.maxPacket = n } }

// WithServerVersion fixes the version string announced to clients; by
// default the proxy announces the backend's once it has connected to it.
func WithServerVersion(v string) Option { return func(s *Server) { s.version.Store(&v) } }

// defaultVersion is announced until the backend's own version is known.
const defaultVersion = "5.7.99-leafproxy"

// NewServer prepares a proxy for cfg. It does not contact the backend.
func NewServer(cfg *config.Config, opts ...Option) (*Server, error) {
	s := &Server{
		cfg:              cfg,
		log:              slog.Default(),
		authMethod:       mysql.AUTH_NATIVE_PASSWORD,
		maxPacket:        1 << 30,
		handshakeTimeout: 10 * time.Second,
		sessions:         map[*Session]struct{}{},
		done:             make(chan struct{}),
	}
	for _, o := range opts {
		o(s)
	}
	if s.authMethod != mysql.AUTH_NATIVE_PASSWORD && s.authMethod != mysql.AUTH_CACHING_SHA2_PASSWORD {
		return nil, fmt.Errorf("auth method %q: want %s or %s", s.authMethod, mysql.AUTH_NATIVE_PASSWORD, mysql.AUTH_CACHING_SHA2_PASSWORD)
	}
	if t := cfg.Backend.ConnectTimeout.D(); t > 0 {
		s.handshakeTimeout = max(s.handshakeTimeout, t)
	}
	if err := s.setupTLS(); err != nil {
		return nil, err
	}
	s.setupUsers()
	if s.version.Load() == nil {
		v := defaultVersion
		s.version.Store(&v)
	}
	s.gm.Store(s.newGM(*s.version.Load()))
	s.baseCtx, s.cancelBase = context.WithCancel(context.Background())
	return s, nil
}

func (s *Server) newGM(version string) *gmserver.Server {
	return gmserver.NewServer(version, mysql.DEFAULT_COLLATION_ID, s.authMethod, s.pubKey, s.clientTLS)
}

// noteBackendVersion makes later handshakes announce the backend's version
// (clients such as the mariadb CLI adapt their behaviour to it).
func (s *Server) noteBackendVersion(v string) {
	if v == "" || *s.version.Load() == v {
		return
	}
	s.version.Store(&v)
	s.gm.Store(s.newGM(v))
}

// setupTLS loads the client-facing certificate or, when none is configured,
// makes a self-signed RSA one in memory: go-mysql's caching_sha2_password
// needs an RSA key and a public key even for plaintext clients.
func (s *Server) setupTLS() error {
	var cert tls.Certificate
	var err error
	if s.cfg.TLS.Cert != "" || s.cfg.TLS.Key != "" {
		cert, err = tls.LoadX509KeyPair(s.cfg.TLS.Cert, s.cfg.TLS.Key)
		if err != nil {
			return fmt.Errorf("tls.cert/tls.key: %w", err)
		}
	} else if cert, err = selfSignedRSA(); err != nil {
		return fmt.Errorf("generate proxy TLS key: %w", err)
	}
	s.clientTLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if k, ok := cert.PrivateKey.(*rsa.PrivateKey); ok {
		der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
		if err != nil {
			return fmt.Errorf("encode proxy public key: %w", err)
		}
		s.pubKey = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	} else if s.authMethod == mysql.AUTH_CACHING_SHA2_PASSWORD {
		return errors.New("tls.key: caching_sha2_password needs an RSA key")
	}
	bt := s.cfg.Backend.TLS
	if bt.Enabled {
		tc := &tls.Config{ServerName: bt.ServerName, InsecureSkipVerify: bt.InsecureSkipVerify, MinVersion: tls.VersionTLS12}
		if tc.ServerName == "" {
			if host, _, err := net.SplitHostPort(s.cfg.Backend.Addr); err == nil {
				tc.ServerName = host
			}
		}
		if bt.CA != "" {
			pem, err := os.ReadFile(bt.CA)
			if err != nil {
				return fmt.Errorf("backend.tls.ca: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return fmt.Errorf("backend.tls.ca: no certificate in %s", bt.CA)
			}
			tc.RootCAs = pool
		}
		s.backendTLS = tc
	}
	return nil
}

func selfSignedRSA() (tls.Certificate, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "leafproxy"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().AddDate(10, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// setupUsers resolves each account's backend credentials. With no users
// configured, clients log in with the backend's own user and password.
func (s *Server) setupUsers() {
	s.users = map[string]config.User{}
	list := s.cfg.Users
	if len(list) == 0 {
		list = []config.User{{Name: s.cfg.Backend.User, Password: s.cfg.Backend.Password}}
	}
	for _, u := range list {
		if u.BackendUser == "" {
			u.BackendUser = s.cfg.Backend.User
			if u.BackendPassword == "" {
				u.BackendPassword = s.cfg.Backend.Password
			}
		}
		s.users[u.Name] = u
	}
	if s.authMethod == mysql.AUTH_CACHING_SHA2_PASSWORD {
		// go-mysql only takes its cache-free fast path with its own in-memory
		// provider; any other provider forces RSA full authentication.
		p := gmserver.NewInMemoryProvider()
		for _, u := range s.users {
			p.AddUser(u.Name, u.Password)
		}
		s.provider = p
		return
	}
	s.provider = &userProvider{users: s.users, decoy: randomPassword()}
}

// userProvider answers unknown users with an unguessable password so they
// get MySQL's 1045 "Access denied" rather than go-mysql's definer error.
type userProvider struct {
	users map[string]config.User
	decoy string
}

func (p *userProvider) CheckUsername(name string) (bool, error) {
	_, ok := p.users[name]
	return ok, nil
}

func (p *userProvider) GetCredential(name string) (string, bool, error) {
	if u, ok := p.users[name]; ok {
		return u.Password, true, nil
	}
	return p.decoy, true, nil
}

func randomPassword() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x", b)
}

// ListenAndServe listens on cfg.Listen and serves until ctx ends.
func (s *Server) ListenAndServe(ctx context.Context) error {
	l, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.cfg.Listen, err)
	}
	return s.Serve(ctx, l)
}

// Addr is the address of the first listener (nil before Serve).
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.listeners) == 0 {
		return nil
	}
	return s.listeners[0].Addr()
}

// Sessions reports the client connections open now (including ones still
// in the handshake) and the connections accepted since start (including
// ones refused by limits.max_connections or a failed login). Two atomic
// loads: cheap enough for a metrics scrape at any rate.
func (s *Server) Sessions() (current int64, accepted uint64) {
	return s.active.Load(), s.nextID.Load()
}

// Serve accepts clients on l until ctx ends or Shutdown is called; when ctx
// ends it shuts down gracefully (cfg.Shutdown.Grace) before returning.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	s.mu.Lock()
	if s.draining.Load() {
		s.mu.Unlock()
		l.Close()
		return errors.New("proxy: server is shut down")
	}
	s.listeners = append(s.listeners, l)
	s.mu.Unlock()
	s.log.Info("proxy listening", "addr", l.Addr().String(), "backend", s.cfg.Backend.Addr, "auth", s.authMethod)

	go func() {
		select {
		case <-ctx.Done():
			grace := s.cfg.Shutdown.Grace.D()
			sctx, cancel := context.WithTimeout(context.Background(), grace)
			defer cancel()
			if err := s.Shutdown(sctx); err != nil {
				s.log.Warn("shutdown grace period over, closed remaining sessions", "grace", grace)
			}
		case <-s.done:
		}
	}()

	var delay time.Duration
	for {
		conn, err := l.Accept()
		if err != nil {
			if s.draining.Load() {
				<-s.done
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, syscall.EMFILE) {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				s.log.Warn("accept failed, retrying", "err", err, "in", delay)
				time.Sleep(delay)
				continue
			}
			return fmt.Errorf("accept on %s: %w", l.Addr(), err)
		}
		delay = 0
		s.wg.Add(1)
		go s.handle(conn)
	}
}

// Shutdown stops accepting, closes idle sessions at once, lets statements in
// flight finish until ctx ends, then closes whatever is left. It returns
// ctx's error if sessions had to be cut off.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.draining.Store(true)
	for _, l := range s.listeners {
		l.Close()
	}
	for sess := range s.sessions {
		sess.pokeIfIdle()
	}
	s.mu.Unlock()

	finished := make(chan struct{})
	go func() { s.wg.Wait(); close(finished) }()
	var err error
	select {
	case <-finished:
	case <-ctx.Done():
		err = ctx.Err()
		s.mu.Lock()
		for sess := range s.sessions {
			sess.forceClose()
		}
		s.mu.Unlock()
		s.cancelBase()
		<-finished
	}
	s.cancelBase()
	s.doneOnce.Do(func() { close(s.done) })
	return err
}

// handle runs one client connection from handshake to close.
func (s *Server) handle(raw net.Conn) {
	defer s.wg.Done()
	defer raw.Close()
	id := s.nextID.Add(1)
	log := s.log.With("session", id, "remote", raw.RemoteAddr().String())

	if n := s.active.Add(1); s.cfg.Limits.MaxConnections > 0 && n > int64(s.cfg.Limits.MaxConnections) {
		s.active.Add(-1)
		log.Warn("too many connections", "max", s.cfg.Limits.MaxConnections)
		// MySQL sends this error in place of the initial handshake.
		writeRaw(raw, 0, errPacket(mysql.ER_CON_COUNT_ERROR, "08004", "Too many connections"))
		return
	}
	defer s.active.Add(-1)

	_ = raw.SetDeadline(time.Now().Add(s.handshakeTimeout))
	h := &handshakeHandler{}
	conn, err := s.gm.Load().NewCustomizedConn(raw, s.provider, h)
	if err != nil {
		log.Info("client handshake failed", "user", userOf(conn), "err", err)
		return
	}
	netConn := conn.Conn.Conn // the TLS connection if the client upgraded
	_ = netConn.SetDeadline(time.Time{})
	user := conn.GetUser()
	log = log.With("user", user)
	_, isTLS := netConn.(*tls.Conn)
	sess := newSession(s, id, log, netConn, conn.Capability(), conn.Charset(), user, h.db)
	if s.cfg.TLS.Required && !isTLS {
		// go-mysql has already sent the login OK: answer commands instead.
		log.Info("refused plaintext client: tls.required")
		sess.refuse(&mysql.MyError{Code: 3159, State: "HY000",
			Message: "Connections using insecure transport are prohibited while tls.required is set"})
		return
	}
	if !s.register(sess) {
		return
	}
	defer s.unregister(sess)
	sess.serve(s.baseCtx)
}

func userOf(c *gmserver.Conn) string {
	if c == nil {
		return ""
	}
	return c.GetUser()
}

func (s *Server) register(sess *Session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining.Load() {
		return false
	}
	s.sessions[sess] = struct{}{}
	return true
}

func (s *Server) unregister(sess *Session) {
	s.mu.Lock()
	delete(s.sessions, sess)
	s.mu.Unlock()
}

// writeRaw writes one packet directly (no session yet), best effort.
func writeRaw(c net.Conn, seq uint8, payload []byte) {
	_ = c.SetWriteDeadline(time.Now().Add(2 * time.Second))
	n := len(payload)
	_, _ = c.Write(append([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}, payload...))
}

// handshakeHandler only remembers the database named in the handshake:
// go-mysql calls UseDB before the password is checked, so nothing may
// touch the backend here. The command methods are never called: the
// session runs its own loop.
type handshakeHandler struct{ db string }

func (h *handshakeHandler) UseDB(db string) error { h.db = db; return nil }
func (h *handshakeHandler) HandleQuery(string) (*mysql.Result, error) {
	return nil, errors.New("unused")
}
func (h *handshakeHandler) HandleFieldList(string, string) ([]*mysql.Field, error) {
	return nil, errors.New("unused")
}
func (h *handshakeHandler) HandleStmtPrepare(string) (int, int, any, error) {
	return 0, 0, nil, errors.New("unused")
}
func (h *handshakeHandler) HandleStmtExecute(any, string, []any) (*mysql.Result, error) {
	return nil, errors.New("unused")
}
func (h *handshakeHandler) HandleStmtClose(any) error             { return nil }
func (h *handshakeHandler) HandleOtherCommand(byte, []byte) error { return errors.New("unused") }
