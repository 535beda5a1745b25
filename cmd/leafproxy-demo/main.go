// Command leafproxy-demo tries leafproxy with no MySQL or MariaDB
// installed: the proxy in front of an embedded, in-memory MySQL-compatible
// server (go-mysql-server), with example tables and tags, on loopback.
//
//	go run ./cmd/leafproxy-demo [--listen PORT] [--backend-port PORT]
//
// It is a program of its own so that the binary people deploy
// (cmd/leafproxy) does not carry go-mysql-server (about 57 MB of it).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/leafproxy/leafproxy/demo"
	"github.com/leafproxy/leafproxy/internal/buildinfo"
	"github.com/leafproxy/leafproxy/service"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const about = `usage: leafproxy-demo [--listen ADDR] [--backend-port PORT]

Starts an embedded, in-memory MySQL-compatible server (go-mysql-server) on
127.0.0.1 with the database shop (tables orders and customers, whose ids the proxy
fills) and the allocation store leafproxy.leaf_alloc, puts the proxy in front of
it, and prints a mariadb command line and statements to try (account demo,
password demo, an admin). Nothing is written to disk; SIGINT (Ctrl-C) or SIGTERM
stops it. What works on the embedded backend and what does not: README, Demo.

flags:
  --listen ADDR          loopback host:port (or a port) clients connect to; default 127.0.0.1 on a free port
  --backend-port PORT    port of the embedded backend on 127.0.0.1; default a free one
`

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("leafproxy-demo", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	listen := fs.String("listen", "", "")
	backendPort := fs.String("backend-port", "", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, about)
			return 0
		}
		fmt.Fprintf(stderr, "leafproxy-demo: %v\n\n%s", err, about)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "leafproxy-demo: unexpected argument %q\n\n%s", fs.Arg(0), about)
		return 2
	}
	listenAddr, err := demoListen(*listen)
	if err != nil {
		fmt.Fprintf(stderr, "leafproxy-demo: --listen: %v\n\n%s", err, about)
		return 2
	}
	backendAddr := "127.0.0.1:0"
	if *backendPort != "" {
		p, err := strconv.ParseUint(*backendPort, 10, 16)
		if err != nil {
			fmt.Fprintf(stderr, "leafproxy-demo: --backend-port: %q is not a port number (0-65535)\n\n%s", *backendPort, about)
			return 2
		}
		backendAddr = net.JoinHostPort("127.0.0.1", strconv.FormatUint(p, 10))
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	service.RouteDriverLog(log) // the driver's own lines, at debug level

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigc := make(chan os.Signal, 2)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigc)
	go func() {
		for n := 1; ; n++ {
			sig, ok := <-sigc
			if !ok {
				return
			}
			if n == 1 {
				log.Info("received "+service.SignalName(sig)+", stopping the demo", "signal", service.SignalName(sig))
				cancel()
				continue
			}
			log.Warn("received "+service.SignalName(sig)+" again, exiting at once", "signal", service.SignalName(sig))
			os.Exit(1)
		}
	}()

	d, err := demo.Start(ctx, demo.Options{Listen: listenAddr, BackendAddr: backendAddr, Log: log})
	if err != nil {
		fmt.Fprintf(stderr, "leafproxy-demo: %v\n", err)
		return 1
	}
	d.Intro(stdout, buildinfo.Read("").Version)
	if err := d.Serve(ctx); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "leafproxy-demo: %v\n", err)
		return 1
	}
	log.Info("leafproxy demo stopped")
	return 0
}

// demoListen accepts a port, :port or a loopback host:port (the demo
// account's password is printed for all to read), and defaults to a free
// port on 127.0.0.1.
func demoListen(s string) (string, error) {
	if s == "" {
		return "127.0.0.1:0", nil
	}
	if _, err := strconv.ParseUint(s, 10, 16); err == nil {
		return net.JoinHostPort("127.0.0.1", s), nil
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", fmt.Errorf("%q is neither a port nor host:port", s)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return "", fmt.Errorf("%q: %q is not a port number", s, port)
	}
	switch host {
	case "":
		host = "127.0.0.1"
	case "localhost":
	default:
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			return "", fmt.Errorf("%q: the demo listens on loopback only (127.0.0.1, ::1, localhost): its account's password is public", s)
		}
	}
	return net.JoinHostPort(host, port), nil
}
