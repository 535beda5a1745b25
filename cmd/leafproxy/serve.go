package main

import (
	"context"
	"io"
	"log/slog"
	"strings"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/service"
)

// serve runs the proxy until ctx ends (SIGINT/SIGTERM), then shuts down
// gracefully within shutdown.grace.
func serve(ctx context.Context, cfg *config.Config, w io.Writer) error {
	log := newLogger(cfg, w)
	srv, err := service.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	log.Info("leafproxy starting", "version", version, "listen", cfg.Listen, "backend", cfg.Backend.Addr)
	if err := srv.ListenAndServe(ctx); err != nil {
		return err
	}
	log.Info("leafproxy stopped")
	return nil
}

func newLogger(cfg *config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.Log.Level)); err != nil {
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	if strings.EqualFold(cfg.Log.Format, "json") {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
