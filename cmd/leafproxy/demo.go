package main

import (
	"fmt"
	"io"
)

// The demo (go-mysql-server in memory, the proxy in front) is a program of
// its own, cmd/leafproxy-demo, so that this binary, the one people deploy,
// does not link go-mysql-server (about 86 MB with it, under 30 without).

// demoCommand is the command line that runs the demo from a checkout of
// the repository, with args passed through.
func demoCommand(args []string) string {
	line := "go run ./cmd/leafproxy-demo"
	for _, a := range args {
		line += " " + a
	}
	return line
}

// runDemo is `leafproxy demo`: it says how to run the demo program.
func runDemo(args []string, stdout io.Writer) int {
	fmt.Fprintf(stdout, `The demo is a program of its own: the leafproxy binary does not carry its
embedded MySQL-compatible server. From a checkout of the repository, run:

  %s

It needs no MySQL or MariaDB: it prints a mariadb command line to connect with.
`, demoCommand(args))
	return 0
}
