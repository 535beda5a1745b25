package service

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/allocator"
	"github.com/leafproxy/leafproxy/allocator/snowflake"
	"github.com/leafproxy/leafproxy/config"
)

// Check is the outcome of one dependency's probe.
type Check struct {
	OK        bool    `json:"ok"`
	Addr      string  `json:"addr,omitempty"`
	Error     string  `json:"error,omitempty"`
	LatencyMS float64 `json:"latency_ms"`
}

// Health is what /healthz answers: OK when the backend and the allocation
// store accept a login (and, when a tag uses snowflake, the worker lease is
// held), else the first reason it is not.
type Health struct {
	OK        bool      `json:"ok"`
	Status    string    `json:"status"` // ok or unavailable
	Reason    string    `json:"reason,omitempty"`
	CheckedAt time.Time `json:"checked_at"`
	Backend   Check     `json:"backend"`
	Store     Check     `json:"store"`
	Snowflake *Check    `json:"snowflake,omitempty"`
}

// Probe bounds and caching: one probe per healthTTL however often /healthz
// and the status page ask, each dependency given at most probeTimeout.
const (
	healthTTL    = time.Second
	probeTimeout = 2 * time.Second
)

// health probes the backend and the store with fresh logins (no pooled
// connection hides a changed password or a restarted server), caches the
// result for healthTTL and lets concurrent callers share one probe.
type health struct {
	cfg     *config.Config
	seq     *allocator.Sequences
	backend *sql.DB
	stores  []*sql.DB // one per node of the store (config.StoreDSNs); the one in use is probed
	addrs   []string  // their addresses
	timeout time.Duration
	ttl     time.Duration
	probes  atomic.Int64 // probes run, for tests
	// reportBackend hears each probe's verdict on the backend (nil: it
	// answered), for the proxy's backend up/down log (set once, before
	// serving).
	reportBackend func(error)

	mu       sync.Mutex
	last     Health
	lastAt   time.Time     // when last's probe ended: the cache runs from here
	inflight chan struct{} // closed when the running probe ends
}

var tlsRegister sync.Mutex
var tlsNames atomic.Int64

func newHealth(cfg *config.Config, seq *allocator.Sequences) (*health, error) {
	h := &health{cfg: cfg, seq: seq, timeout: probeTimeout, ttl: healthTTL}
	if t := cfg.Backend.ConnectTimeout.D(); t > 0 && t < h.timeout {
		h.timeout = t
	}
	mc := mysql.NewConfig()
	mc.Net, mc.Addr, mc.User, mc.Passwd = "tcp", cfg.Backend.Addr, cfg.Backend.User, cfg.Backend.Password
	mc.Timeout, mc.ReadTimeout, mc.WriteTimeout = h.timeout, h.timeout, h.timeout
	if cfg.Backend.TLS.Enabled {
		tc, err := backendTLS(cfg)
		if err != nil {
			return nil, err
		}
		// The driver looks TLS configs up by name.
		name := fmt.Sprintf("leafproxy-health-%d", tlsNames.Add(1))
		tlsRegister.Lock()
		err = mysql.RegisterTLSConfig(name, tc)
		tlsRegister.Unlock()
		if err != nil {
			return nil, fmt.Errorf("backend.tls: %w", err)
		}
		mc.TLSConfig = name
	}
	var err error
	if h.backend, err = openProbeDB(mc.FormatDSN()); err != nil {
		return nil, fmt.Errorf("backend probe: %w", err)
	}
	for _, dsn := range cfg.StoreDSNs() {
		smc, err := mysql.ParseDSN(dsn)
		if err != nil {
			h.close()
			return nil, fmt.Errorf("sequences.store: %w", err)
		}
		smc.Timeout, smc.ReadTimeout, smc.WriteTimeout = h.timeout, h.timeout, h.timeout
		db, err := openProbeDB(smc.FormatDSN())
		if err != nil {
			h.close()
			return nil, fmt.Errorf("store probe: %w", err)
		}
		h.stores, h.addrs = append(h.stores, db), append(h.addrs, smc.Addr)
	}
	return h, nil
}

// storeInUse is the index of the store's node the allocator uses (0 while
// it has none yet, or with one node).
func (h *health) storeInUse() int {
	if h.seq == nil {
		return 0
	}
	if p := h.seq.StorePool(); p != nil {
		if i, _ := p.InUse(); i < len(h.stores) {
			return i
		}
	}
	return 0
}

func openProbeDB(dsn string) (*sql.DB, error) {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxIdleConns(0) // every probe logs in afresh
	db.SetMaxOpenConns(2)
	return db, nil
}

// backendTLS mirrors the proxy's TLS settings towards the backend.
func backendTLS(cfg *config.Config) (*tls.Config, error) {
	bt := cfg.Backend.TLS
	tc := &tls.Config{ServerName: bt.ServerName, InsecureSkipVerify: bt.InsecureSkipVerify, MinVersion: tls.VersionTLS12}
	if tc.ServerName == "" {
		if host, _, err := net.SplitHostPort(cfg.Backend.Addr); err == nil {
			tc.ServerName = host
		}
	}
	if bt.CA != "" {
		pem, err := os.ReadFile(bt.CA)
		if err != nil {
			return nil, fmt.Errorf("backend.tls.ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("backend.tls.ca: no certificate in %s", bt.CA)
		}
		tc.RootCAs = pool
	}
	return tc, nil
}

func (h *health) close() {
	h.backend.Close()
	for _, db := range h.stores {
		db.Close()
	}
}

// get returns a result at most ttl old, probing when it is older; callers
// arriving during a probe wait for it instead of starting their own.
func (h *health) get(ctx context.Context) Health {
	for {
		h.mu.Lock()
		if !h.lastAt.IsZero() && time.Since(h.lastAt) < h.ttl {
			r := h.last
			h.mu.Unlock()
			return r
		}
		if wait := h.inflight; wait != nil {
			h.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return h.cached(ctx.Err())
			}
		}
		done := make(chan struct{})
		h.inflight = done
		h.mu.Unlock()

		r := h.probe()
		h.mu.Lock()
		h.last, h.lastAt = r, time.Now()
		h.inflight = nil
		h.mu.Unlock()
		close(done)
		return r
	}
}

// cached is the last result, or a failure when there is none yet.
func (h *health) cached(err error) Health {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.lastAt.IsZero() {
		return h.last
	}
	return Health{Status: "unavailable", Reason: "health probe did not finish: " + err.Error(), CheckedAt: time.Now()}
}

func (h *health) probe() Health {
	h.probes.Add(1)
	r := Health{CheckedAt: time.Now()}
	var wg sync.WaitGroup
	wg.Go(func() {
		var raw error
		r.Backend = h.check(h.cfg.Backend.Addr, func(ctx context.Context) error {
			raw = h.backend.PingContext(ctx)
			return explainBackendError(h.cfg, "log in", raw)
		})
		if h.reportBackend != nil {
			h.reportBackend(unreachable(raw))
		}
	})
	wg.Go(func() {
		_, _, db := storeIdentity(h.cfg)
		i := h.storeInUse()
		r.Store = h.check(h.addrs[i]+"/"+db, func(ctx context.Context) error {
			var one int
			err := h.stores[i].QueryRowContext(ctx, "SELECT 1 FROM leaf_alloc LIMIT 1").Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
				err = nil // no tags yet: reachable all the same
			}
			return explainStoreError(h.cfg, "read leaf_alloc", err)
		})
	})
	wg.Wait()
	if h.seq == nil {
		// still starting
	} else if pending, err := h.seq.SnowflakePending(); !pending {
		// Every generator of a layout that holds a worker id (one per
		// layout in use; those of tags learned from the store start on
		// first use).
		gens := h.seq.SnowflakeGenerators()
		for _, g := range gens {
			if g.Generator == nil {
				continue
			}
			c := Check{OK: true}
			which := ""
			if len(gens) > 1 {
				which = " of layout " + g.Layout.String()
			}
			switch fenced, lost := g.Generator.Health(); {
			case lost:
				c = Check{Error: "the snowflake worker lease" + which + " went to another process: no snowflake IDs until leafproxy restarts"}
			case fenced:
				c = Check{Error: "the snowflake worker lease" + which + " was not renewed in time (is the store reachable?): snowflake IDs wait until it is"}
			}
			if r.Snowflake == nil || r.Snowflake.OK {
				r.Snowflake = &c
			}
		}
	} else {
		// No worker id yet (retried), or the store's layout differs (for
		// good): snowflake tags answer errors either way.
		msg := "no snowflake worker id held yet: snowflake IDs wait until one is"
		switch {
		case errors.Is(err, snowflake.ErrLayoutMismatch):
			msg = err.Error()
		case err != nil:
			msg += ": " + err.Error()
		}
		r.Snowflake = &Check{Error: msg}
	}
	switch {
	case !r.Backend.OK:
		r.Reason = "backend: " + r.Backend.Error
	case !r.Store.OK:
		r.Reason = "store: " + r.Store.Error
	case r.Snowflake != nil && !r.Snowflake.OK:
		r.Reason = "snowflake: " + r.Snowflake.Error
	default:
		r.OK = true
	}
	r.Status = "unavailable"
	if r.OK {
		r.Status = "ok"
	}
	return r
}

// unreachable is err when it says the backend did not answer, nil when it
// answered (a refused login is an answer).
func unreachable(err error) error {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return nil
	}
	return err
}

func (h *health) check(addr string, f func(context.Context) error) Check {
	ctx, cancel := context.WithTimeout(context.Background(), h.timeout)
	defer cancel()
	start := time.Now()
	err := f(ctx)
	c := Check{OK: err == nil, Addr: addr, LatencyMS: float64(time.Since(start).Microseconds()) / 1000}
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("no answer within %v: %w", h.timeout, err)
		}
		c.Error = err.Error()
	}
	return c
}
