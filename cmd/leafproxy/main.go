// Command leafproxy is the MySQL-protocol proxy that fills primary keys with
// globally unique IDs. Subcommands: serve, init, version.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/leafproxy/leafproxy/config"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func usage(w io.Writer) {
	fmt.Fprint(w, `leafproxy: a MySQL-protocol proxy that gives tables globally unique primary keys

usage:
  leafproxy serve   --config FILE [--listen ADDR] [--backend ADDR]   run the proxy
  leafproxy init    --config FILE [--backend ADDR]                   create leaf_alloc, leaf_worker and configured tags
  leafproxy version                                                  print the version
`)
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "version", "--version", "-v":
		fmt.Fprintf(stdout, "leafproxy %s\n", version)
		return 0
	case "help", "-h", "--help":
		usage(stdout)
		return 0
	case "serve", "init":
	default:
		fmt.Fprintf(stderr, "leafproxy: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "YAML configuration file")
	listen := fs.String("listen", "", "override listen (host:port)")
	backend := fs.String("backend", "", "override backend.addr (host:port)")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	cfg, err := loadConfig(*path, *listen, *backend)
	if err != nil {
		fmt.Fprintf(stderr, "leafproxy: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	switch args[0] {
	case "serve":
		err = serve(ctx, cfg, stderr)
	case "init":
		err = initStore(ctx, cfg, stdout)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "leafproxy %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

func loadConfig(path, listen, backend string) (*config.Config, error) {
	var cfg *config.Config
	if path == "" {
		cfg = config.Default()
	} else {
		var err error
		if cfg, err = config.Load(path); err != nil {
			return nil, err
		}
	}
	if listen != "" {
		cfg.Listen = listen
	}
	if backend != "" {
		cfg.Backend.Addr = backend
	}
	return cfg, cfg.Validate()
}
