//go:build !nodemo

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/demo"
)

// The demo links go-mysql-server into the binary (28 MB -> 85 MB):
// `go build -tags nodemo` leaves it out (demo_off.go).

// runDemo is `leafproxy demo`: the proxy in front of an embedded
// in-memory backend, on loopback, until SIGINT or SIGTERM.
func runDemo(listen, backendPort string, stdout, stderr io.Writer) int {
	listenAddr, err := demoListen(listen)
	if err != nil {
		fmt.Fprintf(stderr, "leafproxy demo: --listen: %v\n\n", err)
		commandUsage(stderr, findCommand("demo"))
		return 2
	}
	backendAddr := "127.0.0.1:0"
	if backendPort != "" {
		p, err := strconv.ParseUint(backendPort, 10, 16)
		if err != nil {
			fmt.Fprintf(stderr, "leafproxy demo: --backend-port: %q is not a port number (0-65535)\n\n", backendPort)
			commandUsage(stderr, findCommand("demo"))
			return 2
		}
		backendAddr = net.JoinHostPort("127.0.0.1", strconv.FormatUint(p, 10))
	}
	cfg := config.Default()
	log := newLogger(cfg, stderr)
	_ = mysql.SetLogger(driverLogger{log.With("component", "mysql-driver")})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := onSignals(cancel, func(sig os.Signal, n int) {
		if n == 1 {
			log.Info("received "+signalName(sig)+", stopping the demo", "signal", signalName(sig))
			return
		}
		log.Warn("received "+signalName(sig)+" again, exiting at once", "signal", signalName(sig))
		exit(1)
	})
	defer stop()

	d, err := demo.Start(ctx, demo.Options{Listen: listenAddr, BackendAddr: backendAddr, Log: log})
	if err != nil {
		fmt.Fprintf(stderr, "leafproxy demo: %v\n", err)
		return 1
	}
	d.Intro(stdout, version)
	if err := d.Serve(ctx); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "leafproxy demo: %v\n", err)
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
