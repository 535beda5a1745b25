package login

import (
	"math/rand/v2"
	"time"
)

// SilentTimeout is how long a greeted connection may stay silent:
// handshake_timeout t plus a random part of up to half of it, so
// connections opened together (a flood) are not all cut, and do not all
// reconnect, at once.
func SilentTimeout(t time.Duration) time.Duration {
	if j := t / 2; j > 0 {
		return t + rand.N(j)
	}
	return t
}
