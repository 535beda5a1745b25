// Package service assembles leafproxy from its configuration: the
// allocation store and generators (allocator), the statement engine
// (engine, over rewriter plans) and the protocol server (proxy). The binary
// and the end-to-end tests both start the proxy through it, so tests run
// the real wiring.
package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/leafproxy/leafproxy/admin"
	"github.com/leafproxy/leafproxy/allocator"
	"github.com/leafproxy/leafproxy/allocator/runway"
	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/engine"
	"github.com/leafproxy/leafproxy/idapi"
	"github.com/leafproxy/leafproxy/proxy"
	"github.com/leafproxy/leafproxy/rewriter"
)

// Option adjusts New (tests and benchmarks).
type Option func(*options)

type options struct {
	proxy   []proxy.Option
	alloc   []allocator.Option
	runway  runway.Options
	version string
	stats   bool // count the statement path even without metrics.listen
}

// WithStats keeps the statement path's counters on without metrics.listen
// (tests reading the registry directly; benchmarks comparing their cost).
func WithStats() Option { return func(o *options) { o.stats = true } }

// WithRunwayOptions tunes the runway monitor (tests: a short interval, an
// injected clock). The logger is the service's unless set.
func WithRunwayOptions(o runway.Options) Option {
	return func(opts *options) { opts.runway = o }
}

// WithVersion sets the version the status page and /status.json show.
func WithVersion(v string) Option {
	return func(o *options) { o.version = v }
}

// WithProxyOptions passes options to proxy.NewServer.
func WithProxyOptions(opts ...proxy.Option) Option {
	return func(o *options) { o.proxy = append(o.proxy, opts...) }
}

// WithAllocatorOptions passes options to allocator.Open.
func WithAllocatorOptions(opts ...allocator.Option) Option {
	return func(o *options) { o.alloc = append(o.alloc, opts...) }
}

// Service is a configured proxy with its generators.
type Service struct {
	Proxy     *proxy.Server
	Sequences *allocator.Sequences
	Engine    *engine.Engine
	// Runway recomputes each tag's runway in the background while the
	// service serves.
	Runway *runway.Monitor
	// IDAPI is the HTTP ID API (nil unless id_api.listen is set).
	IDAPI    *idapi.API
	log      *slog.Logger
	cfg      *config.Config
	registry *prometheus.Registry
	health   *health
	version  string
	started  time.Time

	// live is the configuration in force: cfg as changed by Reload;
	// liveAlloc is its allocator part, which admin and the runway read.
	live      *atomic.Pointer[config.Config]
	liveAlloc *atomic.Pointer[allocator.Config]

	reloads             *reloadState // what configuration reloads did (metrics)
	mu                  sync.Mutex
	metricsAddr         net.Addr
	idapiAddr           net.Addr
	lowerCaseTableNames int            // the backend's lower_case_table_names the rules were built with
	coverage            []RuleCoverage // what the rules covered when last read (status)

	life lifecycle // Serve calls in progress and Close

	views *viewWatch // the rules of views over rule tables (views.go)
}

// New prepares the allocation store (creating its database, leaf_alloc,
// leaf_worker, leaf_snowflake_layout and configured tags when missing, as
// `leafproxy init` does; a
// failure there is logged, not fatal, since the account may lack CREATE and
// the tables may exist), starts the generators and builds the proxy server.
// A backend that refuses the configured account is logged naming the key to
// fix; errors returned name it too.
//
// A store that is down or stalled does not stop the start: relay needs no
// store. Each store call at start is bounded by backend.connect_timeout;
// what could not be done is retried in the background (allocator.Open),
// and snowflake tags answer a clear error until a worker id is held. A
// snowflake layout other than the one the store records fails New (an
// error wrapping snowflake.ErrLayoutMismatch; the binary exits 2); found
// only in the background, it fences snowflake tags until a restart.
func New(ctx context.Context, cfg *config.Config, log *slog.Logger, opts ...Option) (*Service, error) {
	o := options{version: "dev"}
	for _, f := range opts {
		f(&o)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	RouteDriverLog(log)
	started := time.Now()
	h, err := newHealth(cfg, nil)
	if err != nil {
		return nil, err
	}
	// Problems found before the generators start are logged once the
	// proxy is sure to run; when start-up fails, its error says it all
	// unless a problem had another cause.
	warnings, backendErr := startWarnings(ctx, cfg, h)
	// Table names compare as the backend compares them (a server global,
	// read once here); a backend not usable now gets Linux's default.
	names := backendNames{lowerCaseTableNames: 0, err: backendErr}
	if backendErr == nil {
		names = readBackendNames(ctx, h.backend, cfg, 0)
	}
	rs, err := names.rules(cfg)
	if err != nil {
		h.close()
		return nil, fmt.Errorf("tables: %w", err)
	}
	ac, err := AllocatorConfig(cfg)
	if err != nil {
		h.close()
		return nil, err
	}
	seq, err := allocator.Open(ctx, ac, log, append([]allocator.Option{allocator.WithInitStore()}, o.alloc...)...)
	if err != nil {
		h.close()
		err = explainStoreError(cfg, "start the ID generators", err)
		for _, w := range warnings {
			if !sameCause(w.err, err) {
				log.Warn(w.msg, "err", w.err)
			}
		}
		return nil, err
	}
	for _, w := range warnings {
		log.Warn(w.msg, "err", w.err)
	}
	names.log(log, cfg)
	h.seq = seq
	eng := engine.New(seq, rs, engine.WithPlanLimits(cfg.Limits.MaxPlanDepth, int64(cfg.Limits.PlanMemory)),
		engine.WithPreparedLimits(int64(cfg.Limits.PreparedMemory), int64(cfg.Limits.SessionPreparedMemory)))
	live := &atomic.Pointer[config.Config]{}
	live.Store(cfg)
	liveAlloc := &atomic.Pointer[allocator.Config]{}
	liveAlloc.Store(&ac)
	adm := admin.New(eng, seq, liveAlloc.Load)
	mon := newRunway(seq, liveAlloc.Load, o.runway, log)
	adm.SetRunway(mon.Get)
	views := newViewWatch(h.backend, eng, log)
	hookEngine(eng, seq, mon, views, log)
	popts := []proxy.Option{proxy.WithLogger(log), proxy.WithInterceptor(adm), proxy.WithAuthMethod(cfg.AuthMethod)}
	if cfg.Metrics.Listen == "" && !o.stats {
		// Nobody scrapes: the sessions count nothing.
		popts = append(popts, proxy.WithoutStats())
		eng.DisableStats()
	}
	srv, err := proxy.NewServer(ProxyConfig(cfg), append(popts, o.proxy...)...)
	if err != nil {
		seq.Close()
		h.close()
		return nil, err
	}
	adm.SetSessions(srv.SessionList)
	h.reportBackend = srv.ReportBackend
	if backendErr != nil {
		srv.ReportBackend(backendErr)
	}
	reg := prometheus.NewRegistry()
	// The tags the configuration in force names: those a reload added
	// too.
	configured := func() map[string]string { return configuredTags(live.Load()) }
	reloads := newReloadState(started)
	reg.MustRegister(newCollector(seq, srv, configured, mon))
	reg.MustRegister(newTrafficCollector(srv, eng, h.get, reloads, o.version))
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	var api *idapi.API
	if cfg.IDAPI.Listen != "" {
		// The same allocators as SQL's NEXTVAL: SQL and HTTP callers
		// never get the same ID.
		api = idapi.New(seq, IDAPITokens(cfg), idapi.Options{MaxCount: rewriter.MaxBlock, Logger: log.With("component", "id_api"), Limits: IDAPILimits(cfg),
			LeafErrors: cfg.IDAPI.LeafErrors, LeafDecodeTag: cfg.IDAPI.LeafDecodeTag})
		reg.MustRegister(api.Collectors()...)
	}
	svc := &Service{IDAPI: api, Proxy: srv, Sequences: seq, Engine: eng, Runway: mon, log: log, cfg: cfg, registry: reg,
		health: h, version: o.version, started: started, live: live, liveAlloc: liveAlloc, lowerCaseTableNames: names.lowerCaseTableNames, coverage: names.coverage, reloads: reloads}
	svc.views = views
	if backendErr == nil {
		views.refresh(ctx)
	}
	svc.life.init()
	adm.SetTables(svc.tableRows)
	return svc, nil
}

// startWarning is a problem found before the generators start: logged
// once the proxy is sure to run.
type startWarning struct {
	msg string
	err error
}

// startWarnings probes the backend account (bounded by h.timeout) and
// creates a custom store's database (its tables and tags are prepared by
// allocator.Open (WithInitStore), bounded and retried): what failed, and
// the backend's error explained, nil when the account works.
func startWarnings(ctx context.Context, cfg *config.Config, h *health) (warnings []startWarning, backendErr error) {
	probeCtx, cancel := context.WithTimeout(ctx, h.timeout)
	backendErr = explainBackendError(cfg, "check the backend account at start-up", h.backend.PingContext(probeCtx))
	cancel()
	if backendErr != nil {
		warnings = append(warnings, startWarning{"backend not usable; sessions fail until it is", backendErr})
	}
	if cfg.Sequences.Store.Set() {
		dbCtx, cancel := context.WithTimeout(ctx, cfg.Backend.ConnectTimeout.D())
		err := createStoreDatabase(dbCtx, cfg.Sequences.Store)
		cancel()
		if err != nil {
			warnings = append(warnings, startWarning{"could not create the allocation store's database; NEXTVAL and key filling fail until it exists (leafproxy init)",
				explainStoreError(cfg, "create the allocation store's database", err)})
		}
	}
	return warnings, backendErr
}

// newRunway builds the runway monitor over seq with ro, by default
// logging to log's runway component and handing the key columns' limits
// to seq.
func newRunway(seq *allocator.Sequences, cfg func() *allocator.Config, ro runway.Options, log *slog.Logger) *runway.Monitor {
	if ro.Logger == nil {
		ro.Logger = log.With("component", "runway")
	}
	if ro.Limits == nil {
		ro.Limits = func(cols map[string]runway.Column) { seq.SetKeyLimits(segmentLimits(cols)) }
	}
	return runway.New(seq, cfg, ro)
}

// hookEngine tells the runway and the views of DDL run through the proxy,
// and restarts a per_table tag whose table was dropped or truncated.
func hookEngine(eng *engine.Engine, seq *allocator.Sequences, mon *runway.Monitor, views *viewWatch, log *slog.Logger) {
	eng.OnDDL(func() {
		mon.Invalidate() // a key column widened through the proxy is seen at once
		views.refresh(context.Background())
	})
	eng.OnTableReset(func(ctx context.Context, tag string) {
		// A per_table tag's table was dropped or truncated: the tag
		// starts again above its largest key (README, Table rules).
		if _, err := seq.RestartPerTable(ctx, tag); err != nil {
			log.Warn("could not restart a per_table tag after its table was dropped or truncated; it goes on from where it was", "tag", tag, "err", err)
		}
	})
}

// sameCause reports whether two errors come from the same MySQL error
// number (one login failure logged once, not twice).
func sameCause(a, b error) bool {
	var ma, mb *mysql.MySQLError
	if errors.As(a, &ma) && errors.As(b, &mb) {
		return ma.Number == mb.Number
	}
	var ca, cb *ConfigError
	return errors.As(a, &ca) && errors.As(b, &cb) && ca.Key == cb.Key
}

// Health probes (or returns the cached result, at most a second old) the
// backend and the allocation store, as /healthz does.
func (s *Service) Health(ctx context.Context) Health { return s.health.get(ctx) }

// Registry is the service's own Prometheus registry (served on
// metrics.listen when that is set).
func (s *Service) Registry() *prometheus.Registry { return s.registry }

// MetricsAddr is the address /metrics (and the status page) is served on: nil while not serving
// or when metrics.listen is empty.
func (s *Service) MetricsAddr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.metricsAddr
}

// configuredTags maps every tag the configuration names to its generator.
func configuredTags(cfg *config.Config) map[string]string {
	out := map[string]string{}
	for _, t := range cfg.Tables {
		out[t.Tag] = "segment"
	}
	for name, t := range cfg.Sequences.Tags {
		g := t.Generator
		if g == "" {
			g = "segment"
		}
		out[name] = g
	}
	return out
}
