package service

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/allocator"
	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/proxy"
)

// Finding is one thing `leafproxy check` (and serve, before it starts
// anything) found: the configuration key to fix and what is wrong.
// Unreachable findings (a backend or store that does not answer) may pass
// by themselves: serve starts anyway and warns; the others are the
// configuration's fault (a refused login, a tag that would not exist), and
// serve refuses to start on them.
type Finding struct {
	Key         string
	Msg         string
	Unreachable bool
	// Table: the finding is about a table on the backend (an exact rule
	// over a table whose key it cannot fill): check fails on it, serve
	// warns and starts (the table may be changed while it runs).
	Table bool
}

func (f Finding) String() string { return f.Key + ": " + f.Msg }

// CheckConfig tries what the configuration says against the servers it names,
// changing nothing: the backend login with backend.user, each distinct
// users[].backend_user login, the allocation store's login (sequences.store)
// and that every table rule's tag is declared in sequences.tags or exists
// in leaf_alloc (unless auto_create is on). Each probe is bounded by
// backend.connect_timeout. cfg must be valid (config.Validate).
func CheckConfig(ctx context.Context, cfg *config.Config) []Finding {
	f := &findings{}
	timeout := cfg.Backend.ConnectTimeout.D()
	// The files the proxy reads at start (a failure there would come
	// after start-up work, with exit 1).
	if cfg.TLS.Cert != "" {
		if _, err := tls.LoadX509KeyPair(cfg.TLS.Cert, cfg.TLS.Key); err != nil {
			f.out = append(f.out, Finding{Key: "tls.cert", Msg: fmt.Sprintf("cannot load the certificate and key (tls.cert, tls.key): %v", err)})
		}
	}
	h, err := newHealth(cfg, nil)
	if err != nil {
		return append(f.out, Finding{Key: "backend.tls", Msg: err.Error()})
	}
	defer h.close()
	if t := timeout; t > h.timeout {
		h.timeout = t
	}
	pctx, cancel := context.WithTimeout(ctx, h.timeout)
	backendErr := h.backend.PingContext(pctx)
	cancel()
	f.add(explainBackendError(cfg, "log in to the backend", backendErr))
	f.checkUsers(ctx, cfg, h.timeout, backendErr)

	// The store: its own login when sequences.store names one; the
	// default store is the backend's account, tried above.
	storeUp := backendErr == nil
	if cfg.Sequences.Store.Set() {
		storeUp = f.checkStoreLogins(ctx, cfg, h.timeout)
	}
	if storeUp {
		f.checkTags(ctx, cfg, h.timeout)
	}
	if backendErr == nil && len(cfg.Tables) > 0 {
		f.checkRules(ctx, cfg)
	}
	return f.out
}

// findings collects CheckConfig's findings, in the order they are made.
type findings struct{ out []Finding }

// add records err (nil: nothing): under its key for a ConfigError, else
// under backend; Unreachable when the server could not be reached.
func (f *findings) add(err error) {
	if err == nil {
		return
	}
	var ce *ConfigError
	if errors.As(err, &ce) {
		f.out = append(f.out, Finding{Key: ce.Key, Msg: trimKey(ce), Unreachable: isNetError(err)})
		return
	}
	f.out = append(f.out, Finding{Key: "backend", Msg: err.Error(), Unreachable: isNetError(err)})
}

// checkUsers tries each distinct users[].backend_user login other than the
// backend's own account (none when the backend could not be reached:
// backendErr), each bounded by timeout.
func (f *findings) checkUsers(ctx context.Context, cfg *config.Config, timeout time.Duration, backendErr error) {
	tried := map[string]bool{cfg.Backend.User + "\x00" + cfg.Backend.Password: true}
	for i, u := range cfg.Users {
		if u.BackendUser == "" || tried[u.BackendUser+"\x00"+u.BackendPassword] || backendErr != nil && isNetError(backendErr) {
			continue
		}
		tried[u.BackendUser+"\x00"+u.BackendPassword] = true
		if err := loginAs(ctx, cfg, timeout, u.BackendUser, u.BackendPassword); err != nil {
			var me *mysql.MySQLError
			if errors.As(err, &me) && (me.Number == erAccessDenied || me.Number == erAccessDeniedNoPasswd) {
				f.out = append(f.out, Finding{Key: fmt.Sprintf("users[%d].backend_password", i),
					Msg: fmt.Sprintf("the backend %s refused login as %q (fix users[%d].backend_user / backend_password): %v", cfg.Backend.Addr, u.BackendUser, i, me)})
			} else {
				f.out = append(f.out, Finding{Key: fmt.Sprintf("users[%d].backend_user", i), Msg: err.Error(), Unreachable: isNetError(err)})
			}
		}
	}
}

// checkStoreLogins logs in to each node of sequences.store and reports
// whether one answered. One that does not answer is a warning while
// another does (the proxy fails over); every one refusing or unreachable
// is the store's finding.
func (f *findings) checkStoreLogins(ctx context.Context, cfg *config.Config, timeout time.Duration) (storeUp bool) {
	var errs []error
	for _, dsn := range cfg.Sequences.Store {
		err := storeLogin(ctx, dsn, timeout)
		errs = append(errs, err)
		storeUp = storeUp || err == nil
	}
	for i, err := range errs {
		if err == nil {
			continue
		}
		if len(errs) > 1 {
			err = fmt.Errorf("node %d of %d: %w", i+1, len(errs), err)
		}
		f.add(explainStoreError(cfg, "log in to the allocation store", err))
	}
	return storeUp
}

// checkTags finds the table rules' tags neither declared in
// sequences.tags nor in leaf_alloc (allocator.CheckTags), bounded by
// timeout.
func (f *findings) checkTags(ctx context.Context, cfg *config.Config, timeout time.Duration) {
	tctx, cancel := context.WithTimeout(ctx, timeout)
	var err error
	if ac, aerr := AllocatorConfig(cfg); aerr != nil {
		err = aerr
	} else {
		err = allocator.CheckTags(tctx, &ac)
	}
	cancel()
	var ut *allocator.UndeclaredTagError
	switch {
	case errors.As(err, &ut):
		for _, u := range ut.Tags {
			f.out = append(f.out, Finding{Key: u.Key(), Msg: u.Problem()})
		}
	case err != nil:
		f.add(explainStoreError(cfg, "read the tags in leaf_alloc", err))
	}
}

// checkRules finds the exact table rules whose table's key the proxy
// cannot fill (ReadRuleCoverage): Table findings.
func (f *findings) checkRules(ctx context.Context, cfg *config.Config) {
	cov, err := ReadRuleCoverage(ctx, cfg)
	if err != nil {
		f.add(explainBackendError(cfg, "read the tables the rules match", err))
	}
	for _, c := range cov {
		if c.Problem != "" {
			f.out = append(f.out, Finding{Key: fmt.Sprintf("tables[%d].table", c.Index), Table: true,
				Msg: fmt.Sprintf("%s (an exact rule fills its table whatever it has; point it at the table's integer primary key without a default, or remove it)", c.Problem)})
		}
	}
}

// trimKey is a ConfigError's message without its leading key.
func trimKey(ce *ConfigError) string {
	s := ce.Error()
	if len(s) > len(ce.Key)+2 && s[:len(ce.Key)+2] == ce.Key+": " {
		return s[len(ce.Key)+2:]
	}
	return s
}

func loginAs(ctx context.Context, cfg *config.Config, timeout time.Duration, user, password string) error {
	mc := mysql.NewConfig()
	mc.Net, mc.Addr, mc.User, mc.Passwd = config.Network(cfg.Backend.Addr), cfg.Backend.Addr, user, password
	return ping(ctx, mc, timeout)
}

// storeLogin logs in to the store's server without naming its database,
// which init and serve create when missing.
func storeLogin(ctx context.Context, dsn string, timeout time.Duration) error {
	mc, err := mysql.ParseDSN(dsn)
	if err != nil {
		return err
	}
	mc.DBName = ""
	return ping(ctx, mc, timeout)
}

// ping logs in as mc says, its dial, read and write timeouts and the
// whole login bounded by timeout.
func ping(ctx context.Context, mc *mysql.Config, timeout time.Duration) error {
	mc.Timeout, mc.ReadTimeout, mc.WriteTimeout = timeout, timeout, timeout
	db, err := sql.Open("mysql", mc.FormatDSN())
	if err != nil {
		return err
	}
	defer db.Close()
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return db.PingContext(pctx)
}

// Listen binds the client listener (listen: host:port or a Unix socket
// path) and, when metrics.listen and id_api.listen are set, the metrics
// endpoint's and the ID API's, before any start-up work: an address that
// cannot be served fails at once, naming its key.
func Listen(cfg *config.Config) (Listeners, error) {
	var ls Listeners
	var err error
	ls.Client, err = proxy.Listen(cfg.Listen)
	if err != nil {
		return Listeners{}, &ConfigError{Key: "listen", Msg: fmt.Sprintf("cannot listen on %s", cfg.Listen), Err: err,
			Fix: "free the address or choose another"}
	}
	if cfg.Metrics.Listen != "" {
		if ls.Metrics, err = net.Listen("tcp", cfg.Metrics.Listen); err != nil {
			ls.Close()
			return Listeners{}, &ConfigError{Key: "metrics.listen", Msg: fmt.Sprintf("cannot serve metrics on %s", cfg.Metrics.Listen), Err: err,
				Fix: "free the address, choose another, or leave metrics.listen empty"}
		}
	}
	if cfg.IDAPI.Listen != "" {
		if ls.IDAPI, err = net.Listen("tcp", cfg.IDAPI.Listen); err != nil {
			ls.Close()
			return Listeners{}, idapiListenError(cfg, err)
		}
	}
	return ls, nil
}
