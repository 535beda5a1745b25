package service

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"
)

// lifecycle is what Close needs to stop a service: the Serve calls in
// progress (ended through closing, the parent of their contexts) and what
// New opened (released once, by the first Serve to return or by Close).
type lifecycle struct {
	mu       sync.Mutex
	closed   bool
	closing  context.Context // done when Close begins
	close    context.CancelFunc
	serving  sync.WaitGroup // Serve, ServeOn and ListenAndServe in progress
	released sync.Once
	closeErr error
}

func (l *lifecycle) init() { l.closing, l.close = context.WithCancel(context.Background()) }

// ErrClosed is what Serve returns on a service already closed.
var ErrClosed = errors.New("service: closed")

// begin registers a Serve call: its context also ends when Close begins.
// done must be called when it returns.
func (s *Service) begin(ctx context.Context) (serveCtx context.Context, done func(), err error) {
	s.life.mu.Lock()
	defer s.life.mu.Unlock()
	if s.life.closed {
		return nil, nil, ErrClosed
	}
	s.life.serving.Add(1)
	serveCtx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.life.closing, cancel)
	return serveCtx, func() {
		stop()
		cancel()
		s.life.serving.Done()
	}, nil
}

// release closes what New opened: the generators (their background
// goroutines, the snowflake leases, the store's pool) and the health
// probes' pools. Once; later calls return the first's error.
func (s *Service) release() error {
	s.life.released.Do(func() {
		s.life.closeErr = s.Sequences.Close()
		s.health.close()
	})
	return s.life.closeErr
}

// Close stops everything the service started and waits for it: a Serve in
// progress ends as when its context ends (the proxy stops accepting,
// statements in flight get shutdown.grace) and returns; then the proxy
// server's event loops, the metrics endpoint and the runway monitor (both
// stopped with Serve), the generators' background goroutines and
// snowflake leases, and every database pool. Its listeners' ports are free
// when it returns. Safe to call more than once and on a service that never
// served; Serve on a closed service returns ErrClosed.
func (s *Service) Close() error {
	s.life.mu.Lock()
	already := s.life.closed
	s.life.closed = true
	s.life.mu.Unlock()
	if already {
		return s.release()
	}
	s.life.close()
	s.life.serving.Wait()
	// A service that never served (or whose Serve returned early) has
	// its proxy server shut down here: idempotent, so a server Serve
	// already shut down is left as it is.
	ctx, cancel := context.WithTimeout(context.Background(), max(s.cfg.Shutdown.Grace.D(), time.Second))
	defer cancel()
	_ = s.Proxy.Shutdown(ctx)
	return s.release()
}

// Serve runs the proxy on l until ctx ends or Close, then shuts down
// gracefully and releases the generators.
// With metrics.listen set, /metrics, the status page (/), /status.json,
// /healthz, /livez and /readyz are served alongside and stopped with the proxy; failing to bind
// it fails start-up.
func (s *Service) Serve(ctx context.Context, l net.Listener) error {
	ctx, done, err := s.begin(ctx)
	if err != nil {
		l.Close()
		return err
	}
	defer done()
	defer s.release()
	stop, err := s.startMetrics()
	if err != nil {
		l.Close()
		return err
	}
	defer stop()
	stopAPI, err := s.startIDAPI()
	if err != nil {
		l.Close()
		return err
	}
	defer stopAPI()
	defer s.runRunway()()
	return s.Proxy.Serve(ctx, l)
}

// ServeOn is Serve on listeners bound beforehand (Listen): the client
// listener and, when metrics.listen and id_api.listen are set, the
// metrics endpoint's and the ID API's.
func (s *Service) ServeOn(ctx context.Context, ls Listeners) error {
	ctx, done, err := s.begin(ctx)
	if err != nil {
		ls.Close()
		return err
	}
	defer done()
	defer s.release()
	stop := func() {}
	if ls.Metrics != nil {
		addr, st := serveMetrics(ls.Metrics, s.handler(), s.log)
		s.mu.Lock()
		s.metricsAddr = addr
		s.mu.Unlock()
		stop = st
	}
	defer stop()
	if ls.IDAPI != nil {
		if s.IDAPI == nil {
			ls.IDAPI.Close()
		} else {
			defer s.serveIDAPI(ls.IDAPI)()
		}
	}
	defer s.runRunway()()
	return s.Proxy.Serve(ctx, ls.Client)
}

// ListenAndServe listens on the configured address (and metrics.listen)
// and serves until ctx ends or Close.
func (s *Service) ListenAndServe(ctx context.Context) error {
	ctx, done, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer done()
	defer s.release()
	stop, err := s.startMetrics()
	if err != nil {
		return err
	}
	defer stop()
	stopAPI, err := s.startIDAPI()
	if err != nil {
		return err
	}
	defer stopAPI()
	defer s.runRunway()()
	return s.Proxy.ListenAndServe(ctx)
}

// runRunway starts the runway monitor; the returned stop ends it and
// waits.
func (s *Service) runRunway() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() {
		defer func() { done <- struct{}{} }()
		s.Runway.Run(ctx)
	}()
	go func() {
		defer func() { done <- struct{}{} }()
		s.views.run(ctx) // views made around the proxy (views.go)
	}()
	return func() {
		cancel()
		<-done
		<-done
	}
}

// startMetrics starts the endpoint when metrics.listen is set; the returned
// stop (never nil) shuts it down.
func (s *Service) startMetrics() (func(), error) {
	if s.cfg.Metrics.Listen == "" {
		return func() {}, nil
	}
	addr, stop, err := startMetrics(s.cfg.Metrics.Listen, s.handler(), s.log)
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
