//go:build nodemo

package main

import (
	"fmt"
	"io"
)

// runDemo in a binary built with -tags nodemo, which leaves the embedded
// backend (go-mysql-server) out.
func runDemo(_, _ string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "leafproxy demo: this binary was built without the demo (go build -tags nodemo); build it without that tag, or run go run ./cmd/leafproxy demo")
	return 1
}
