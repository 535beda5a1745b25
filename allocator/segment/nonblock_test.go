package segment

import (
	"context"
	"errors"
	"testing"

	"github.com/leafproxy/leafproxy/internal/nonblock"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

// A caller that must not wait (an event loop's) gets ErrWouldBlock at once
// when no segment is buffered, the fetch starts anyway, and once it is in
// the same caller is served without waiting; IDs are never repeated.
func TestNoWaitCaller(t *testing.T) {
	a := New(newMemStore(map[string]int64{"t": 10}), Options{})
	t.Cleanup(a.Close)
	nb := nonblock.Context(context.Background())
	if _, err := a.NextN(nb, "t", 1, nil); !errors.Is(err, nonblock.ErrWouldBlock) {
		t.Fatalf("first draw of a tag with nothing buffered: %v, want ErrWouldBlock", err)
	}
	var ids []int64
	testwait.For(t, "the fetch the refused call started", func() bool {
		got, err := a.NextN(nb, "t", 3, nil)
		if err == nil {
			ids = got
			return true
		}
		if !errors.Is(err, nonblock.ErrWouldBlock) {
			t.Fatal(err)
		}
		return false
	})
	more, err := a.NextN(context.Background(), "t", 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for _, id := range append(ids, more...) {
		if seen[id] {
			t.Fatalf("ID %d issued twice: %v then %v", id, ids, more)
		}
		seen[id] = true
	}
}
