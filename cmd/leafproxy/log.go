package main

import (
	"context"
	"io"
	"log/slog"
	"strings"

	"github.com/leafproxy/leafproxy/config"
)

// newLogger builds the slog logger log.level and log.format ask for.
// Go stack traces stay out of the log unless log.level is debug: see
// stackHandler.
func newLogger(cfg *config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.Log.Level)); err != nil {
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	if strings.EqualFold(cfg.Log.Format, "json") {
		h = slog.NewJSONHandler(w, opts)
	} else {
		h = slog.NewTextHandler(w, opts)
	}
	return slog.New(stackHandler{h})
}

// stackHandler keeps Go stack traces (an attribute named "stack", or any
// value that reads like a goroutine dump, as a recovered panic logs) out of
// records above debug level: the record is written without it, and the
// stack follows as a separate debug record, shown only at log.level debug.
type stackHandler struct{ slog.Handler }

func (h stackHandler) Handle(ctx context.Context, r slog.Record) error {
	var stacks []slog.Attr
	r.Attrs(func(a slog.Attr) bool {
		if isStack(a) {
			stacks = append(stacks, a)
		}
		return true
	})
	if len(stacks) == 0 || r.Level <= slog.LevelDebug {
		return h.Handler.Handle(ctx, r)
	}
	clean := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		if !isStack(a) {
			clean.AddAttrs(a)
		}
		return true
	})
	if err := h.Handler.Handle(ctx, clean); err != nil {
		return err
	}
	if !h.Handler.Enabled(ctx, slog.LevelDebug) {
		return nil
	}
	d := slog.NewRecord(r.Time, slog.LevelDebug, r.Message+": stack", r.PC)
	d.AddAttrs(stacks...)
	return h.Handler.Handle(ctx, d)
}

func isStack(a slog.Attr) bool {
	if a.Key == "stack" {
		return true
	}
	if a.Value.Kind() != slog.KindString {
		return false
	}
	s := a.Value.String()
	return strings.HasPrefix(s, "goroutine ") || strings.Contains(s, "\ngoroutine ") ||
		strings.Contains(s, "runtime/debug.Stack(")
}

func (h stackHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return stackHandler{h.Handler.WithAttrs(as)}
}

func (h stackHandler) WithGroup(name string) slog.Handler {
	return stackHandler{h.Handler.WithGroup(name)}
}
