package snowflake

import (
	"context"
	"errors"
	"testing"

	"github.com/leafproxy/leafproxy/internal/nonblock"
)

// A caller that must not wait is refused, not queued, while another holds
// the generator (which may be sleeping until the next tick), and served
// as soon as it is free.
func TestNoWaitCaller(t *testing.T) {
	g := newGen(t, Options{})
	nb := nonblock.Context(context.Background())
	if _, err := g.Next(nb); err != nil {
		t.Fatalf("free generator: %v", err)
	}
	g.mu.Lock()
	_, err := g.Next(nb)
	_, errN := g.NextN(nb, 2, nil)
	g.mu.Unlock()
	if !errors.Is(err, nonblock.ErrWouldBlock) || !errors.Is(errN, nonblock.ErrWouldBlock) {
		t.Fatalf("held generator: Next %v, NextN %v; want ErrWouldBlock", err, errN)
	}
	if ids, err := g.NextN(nb, 2, nil); err != nil || len(ids) != 2 {
		t.Fatalf("after release: %v, %v", ids, err)
	}
}
