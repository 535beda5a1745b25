package proxy

import (
	"net"
	"time"

	"github.com/leafproxy/leafproxy/proxy/login"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// What package proxy/login needs from the server, and what it hands back:
// the proxy's accounts (accounts implements login.Accounts), the settings
// its checks take (checker, setupTLS), and the client's hello, which
// becomes a session (newSession).

// clientHello is what the handshake learned about the client, and the
// account it logged in as.
type clientHello struct {
	login.Hello
	account Account
}

// loginThrottle is the failed-login budget of each client host (Server.throttle).
type loginThrottle = login.Throttle

// Creds are user's credentials (login.Accounts).
func (a *accounts) Creds(user string) (login.Creds, bool) {
	acct, ok := a.byName[user]
	return acct.creds(), ok
}

// HashOnly says some account has only a password hash (login.Accounts).
func (a *accounts) HashOnly() bool { return a.hashOnly }

func (a Account) creds() login.Creds {
	return login.Creds{Password: a.Password, PasswordHash: a.PasswordHash}
}

// hashOnly says the account is checked against PasswordHash (it has no
// password in clear).
func (a Account) hashOnly() bool { return a.creds().HashOnly() }

// checker is the server's credential check (login.Checker).
func (s *Server) checker() login.Checker {
	return login.Checker{Method: s.authMethod, Decoy: s.decoy, Throttle: s.throttle, Failures: &s.loginFailures, Log: s.log}
}

// authenticate checks user's auth data against the proxy's accounts
// (login.Checker.Authenticate) and returns the account it logged in as.
func (s *Server) authenticate(c *wire.Leg, user, plugin string, auth, scramble []byte, remote net.Addr) (Account, error) {
	users := s.users.Load()
	if err := s.checker().Authenticate(c, users, user, plugin, auth, scramble, remote); err != nil {
		return Account{}, err
	}
	return users.byName[user], nil
}

// greetClient writes greeting g (unless greeted), reads the client's
// handshake response (upgrading its leg to TLS when asked) and checks
// tls.required; the client is not yet authenticated.
func (s *Server) greetClient(c *wire.Leg, g *wire.Greeting, greeted bool) (*clientHello, error) {
	h := &clientHello{}
	if err := login.GreetClient(&h.Hello, c, g, greeted, s.clientTLS, s.cfg.TLS.Required); err != nil {
		return nil, err
	}
	return h, nil
}

// greetingFor builds the greeting a new client gets (login.Greeting): the
// backend's, with the proxy's session id id, a fresh scramble and the
// proxy's auth method.
func (s *Server) greetingFor(id uint32, hello *wire.Greeting) *wire.Greeting {
	return login.Greeting(id, hello, s.authMethod, s.versionOverride)
}

// setupTLS makes the client-facing TLS configuration and, when backend.tls
// is on, the backend leg's.
func (s *Server) setupTLS() error {
	tc, err := login.ClientTLS(s.cfg.TLS.Cert, s.cfg.TLS.Key)
	if err != nil {
		return err
	}
	s.clientTLS = tc
	if bt := s.cfg.Backend.TLS; bt.Enabled {
		tc, err := login.BackendConfig(login.BackendTLS{CA: bt.CA, ServerName: bt.ServerName,
			InsecureSkipVerify: bt.InsecureSkipVerify, Addr: s.cfg.Backend.Addr})
		if err != nil {
			return err
		}
		s.backendTLS = tc
	}
	return nil
}

// Defaults of the login throttle's limits (the configuration file's are the same values).
const (
	DefaultLoginFailures        = login.DefaultLoginFailures
	DefaultLoginFailureInterval = login.DefaultLoginFailureInterval
	DefaultLoginBlockMax        = login.DefaultLoginBlockMax
)

// LoginStats counts failed logins and what the throttle did about them.
type LoginStats struct {
	Failures     uint64 // logins refused for wrong credentials (1045)
	Refused      uint64 // connections and logins refused because their host was blocked (1129)
	Blocks       uint64 // times a host was blocked
	BlockedHosts int    // hosts blocked now
	Hosts        int    // hosts in the throttle's table (at most 16384)
	Dropped      uint64 // pending handshakes closed to make room for others (limits.max_handshakes, max_silent_handshakes)
	Handshakes   int    // handshakes under way now (limits.max_handshakes)
	Silent       int    // connections greeted that have sent nothing yet (limits.max_silent_handshakes)
}

// LoginStats reports the login throttle's counters (for metrics).
func (s *Server) LoginStats() LoginStats {
	st := LoginStats{Failures: s.loginFailures.Load(), Dropped: s.handshakesDropped.Load()}
	s.mu.Lock()
	st.Handshakes, st.Silent = s.pending.N(), s.silent.N()
	s.mu.Unlock()
	if t := s.throttle; t != nil {
		st.Refused, st.Blocks = t.Refused(), t.Blocks()
		st.BlockedHosts, st.Hosts = t.BlockedHosts(time.Now()), t.HostsTracked()
	}
	return st
}
