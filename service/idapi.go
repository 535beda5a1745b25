package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/idapi"
)

// IDAPITokens builds the ID API's tokens from id_api.tokens (secrets
// resolved by config).
func IDAPITokens(cfg *config.Config) []idapi.Token {
	out := make([]idapi.Token, 0, len(cfg.IDAPI.Tokens))
	for _, t := range cfg.IDAPI.Tokens {
		out = append(out, idapi.Token{Name: t.Name, Secret: t.Token, Tags: append([]string(nil), t.Tags...), Rate: t.Rate, MaxNewTags: t.MaxNewTags})
	}
	return out
}

// IDAPILimits is the ID API port's budget from id_api.
func IDAPILimits(cfg *config.Config) idapi.Limits {
	a := cfg.IDAPI
	return idapi.Limits{MaxConnections: a.MaxConnections, MaxConnectionsPerHost: a.MaxConnectionsPerHost,
		HeaderTimeout: a.HeaderTimeout.D(), IdleTimeout: a.IdleTimeout.D(), WriteTimeout: a.WriteTimeout.D(), MaxHeaderBytes: int(a.MaxHeaderBytes)}
}

// IDAPIAddr is the address the HTTP ID API is served on: nil while not
// serving or when id_api.listen is empty.
func (s *Service) IDAPIAddr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.idapiAddr
}

// startIDAPI serves the ID API when id_api.listen is set; the returned
// stop (never nil) shuts it down.
func (s *Service) startIDAPI() (func(), error) {
	if s.IDAPI == nil {
		return func() {}, nil
	}
	l, err := net.Listen("tcp", s.cfg.IDAPI.Listen)
	if err != nil {
		return nil, idapiListenError(s.cfg, err)
	}
	return s.serveIDAPI(l), nil
}

func idapiListenError(cfg *config.Config, err error) error {
	return &ConfigError{Key: "id_api.listen", Msg: fmt.Sprintf("cannot serve the HTTP ID API on %s", cfg.IDAPI.Listen), Err: err,
		Fix: "free the address, choose another, or leave id_api.listen empty"}
}

// serveIDAPI serves the ID API on l until the returned stop.
func (s *Service) serveIDAPI(l net.Listener) func() {
	hs := s.IDAPI.Server(slog.NewLogLogger(s.log.Handler(), slog.LevelDebug))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := hs.Serve(s.IDAPI.Listener(l)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("HTTP ID API stopped", "addr", l.Addr().String(), "err", err)
		}
	}()
	s.log.Info("HTTP ID API listening", "addr", l.Addr().String(), "paths", "/api/segment/get/{tag} /api/snowflake/get/{tag} /api/decode/{tag}/{id}",
		"tokens", len(s.cfg.IDAPI.Tokens))
	s.mu.Lock()
	s.idapiAddr = l.Addr()
	s.mu.Unlock()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if hs.Shutdown(ctx) != nil {
			hs.Close()
		}
		<-done
		s.mu.Lock()
		s.idapiAddr = nil
		s.mu.Unlock()
	}
}

// Listeners are the sockets serve binds before any start-up work: the
// clients', and the metrics endpoint's and the ID API's when configured.
type Listeners struct {
	Client, Metrics, IDAPI net.Listener
}

// Close closes every listener held.
func (ls Listeners) Close() {
	for _, l := range []net.Listener{ls.Client, ls.Metrics, ls.IDAPI} {
		if l != nil {
			l.Close()
		}
	}
}
