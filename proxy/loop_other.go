//go:build !linux

package proxy

import "context"

// Event loops need epoll (package eventloop); elsewhere every session runs on
// its own goroutine.

type loop struct{}

type lane struct{}

func (*lane) ShutdownClient()  {}
func (*lane) ShutdownBackend() {}

type handBack struct{}

func (srv *Server) drainLoops() {}

func (srv *Server) stopLoops() {}

func (s *Session) loopFor() *loop { return nil }

func (s *Session) runOnLoop(*loop) (handBack, bool) { return handBack{}, false }

func (s *Session) fromLoop(context.Context, *handBack) bool { return false }
