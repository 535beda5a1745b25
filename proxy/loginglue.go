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

// greetingFor builds the greeting a new client gets (login.Greeting): the
// backend's, with the proxy's session id id, a fresh scramble and the
// proxy's auth method.
func (s *Server) greetingFor(id uint32, hello *wire.Greeting) *wire.Greeting {
	return login.Greeting(id, hello, s.authMethod, s.versionOverride)
}

// setupTLS makes the client-facing TLS configuration and, when backend.tls
// is on, the backend leg's (login.Configs).
func (s *Server) setupTLS() (err error) {
	var bt *login.BackendTLS
	if b := s.cfg.Backend.TLS; b.Enabled {
		bt = &login.BackendTLS{CA: b.CA, ServerName: b.ServerName, InsecureSkipVerify: b.InsecureSkipVerify, Addr: s.cfg.Backend.Addr}
	}
	s.clientTLS, s.backendTLS, err = login.Configs(s.cfg.TLS.Cert, s.cfg.TLS.Key, bt)
	return err
}

// Defaults of the login throttle's limits (the configuration file's are the same values).
const (
	DefaultLoginFailures        = login.DefaultLoginFailures
	DefaultLoginFailureInterval = login.DefaultLoginFailureInterval
	DefaultLoginBlockMax        = login.DefaultLoginBlockMax
)

// LoginStats counts failed logins and what the throttle did about them (login.Stats).
type LoginStats = login.Stats

// LoginStats reports the login throttle's counters (for metrics).
func (s *Server) LoginStats() LoginStats {
	s.mu.Lock()
	handshakes, silent := s.pending.N(), s.silent.N()
	s.mu.Unlock()
	return s.throttle.Stats(s.loginFailures.Load(), s.handshakesDropped.Load(), handshakes, silent, time.Now())
}
