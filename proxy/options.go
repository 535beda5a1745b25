package proxy

import "time"

// Config is what the proxy needs to run, in its own terms: the listener,
// the backend, the accounts clients log in with, TLS towards clients,
// limits and shutdown. The service builds it from the YAML configuration
// (service.ProxyConfig); the proxy knows nothing of the file. Zero limits
// take the defaults below.
type Config struct {
	// Listen is host:port, or a Unix socket path (containing '/').
	Listen  string
	Backend Backend
	// Users are the proxy's own accounts. None: backend-account mode,
	// where any account the backend accepts logs in (passthrough.go).
	Users []Account
	// Admins name the backend accounts (user names) that are admins in
	// backend-account mode; ignored while Users are configured, where
	// Account.Admin says it.
	Admins   []string
	TLS      ServerTLS
	Limits   Limits
	Shutdown Shutdown
	// EventLoops is how many runners serve the event loop that logged-in
	// sessions on plain sockets move onto (loop_linux.go): 0 one per CPU
	// the runtime uses (GOMAXPROCS), a negative number none (every session
	// on its own goroutine).
	EventLoops int
}

// Backend is the MySQL/MariaDB server sessions are relayed to.
type Backend struct {
	Addr           string // host:port, or a Unix socket path
	User, Password string
	ConnectTimeout time.Duration // 0: DefaultConnectTimeout
	TLS            BackendTLS
}

// BackendTLS is TLS on the backend leg.
type BackendTLS struct {
	Enabled            bool
	CA                 string // PEM file; empty: the system's roots
	ServerName         string // empty: the host of Backend.Addr
	InsecureSkipVerify bool
}

// Account is a proxy user. The backend session logs in as BackendUser
// (default: Backend.User, with Backend.Password). In backend-account mode a
// session's Account is made at login: Name is the backend account's user
// name, BackendUser/BackendPassword are backend.user's (the proxy's side
// connections for the session use them), and no password is held.
type Account struct {
	Name, Password string
	// PasswordHash is SHA1(SHA1(password)), the 20 bytes behind the
	// "*HEX" that SELECT PASSWORD('x') prints: an account with it and no
	// Password is checked with mysql_native_password only (clients that
	// begin with caching_sha2_password are switched).
	PasswordHash                 []byte
	BackendUser, BackendPassword string
	Admin                        bool // may KILL others' sessions and run the admin SQL

	backendAuth bool // the backend authenticated the session (backend-account mode)
}

// ServerTLS is TLS towards clients; without Cert and Key the proxy makes a
// self-signed certificate at start.
type ServerTLS struct {
	Cert, Key string
	Required  bool
}

// Limits protect the proxy; zero takes the default.
type Limits struct {
	MaxConnections int           // logged-in sessions; 0: no limit
	IdleTimeout    time.Duration // 0: never
	MaxHandshakes  int           // 0: DefaultMaxHandshakes
	// MaxSilentHandshakes bounds the connections greeted by the accept
	// loop that have not sent a byte yet (Linux; a socket and a small
	// record each, no goroutine): 0 DefaultMaxSilentHandshakes; at most
	// half the process's open-file limit.
	MaxSilentHandshakes int
	HandshakeTimeout    time.Duration // 0: DefaultHandshakeTimeout
	CommandMemory       int64         // 0: DefaultCommandMemory
	// LoginFailures is the failed logins a client host may make in a
	// burst before it is refused for a while (login.Throttle): 0
	// DefaultLoginFailures, negative no throttle.
	LoginFailures int
	// LoginFailureInterval: a host regains one failed login this often,
	// and its first block lasts this long (0: DefaultLoginFailureInterval).
	LoginFailureInterval time.Duration
	// LoginBlockMax bounds a block, which doubles with each failure right
	// after one (0: DefaultLoginBlockMax).
	LoginBlockMax time.Duration
}

// Shutdown bounds a graceful stop.
type Shutdown struct {
	Grace time.Duration // statements in flight get this long
}

// Defaults for zero Config fields (the configuration file's are the same values).
const (
	DefaultConnectTimeout      = 5 * time.Second
	DefaultMaxHandshakes       = 1024
	DefaultMaxSilentHandshakes = 16384
	DefaultHandshakeTimeout    = 5 * time.Second
	DefaultCommandMemory       = 512 << 20
)

// withDefaults fills zero limits.
func (c Config) withDefaults() Config {
	if c.Backend.ConnectTimeout <= 0 {
		c.Backend.ConnectTimeout = DefaultConnectTimeout
	}
	if c.Limits.MaxHandshakes <= 0 {
		c.Limits.MaxHandshakes = DefaultMaxHandshakes
	}
	if c.Limits.MaxSilentHandshakes <= 0 {
		c.Limits.MaxSilentHandshakes = DefaultMaxSilentHandshakes
	}
	if c.Limits.HandshakeTimeout <= 0 {
		c.Limits.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if c.Limits.CommandMemory <= 0 {
		c.Limits.CommandMemory = DefaultCommandMemory
	}
	if c.Limits.LoginFailures == 0 {
		c.Limits.LoginFailures = DefaultLoginFailures
	}
	if c.Limits.LoginFailureInterval <= 0 {
		c.Limits.LoginFailureInterval = DefaultLoginFailureInterval
	}
	if c.Limits.LoginBlockMax <= 0 {
		c.Limits.LoginBlockMax = DefaultLoginBlockMax
	}
	return c
}
