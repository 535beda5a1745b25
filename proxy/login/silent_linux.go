//go:build linux

package login

import "golang.org/x/sys/unix"

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
