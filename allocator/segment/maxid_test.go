package segment

import (
	"context"
	"errors"
	"testing"

	"github.com/leafproxy/leafproxy/internal/nonblock"
)

// TestMaxID: one tag's max_id read from the store, which says which IDs
// were handed out (below it); an unknown tag is UnknownTagError even with
// AutoCreate (reading creates nothing), an event loop's caller is sent
// away before the store is asked.
func TestMaxID(t *testing.T) {
	ctx := context.Background()
	st := newMemStore(map[string]int64{"t": 100})
	a := New(st, Options{WatchEvery: -1, AutoCreate: true})
	defer a.Close()
	if v, err := a.MaxID(ctx, "t"); err != nil || v != 1 {
		t.Fatalf("max_id of an unused tag: %d, %v; want 1", v, err)
	}
	if _, err := a.Next(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	if v, err := a.MaxID(ctx, "t"); err != nil || v != 101 {
		t.Fatalf("max_id after one segment: %d, %v; want 101", v, err)
	}
	var unknown *UnknownTagError
	for _, tag := range []string{"nope", "", "\xff"} {
		if _, err := a.MaxID(ctx, tag); !errors.As(err, &unknown) {
			t.Errorf("max_id of %q: %v, want UnknownTagError", tag, err)
		}
	}
	st.mu.Lock()
	creates, peeks := st.creates, st.peeks
	st.mu.Unlock()
	if creates != 0 {
		t.Errorf("reading max_id created %d tag(s)", creates)
	}
	if _, err := a.MaxID(nonblock.Context(ctx), "t"); !errors.Is(err, nonblock.ErrWouldBlock) {
		t.Errorf("max_id on an event loop: %v, want ErrWouldBlock", err)
	}
	st.mu.Lock()
	asked := st.peeks != peeks
	down := errors.New("store down")
	st.fail = down
	st.mu.Unlock()
	if asked {
		t.Error("the store was asked for an event loop's caller")
	}
	if _, err := a.MaxID(ctx, "t"); !errors.Is(err, down) {
		t.Errorf("max_id with the store down: %v", err)
	}
}
