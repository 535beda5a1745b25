package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestDemoUsage: help exits 0 on stdout; mistakes exit 2 naming the flag.
func TestDemoUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"--help"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "usage: leafproxy-demo [--listen ADDR] [--backend-port PORT]") {
		t.Fatalf("--help: exit %d: %s%s", code, out.String(), errOut.String())
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--config", "x.yaml"}, "flag provided but not defined: -config"},
		{[]string{"--listen", "0.0.0.0:3307"}, "loopback only"},
		{[]string{"--listen", "nope"}, `--listen: "nope" is neither a port nor host:port`},
		{[]string{"--backend-port", "70000"}, `--backend-port: "70000" is not a port number`},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		var out, errOut bytes.Buffer
		if code := run(tc.args, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), tc.want) || !strings.Contains(errOut.String(), "usage: leafproxy-demo") {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, errOut.String(), tc.want)
		}
	}
}
