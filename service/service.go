// Package service assembles leafproxy from its configuration: the
// allocation store and generators (allocator), the statement engine
// (engine, over rewriter plans) and the protocol server (proxy). The binary
// and the end-to-end tests both start the proxy through it, so tests run
// the real wiring.
package service

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/leafproxy/leafproxy/allocator"
	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/engine"
	"github.com/leafproxy/leafproxy/proxy"
	"github.com/leafproxy/leafproxy/rewriter"
)

// Option adjusts New (tests and benchmarks).
type Option func(*options)

type options struct {
	proxy []proxy.Option
	alloc []allocator.Option
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
	log       *slog.Logger
	cfg       *config.Config
	registry  *prometheus.Registry

	mu          sync.Mutex
	metricsAddr net.Addr
}

// New prepares the allocation store (creating leaf_alloc, leaf_worker and
// configured tags when missing, as `leafproxy init` does; a failure there is
// logged, not fatal, since the account may lack CREATE and the tables may
// exist), starts the generators and builds the proxy server.
func New(ctx context.Context, cfg *config.Config, log *slog.Logger, opts ...Option) (*Service, error) {
	var o options
	for _, f := range opts {
		f(&o)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	initCtx, cancel := context.WithTimeout(ctx, cfg.Backend.ConnectTimeout.D()+10*time.Second)
	err := allocator.InitStore(initCtx, cfg, nil)
	cancel()
	if err != nil {
		log.Warn("could not prepare the allocation store; NEXTVAL and key filling fail until it is reachable and initialised (leafproxy init)", "err", err)
	}
	rules := make([]rewriter.Rule, 0, len(cfg.Tables))
	for _, t := range cfg.Tables {
		rules = append(rules, rewriter.Rule{Table: t.Table, Column: t.Column, Tag: t.Tag})
	}
	rs, err := rewriter.NewRules(rules)
	if err != nil {
		return nil, fmt.Errorf("tables: %w", err)
	}
	seq, err := allocator.Open(ctx, cfg, log, o.alloc...)
	if err != nil {
		return nil, err
	}
	eng := engine.New(seq, rs)
	srv, err := proxy.NewServer(cfg, append([]proxy.Option{proxy.WithLogger(log), proxy.WithInterceptor(eng), proxy.WithAuthMethod(cfg.AuthMethod)}, o.proxy...)...)
	if err != nil {
		seq.Close()
		return nil, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(seq, srv))
	return &Service{Proxy: srv, Sequences: seq, Engine: eng, log: log, cfg: cfg, registry: reg}, nil
}

// Registry is the service's own Prometheus registry (served on
// metrics.listen when that is set).
func (s *Service) Registry() *prometheus.Registry { return s.registry }

// MetricsAddr is the address /metrics is served on: nil while not serving
// or when metrics.listen is empty.
func (s *Service) MetricsAddr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.metricsAddr
}

// startMetrics starts the endpoint when metrics.listen is set; the returned
// stop (never nil) shuts it down.
func (s *Service) startMetrics() (func(), error) {
	if s.cfg.Metrics.Listen == "" {
		return func() {}, nil
	}
	addr, stop, err := startMetrics(s.cfg.Metrics.Listen, s.registry, s.log)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.metricsAddr = addr
	s.mu.Unlock()
	return func() {
		stop()
		s.mu.Lock()
		s.metricsAddr = nil
		s.mu.Unlock()
	}, nil
}

// Serve runs the proxy on l until ctx ends, then shuts down gracefully and
// releases the generators.
// With metrics.listen set, /metrics is served alongside and stopped with
// the proxy; failing to bind it fails start-up.
func (s *Service) Serve(ctx context.Context, l net.Listener) error {
	defer s.Sequences.Close()
	stop, err := s.startMetrics()
	if err != nil {
		l.Close()
		return err
	}
	defer stop()
	return s.Proxy.Serve(ctx, l)
}

// ListenAndServe listens on the configured address (and metrics.listen)
// and serves until ctx ends.
func (s *Service) ListenAndServe(ctx context.Context) error {
	defer s.Sequences.Close()
	stop, err := s.startMetrics()
	if err != nil {
		return err
	}
	defer stop()
	return s.Proxy.ListenAndServe(ctx)
}
