package service

import (
	"os"
	"syscall"
)

// SignalName is how the binaries (cmd/leafproxy, cmd/leafproxy-demo) name
// a stop signal in their log lines: SIGTERM and SIGINT by those names (a
// signal's String says "terminated", "interrupt"), any other by its String.
func SignalName(sig os.Signal) string {
	switch sig {
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	}
	return sig.String()
}
