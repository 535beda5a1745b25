//go:build linux

package login

import (
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/leafproxy/leafproxy/proxy/wire"
)

// SilentBudget is limits.max_silent_handshakes (budget), at most half the
// process's open-file limit (each silent connection is an open file: the
// other half is left to sessions, two each, handshakes under way and the
// process); bounded reports whether the limit cut it.
func SilentBudget(budget int) (int, bool) {
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil && lim.Cur < uint64(2*budget) {
		return max(int(lim.Cur/2), 1), true
	}
	return budget, false
}

// WriteGreeting writes greeting g to a new client's socket rc (the accept
// loop's, which greets before the connection has a goroutine) in one
// non-blocking write: a new socket's send buffer takes a greeting. false:
// it did not take it whole.
func WriteGreeting(rc syscall.RawConn, g *wire.Greeting) bool {
	body := wire.AppendGreeting(nil, g)
	pkt := append([]byte{byte(len(body)), byte(len(body) >> 8), byte(len(body) >> 16), 0}, body...)
	var n int
	var err error
	werr := rc.Write(func(fd uintptr) bool {
		n, err = unix.Write(int(fd), pkt)
		return true
	})
	return werr == nil && err == nil && n == len(pkt)
}
