package proxy

import (
	"context"
	"crypto/sha1"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/pingcap/tidb/pkg/parser/charset"

	"github.com/leafproxy/leafproxy/proxy/wire"
)

// preAuthMaxPacket bounds every packet read before a client has
// authenticated: a handshake response with connection attributes is a few
// hundred bytes, MySQL caps attributes at 64 KB. Nothing larger is buffered
// for a stranger.
const preAuthMaxPacket = 64 << 10

// loginError is a handshake failure the client is told about (as an ERR
// packet) before the connection closes.
type loginError struct {
	code  uint16
	state string
	msg   string
}

func (e *loginError) Error() string { return fmt.Sprintf("%d (%s): %s", e.code, e.state, e.msg) }

// clientHello is what the handshake learned about the client.
type clientHello struct {
	resp     *wire.HandshakeResponse
	account  Account
	scramble []byte
	tls      bool
}

// accessDenied is MariaDB's 1045 wording, with the client's address as the host.
func accessDenied(user string, remote net.Addr, withPassword bool) *loginError {
	host := "localhost"
	if ta, ok := remote.(*net.TCPAddr); ok {
		host = ta.IP.String()
	}
	using := "NO"
	if withPassword {
		using = "YES"
	}
	return &loginError{mysql.ER_ACCESS_DENIED_ERROR, "28000",
		fmt.Sprintf("Access denied for user '%s'@'%s' (using password: %s)", user, host, using)}
}

// greetingFor builds the greeting a new client gets: the backend's own
// version, capabilities (less what the proxy cannot relay), status flags and
// charset, with the proxy's session id and a fresh scramble.
func (s *Server) greetingFor(id uint32, hello *wire.Greeting) *wire.Greeting {
	g := &wire.Greeting{
		Version:  hello.Version,
		ThreadID: id,
		Scramble: randomScramble(),
		Caps:     hello.Caps&proxyCaps | mysql.CLIENT_SSL,
		Charset:  hello.Charset,
		Status:   hello.Status,
		Plugin:   s.authMethod,
	}
	if v := s.versionOverride; v != "" {
		g.Version = v
	}
	if hello.MariaDB() {
		g.Caps &^= mysql.CLIENT_LONG_PASSWORD
		g.ExtCaps = hello.ExtCaps & proxyExtCaps
	}
	return g
}

// randomScramble returns 20 bytes in 1..127 without NUL, as servers send.
func randomScramble() []byte {
	b := mysql.RandomBuf(20)
	for i := range b {
		b[i] = b[i]&0x7f | 1
	}
	return b
}

// clientHandshake greets the client (unless the accept loop has: greeted),
// reads its response (upgrading to TLS
// when asked), authenticates it against the proxy's accounts and returns
// the client leg (its sequence id after the last packet read).
func (s *Server) clientHandshake(c *wire.Leg, g *wire.Greeting, greeted bool) (*clientHello, error) {
	h, err := s.greetClient(c, g, greeted)
	if err != nil {
		return nil, err
	}
	resp := h.resp
	plugin := resp.Plugin
	if resp.Caps&mysql.CLIENT_PLUGIN_AUTH == 0 {
		plugin = mysql.AUTH_NATIVE_PASSWORD // cannot be switched; 4.1 scramble
	}
	acct, err := s.authenticate(c, resp.User, plugin, resp.Auth, g.Scramble, c.Conn.RemoteAddr())
	if err != nil {
		return nil, err
	}
	h.account = acct
	return h, nil
}

// greetClient writes greeting g (unless greeted), reads the client's handshake response
// (upgrading its leg to TLS when asked) and checks tls.required; the
// client is not yet authenticated.
func (s *Server) greetClient(c *wire.Leg, g *wire.Greeting, greeted bool) (*clientHello, error) {
	if !greeted {
		if err := c.WritePacket(wire.AppendGreeting(nil, g)); err != nil {
			return nil, err
		}
		if err := c.Flush(); err != nil {
			return nil, err
		}
	}
	p, err := c.ReadPacket(nil, preAuthMaxPacket)
	if err != nil {
		return nil, err
	}
	mariadb := g.MariaDB()
	resp, err := wire.ParseHandshakeResponse(p, mariadb)
	if err != nil {
		return nil, &loginError{mysql.ER_HANDSHAKE_ERROR, "08S01", "Bad handshake"}
	}
	h := &clientHello{scramble: g.Scramble}
	if len(p) == 32 && resp.Caps&mysql.CLIENT_SSL != 0 {
		// The client may have sent its TLS hello right behind the SSL
		// request: read through the bytes already buffered.
		tc := tls.Server(&wire.BufferedConn{Conn: c.Conn, R: c.R}, s.clientTLS)
		if err := tc.Handshake(); err != nil {
			return nil, fmt.Errorf("client TLS handshake: %w", err)
		}
		seq := c.Seq
		*c = *wire.NewLeg("client", tc, 1<<10, 1<<10)
		c.Seq = seq
		h.tls = true
		if p, err = c.ReadPacket(nil, preAuthMaxPacket); err != nil {
			return nil, err
		}
		if resp, err = wire.ParseHandshakeResponse(p, mariadb); err != nil || len(p) == 32 {
			return nil, &loginError{mysql.ER_HANDSHAKE_ERROR, "08S01", "Bad handshake"}
		}
	}
	// Only what both sides offered counts.
	resp.Caps &= g.Caps
	resp.ExtCaps &= g.ExtCaps
	h.resp = resp
	if s.cfg.TLS.Required && !h.tls {
		return nil, &loginError{3159, "HY000", "Connections using insecure transport are prohibited while tls.required is set"}
	}
	return h, nil
}

// authenticate checks user's auth data against the proxy's account,
// switching the client to another plugin when the one it used cannot be
// checked. Unknown users go through the same exchange and get the same
// 1045. A host whose failed logins are over budget is refused (1129)
// without a check, and each wrong password counts against its host.
func (s *Server) authenticate(c *wire.Leg, user, plugin string, auth, scramble []byte, remote net.Addr) (Account, error) {
	host := hostKey(remote)
	if wait, blocked := s.throttle.blocked(host, time.Now()); blocked {
		return Account{}, hostBlocked(remote, wait)
	}
	users := s.users.Load()
	acct, known := users.byName[user]
	// A password known in clear checks either plugin's scramble without a
	// switch; a password_hash (SHA1(SHA1(pw))) checks only
	// mysql_native_password's, so its clients are switched to that (and
	// so are unknown users while some account has only a hash, so that
	// the switch does not tell which names exist). Any other plugin is
	// switched to the configured one.
	target := plugin
	if target != mysql.AUTH_NATIVE_PASSWORD && target != mysql.AUTH_CACHING_SHA2_PASSWORD {
		target = s.authMethod
	}
	if target == mysql.AUTH_CACHING_SHA2_PASSWORD && (known && acct.hashOnly() || !known && users.hashOnly) {
		target = mysql.AUTH_NATIVE_PASSWORD
	}
	if target != plugin {
		plugin = target
		sw := append([]byte{0xFE}, plugin...)
		sw = append(sw, 0)
		sw = append(append(sw, scramble...), 0)
		if err := c.WritePacket(sw); err != nil {
			return Account{}, err
		}
		if err := c.Flush(); err != nil {
			return Account{}, err
		}
		p, err := c.ReadPacket(nil, preAuthMaxPacket)
		if err != nil {
			return Account{}, err
		}
		auth = p
	}
	ok := false
	switch {
	case !known:
		// The same work as for a known user: a decoy password's check.
		want := mysql.CalcPassword(scramble, []byte(s.decoy))
		if plugin == mysql.AUTH_CACHING_SHA2_PASSWORD {
			want = mysql.CalcCachingSha2Password(scramble, s.decoy)
		}
		_ = subtle.ConstantTimeCompare(want, auth)
	case acct.hashOnly():
		ok = checkNativeHash(scramble, auth, acct.PasswordHash)
	case acct.Password == "":
		ok = len(auth) == 0
	default:
		want := mysql.CalcPassword(scramble, []byte(acct.Password))
		if plugin == mysql.AUTH_CACHING_SHA2_PASSWORD {
			want = mysql.CalcCachingSha2Password(scramble, acct.Password)
		}
		ok = len(want) == len(auth) && subtle.ConstantTimeCompare(want, auth) == 1
	}
	if !ok {
		s.loginFailures.Add(1)
		if d := s.throttle.fail(host, time.Now()); d > 0 {
			s.log.Warn("client host blocked after too many failed logins", "host", host, "for", d.String(), "user", user)
		}
		return Account{}, accessDenied(user, remote, len(auth) > 0)
	}
	if plugin == mysql.AUTH_CACHING_SHA2_PASSWORD && acct.Password != "" {
		// The proxy knows the password, so its "cache" always hits.
		if err := c.WritePacket([]byte{0x01, 0x03}); err != nil {
			return Account{}, err
		}
	}
	return acct, nil
}

// hashOnly says the account is checked against PasswordHash (it has no
// password in clear).
func (a Account) hashOnly() bool { return a.Password == "" && len(a.PasswordHash) > 0 }

// checkNativeHash checks a mysql_native_password answer against the stored
// SHA1(SHA1(password)), as MySQL does without knowing the password: the
// answer is SHA1(pw) XOR SHA1(scramble + SHA1(SHA1(pw))), so XOR with the
// second half gives SHA1(pw) back, whose SHA1 must be the stored hash.
func checkNativeHash(scramble, auth, stage2 []byte) bool {
	if len(auth) != sha1.Size || len(stage2) != sha1.Size || len(scramble) < 20 {
		return false
	}
	h := sha1.New()
	h.Write(scramble[:20])
	h.Write(stage2)
	mask := h.Sum(nil)
	stage1 := make([]byte, sha1.Size)
	for i := range stage1 {
		stage1[i] = auth[i] ^ mask[i]
	}
	got := sha1.Sum(stage1)
	return subtle.ConstantTimeCompare(got[:], stage2) == 1
}

// backendLoginFor is the backend login for an authenticated client.
func backendLoginFor(h *clientHello) backendLogin {
	return backendLogin{
		user:       h.account.BackendUser,
		password:   h.account.BackendPassword,
		db:         h.resp.DB,
		charset:    backendCharset(h.resp.Charset),
		clientCaps: h.resp.Caps,
		clientExt:  h.resp.ExtCaps,
		maxPacket:  h.resp.MaxPacket,
		attrs:      h.resp.Attrs,
	}
}

// backendCharset keeps the client's collation when the parser knows it, and
// falls back to utf8mb4_general_ci, which MySQL and MariaDB both have.
func backendCharset(id uint8) uint8 {
	if c, err := charset.GetCollationByID(int(id)); err == nil && c.Name != "" {
		return id
	}
	return 45
}

// writeLoginError sends e as the answer to the handshake, best effort.
func writeLoginError(c *wire.Leg, e *loginError) {
	_ = c.Conn.SetWriteDeadline(time.Now().Add(2 * time.Second))
	if c.WritePacket(wire.ErrPacket(e.code, e.state, e.msg)) == nil {
		_ = c.Flush()
	}
}

// backendRefusal turns a failed backend login into what the client is told:
// the backend's own ERR (1045, 1049, ...) or 1429 naming the address.
func (s *Server) backendRefusal(err error) *loginError {
	var me *mysql.MyError
	if errors.As(err, &me) {
		return &loginError{me.Code, me.State, me.Message}
	}
	return &loginError{errBackendUnreachable, "HY000",
		fmt.Sprintf("leafproxy: can't connect to backend MySQL server on '%s': %v", s.cfg.Backend.Addr, rootCause(err))}
}

// hello returns the backend greeting new clients are shown, learning it
// first when the proxy has not yet seen one (start-up, or every earlier
// attempt failed). Clients arriving while a probe is under way share its
// answer instead of each waiting out another connect timeout.
func (s *Server) hello(ctx context.Context) (*wire.Greeting, error) {
	if g := s.backendHello.Load(); g != nil {
		return g, nil
	}
	s.probeMu.Lock()
	if g := s.backendHello.Load(); g != nil {
		s.probeMu.Unlock()
		return g, nil
	}
	p := s.probe
	if p == nil {
		p = &probeCall{done: make(chan struct{})}
		s.probe = p
		go s.runProbe(p)
	}
	s.probeMu.Unlock()
	select {
	case <-p.done:
		return p.g, p.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// probeCall is one probe login, shared by the clients waiting for it.
type probeCall struct {
	done chan struct{}
	g    *wire.Greeting
	err  error
}

func (s *Server) runProbe(p *probeCall) {
	bc, err := s.connectBackend(s.baseCtx, backendLogin{
		user: s.cfg.Backend.User, password: s.cfg.Backend.Password, charset: 45,
	})
	if err == nil {
		// Log out cleanly: an aborted connection counts against the
		// proxy's host in the backend's max_connect_errors.
		_ = bc.conn.SetDeadline(time.Now().Add(time.Second))
		_, _ = bc.conn.Write([]byte{1, 0, 0, 0, mysql.COM_QUIT})
		bc.conn.Close()
		p.g = bc.hello
	}
	p.err = err
	s.probeMu.Lock()
	s.probe = nil
	s.probeMu.Unlock()
	close(p.done)
}

// noteGreeting remembers the backend's latest greeting, so clients see an
// upgraded or restarted backend as it is now.
func (s *Server) noteGreeting(g *wire.Greeting) {
	cp := *g
	cp.Scramble = nil
	cp.ThreadID = 0
	if old := s.backendHello.Load(); old == nil || old.Version != cp.Version || old.Caps != cp.Caps ||
		old.ExtCaps != cp.ExtCaps || old.Charset != cp.Charset || old.Status != cp.Status {
		s.backendHello.Store(&cp)
	}
}
