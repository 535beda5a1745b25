package login

import (
	"crypto/sha1"
	"crypto/subtle"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/pingcap/tidb/pkg/parser/charset"

	"github.com/leafproxy/leafproxy/proxy/wire"
)

// PreAuthMaxPacket bounds every packet read before a client has
// authenticated: a handshake response with connection attributes is a few
// hundred bytes, MySQL caps attributes at 64 KB. Nothing larger is buffered
// for a stranger.
const PreAuthMaxPacket = 64 << 10

// Error is a handshake failure the client is told about (as an ERR
// packet) before the connection closes.
type Error struct {
	Code  uint16
	State string
	Msg   string
}

func (e *Error) Error() string { return fmt.Sprintf("%d (%s): %s", e.Code, e.State, e.Msg) }

// Hello is what the handshake learned about the client.
type Hello struct {
	Resp     *wire.HandshakeResponse
	Scramble []byte
	TLS      bool
}

// accessDenied is MariaDB's 1045 wording, with the client's address as the host.
func accessDenied(user string, remote net.Addr, withPassword bool) *Error {
	host := "localhost"
	if ta, ok := remote.(*net.TCPAddr); ok {
		host = ta.IP.String()
	}
	using := "NO"
	if withPassword {
		using = "YES"
	}
	return &Error{mysql.ER_ACCESS_DENIED_ERROR, "28000",
		fmt.Sprintf("Access denied for user '%s'@'%s' (using password: %s)", user, host, using)}
}

// Greeting builds the greeting a new client gets: the backend's own
// version (or version, when set), capabilities (less what the proxy cannot
// relay), status flags and charset, with the proxy's session id, a fresh
// scramble and plugin, the proxy's auth method.
func Greeting(id uint32, hello *wire.Greeting, plugin, version string) *wire.Greeting {
	g := &wire.Greeting{
		Version:  hello.Version,
		ThreadID: id,
		Scramble: randomScramble(),
		Caps:     hello.Caps&ProxyCaps | mysql.CLIENT_SSL,
		Charset:  hello.Charset,
		Status:   hello.Status,
		Plugin:   plugin,
	}
	if version != "" {
		g.Version = version
	}
	if hello.MariaDB() {
		g.Caps &^= mysql.CLIENT_LONG_PASSWORD
		g.ExtCaps = hello.ExtCaps & ProxyExtCaps
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

// GreetClient writes greeting g (unless greeted), reads the client's
// handshake response into h (upgrading its leg to TLS with clientTLS when
// asked) and checks tls.required (tlsRequired); the client is not yet
// authenticated.
func GreetClient(h *Hello, c *wire.Leg, g *wire.Greeting, greeted bool, clientTLS *tls.Config, tlsRequired bool) error {
	if !greeted {
		if err := c.WritePacket(wire.AppendGreeting(nil, g)); err != nil {
			return err
		}
		if err := c.Flush(); err != nil {
			return err
		}
	}
	p, err := c.ReadPacket(nil, PreAuthMaxPacket)
	if err != nil {
		return err
	}
	mariadb := g.MariaDB()
	resp, err := wire.ParseHandshakeResponse(p, mariadb)
	if err != nil {
		return &Error{mysql.ER_HANDSHAKE_ERROR, "08S01", "Bad handshake"}
	}
	h.Scramble = g.Scramble
	if len(p) == 32 && resp.Caps&mysql.CLIENT_SSL != 0 {
		// The client may have sent its TLS hello right behind the SSL
		// request: read through the bytes already buffered.
		tc := tls.Server(&wire.BufferedConn{Conn: c.Conn, R: c.R}, clientTLS)
		if err := tc.Handshake(); err != nil {
			return fmt.Errorf("client TLS handshake: %w", err)
		}
		seq := c.Seq
		*c = *wire.NewLeg("client", tc, 1<<10, 1<<10)
		c.Seq = seq
		h.TLS = true
		if p, err = c.ReadPacket(nil, PreAuthMaxPacket); err != nil {
			return err
		}
		if resp, err = wire.ParseHandshakeResponse(p, mariadb); err != nil || len(p) == 32 {
			return &Error{mysql.ER_HANDSHAKE_ERROR, "08S01", "Bad handshake"}
		}
	}
	// Only what both sides offered counts.
	resp.Caps &= g.Caps
	resp.ExtCaps &= g.ExtCaps
	h.Resp = resp
	if tlsRequired && !h.TLS {
		return &Error{3159, "HY000", "Connections using insecure transport are prohibited while tls.required is set"}
	}
	return nil
}

// Creds are what an account is checked with: its password in clear, or
// only PasswordHash, SHA1(SHA1(password)).
type Creds struct {
	Password     string
	PasswordHash []byte
}

// HashOnly says the account is checked against PasswordHash (it has no
// password in clear).
func (c Creds) HashOnly() bool { return c.Password == "" && len(c.PasswordHash) > 0 }

// Accounts are the proxy's accounts as a login sees them (package proxy's
// set of users, swapped whole on reload: one value for the whole login).
type Accounts interface {
	// Creds are user's credentials; false: no such account.
	Creds(user string) (Creds, bool)
	// HashOnly says some account has only a password hash.
	HashOnly() bool
}

// Checker checks clients' credentials against the proxy's accounts, with
// the failed-login accounting: Failures counts wrong credentials, Throttle
// (nil: off) refuses a host whose failures are over budget, Log says when
// a host is blocked.
type Checker struct {
	Method   string // the plugin the greeting names (mysql_native_password or caching_sha2_password)
	Decoy    string // password checked for unknown users, so they cost the same
	Throttle *Throttle
	Failures *atomic.Uint64
	Log      *slog.Logger
}

// CountFailure counts a refused password against host (the throttle)
// and in Failures, logging with attrs when the host is then blocked.
func (k Checker) CountFailure(host string, attrs ...any) {
	k.Failures.Add(1)
	if d := k.Throttle.Fail(host, time.Now()); d > 0 {
		k.Log.Warn("client host blocked after too many failed logins", append([]any{"host", host, "for", d.String()}, attrs...)...)
	}
}

// Authenticate checks user's auth data against its account in users,
// switching the client to another plugin when the one it used cannot be
// checked. Unknown users go through the same exchange and get the same
// 1045. A host whose failed logins are over budget is refused (1129)
// without a check, and each wrong password counts against its host.
func (k Checker) Authenticate(c *wire.Leg, users Accounts, user, plugin string, auth, scramble []byte, remote net.Addr) error {
	host := HostKey(remote)
	if wait, blocked := k.Throttle.Blocked(host, time.Now()); blocked {
		return HostBlocked(remote, wait)
	}
	acct, known := users.Creds(user)
	// A password known in clear checks either plugin's scramble without a
	// switch; a password_hash (SHA1(SHA1(pw))) checks only
	// mysql_native_password's, so its clients are switched to that (and
	// so are unknown users while some account has only a hash, so that
	// the switch does not tell which names exist). Any other plugin is
	// switched to the configured one.
	target := plugin
	if target != mysql.AUTH_NATIVE_PASSWORD && target != mysql.AUTH_CACHING_SHA2_PASSWORD {
		target = k.Method
	}
	if target == mysql.AUTH_CACHING_SHA2_PASSWORD && (known && acct.HashOnly() || !known && users.HashOnly()) {
		target = mysql.AUTH_NATIVE_PASSWORD
	}
	if target != plugin {
		plugin = target
		p, err := switchPlugin(c, plugin, scramble)
		if err != nil {
			return err
		}
		auth = p
	}
	if !k.check(acct, known, plugin, auth, scramble) {
		k.CountFailure(host, "user", user)
		return accessDenied(user, remote, len(auth) > 0)
	}
	if plugin == mysql.AUTH_CACHING_SHA2_PASSWORD && acct.Password != "" {
		// The proxy knows the password, so its "cache" always hits.
		if err := c.WritePacket([]byte{0x01, 0x03}); err != nil {
			return err
		}
	}
	return nil
}

// switchPlugin asks the client to answer scramble with plugin instead and
// returns its answer.
func switchPlugin(c *wire.Leg, plugin string, scramble []byte) ([]byte, error) {
	sw := append([]byte{0xFE}, plugin...)
	sw = append(sw, 0)
	sw = append(append(sw, scramble...), 0)
	if err := c.WritePacket(sw); err != nil {
		return nil, err
	}
	if err := c.Flush(); err != nil {
		return nil, err
	}
	return c.ReadPacket(nil, PreAuthMaxPacket)
}

// check says whether auth is the right answer to scramble for acct with
// plugin; an unknown user costs the same work (a decoy password's check)
// and fails.
func (k Checker) check(acct Creds, known bool, plugin string, auth, scramble []byte) bool {
	switch {
	case !known:
		want := mysql.CalcPassword(scramble, []byte(k.Decoy))
		if plugin == mysql.AUTH_CACHING_SHA2_PASSWORD {
			want = mysql.CalcCachingSha2Password(scramble, k.Decoy)
		}
		_ = subtle.ConstantTimeCompare(want, auth)
		return false
	case acct.HashOnly():
		return checkNativeHash(scramble, auth, acct.PasswordHash)
	case acct.Password == "":
		return len(auth) == 0
	default:
		want := mysql.CalcPassword(scramble, []byte(acct.Password))
		if plugin == mysql.AUTH_CACHING_SHA2_PASSWORD {
			want = mysql.CalcCachingSha2Password(scramble, acct.Password)
		}
		return len(want) == len(auth) && subtle.ConstantTimeCompare(want, auth) == 1
	}
}

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

// BackendCharset keeps the client's collation when the parser knows it, and
// falls back to utf8mb4_general_ci, which MySQL and MariaDB both have.
func BackendCharset(id uint8) uint8 {
	if c, err := charset.GetCollationByID(int(id)); err == nil && c.Name != "" {
		return id
	}
	return 45
}

// WriteError sends e as the answer to the handshake, best effort.
func WriteError(c *wire.Leg, e *Error) {
	_ = c.Conn.SetWriteDeadline(time.Now().Add(2 * time.Second))
	if c.WritePacket(wire.ErrPacket(e.Code, e.State, e.Msg)) == nil {
		_ = c.Flush()
	}
}
