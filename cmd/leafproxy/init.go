package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/leafproxy/leafproxy/allocator"
	"github.com/leafproxy/leafproxy/config"
)

// initStore creates the allocation schema and every configured tag that is
// missing. Idempotent: existing rows keep their max_id.
func initStore(ctx context.Context, cfg *config.Config, w io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return allocator.InitStore(ctx, cfg, func(format string, args ...any) {
		fmt.Fprintf(w, format+"\n", args...)
	})
}
