package service

import (
	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/proxy"
)

// ProxyConfig is the proxy's part of the configuration, in the proxy's own
// terms.
func ProxyConfig(c *config.Config) proxy.Config {
	b := c.Backend
	pc := proxy.Config{
		Listen: c.Listen,
		Backend: proxy.Backend{Addr: b.Addr, User: b.User, Password: b.Password, ConnectTimeout: b.ConnectTimeout.D(),
			TLS: proxy.BackendTLS{Enabled: b.TLS.Enabled, CA: b.TLS.CA, ServerName: b.TLS.ServerName, InsecureSkipVerify: b.TLS.InsecureSkipVerify}},
		Users:  Accounts(c.Users),
		Admins: c.Admins,
		TLS:    proxy.ServerTLS{Cert: c.TLS.Cert, Key: c.TLS.Key, Required: c.TLS.Required},
		Limits: proxy.Limits{MaxConnections: c.Limits.MaxConnections, IdleTimeout: c.Limits.IdleTimeout.D(),
			MaxHandshakes: c.Limits.MaxHandshakes, HandshakeTimeout: c.Limits.HandshakeTimeout.D(),
			MaxSilentHandshakes: c.Limits.MaxSilentHandshakes, CommandMemory: int64(c.Limits.CommandMemory),
			LoginFailures: c.Limits.LoginFailures, LoginFailureInterval: c.Limits.LoginFailureInterval.D(),
			LoginBlockMax: c.Limits.LoginBlockMax.D()},
		Shutdown:   proxy.Shutdown{Grace: c.Shutdown.Grace.D()},
		EventLoops: c.EventLoops,
	}
	return pc
}

// Accounts are the configuration's users as the proxy's accounts.
func Accounts(us []config.User) []proxy.Account {
	out := make([]proxy.Account, 0, len(us))
	for _, u := range us {
		// Validate has checked the hash's form.
		hash, _ := config.ParsePasswordHash(u.PasswordHash)
		out = append(out, proxy.Account{Name: u.Name, Password: u.Password, PasswordHash: hash,
			BackendUser: u.BackendUser, BackendPassword: u.BackendPassword, Admin: u.Admin})
	}
	return out
}
