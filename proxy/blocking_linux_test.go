package proxy

import (
	"context"
	"errors"
	"testing"

	"github.com/leafproxy/leafproxy/internal/nonblock"
)

// Blocking hands out the session's waiting calls on its goroutine only: on
// its lane, or under a context marked nonblock, it is ErrWouldBlock.
func TestBlockingOnlyOffTheLoop(t *testing.T) {
	s := &Session{}
	s.exec = onGoroutine{}
	if b, err := s.Blocking(context.Background()); err != nil || b != BlockingSession(blocking{s}) {
		t.Fatalf("on the goroutine: %v, %v", b, err)
	}
	if b, err := s.Blocking(nonblock.Context(context.Background())); !errors.Is(err, ErrWouldBlock) || b != nil {
		t.Fatalf("marked context: %v, %v; want ErrWouldBlock", b, err)
	}
	s.exec = &laneSession{}
	if b, err := s.Blocking(context.Background()); !errors.Is(err, ErrWouldBlock) || b != nil {
		t.Fatalf("on the lane: %v, %v; want ErrWouldBlock", b, err)
	}
	// By construction: a *Session itself has none of the waiting calls.
	if _, ok := any(s).(interface {
		BackendQuery(context.Context, string) ([][]*string, error)
	}); ok {
		t.Fatal("*Session has BackendQuery: code holding a session reaches a waiting call without Blocking")
	}
	if _, ok := any(s).(interface {
		RelayPrepare([]byte) (PrepareResult, error)
	}); ok {
		t.Fatal("*Session has RelayPrepare: code holding a session reaches a waiting call without Blocking")
	}
}
