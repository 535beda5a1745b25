package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/service"
)

// initStore creates the allocation store's database (the default
// `leafproxy` on the backend, or the one sequences.store names), its tables
// and every configured tag that is missing. Idempotent: existing rows keep
// their max_id. Errors name the config key to fix.
func initStore(ctx context.Context, cfg *config.Config, w io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return service.InitStore(ctx, cfg, func(format string, args ...any) {
		fmt.Fprintf(w, format+"\n", args...)
	})
}
