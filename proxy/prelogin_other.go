//go:build !linux

package proxy

import (
	"net"
	"time"

	"github.com/leafproxy/leafproxy/proxy/wire"
)

// Only Linux greets from the accept loop (prelogin_linux.go); elsewhere
// every connection has its goroutine from the start.

type waiting struct {
	id       uint32
	g        *wire.Greeting
	deadline time.Time
}

type doorman struct{}

func (*waiting) End() bool { return false }

func (s *Server) greetEarly(net.Conn) bool { return false }

func (s *Server) stopDoorman() {}

func (s *Server) silentBudget() (int, bool) { return s.cfg.Limits.MaxSilentHandshakes, false }
