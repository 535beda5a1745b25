//go:build !linux

package frontdoor

import (
	"net"
	"time"

	"github.com/leafproxy/leafproxy/proxy/wire"
)

// Only Linux greets from the accept loop (greet_linux.go); elsewhere
// every connection has its goroutine from the start.

// Waiting is a greeted connection the doorman holds (never, off Linux).
type Waiting struct {
	ID       uint32
	G        *wire.Greeting
	Deadline time.Time
}

type doorman struct{}

// End closes w if the doorman still holds it (login.Ender).
func (*Waiting) End() bool { return false }

func (dr *Door) greetEarly(net.Conn) bool { return false }

// StopDoorman stops the doorman (none runs off Linux).
func (dr *Door) StopDoorman() {}

// DoormanBudget is the silent connections' budget of the doorman (none).
func (dr *Door) DoormanBudget() int { return 0 }

// SilentBudget is limits.max_silent_handshakes.
func (dr *Door) SilentBudget() (int, bool) { return dr.MaxSilent, false }
