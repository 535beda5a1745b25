//go:build !linux

package proxy

import "context"

// Event loops need epoll (loop_linux.go); elsewhere every session runs on
// its own goroutine.

type loop struct{}

type lane struct{ cfd, bfd int }

type loopMsg struct{}

func (ln *lane) send([]byte, int, afterAction) error { return nil }

func (srv *Server) drainLoops() {}

func (srv *Server) stopLoops() {}

func (s *Session) loopFor() *loop { return nil }

func (s *Session) runOnLoop(*loop) (loopMsg, bool) { return loopMsg{}, false }

func (s *Session) fromLoop(context.Context, *loopMsg) bool { return false }
