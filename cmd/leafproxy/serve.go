package main

import (
	"context"
	"fmt"
	"io"

	"github.com/leafproxy/leafproxy/config"
)

// serve runs the proxy until ctx ends (SIGINT/SIGTERM).
// Until the proxy package lands it prints the effective configuration.
func serve(ctx context.Context, cfg *config.Config, w io.Writer) error {
	fmt.Fprintf(w, "leafproxy %s: listen %s, backend %s (proxy not yet wired)\n", version, cfg.Listen, cfg.Backend.Addr)
	return nil
}
