package segment

import (
	"context"
	"testing"
	"unsafe"
)

// TestTagMayAliasAReusedBuffer: the proxy passes tags sliced from its
// packet buffer, which it overwrites with the next command. The allocator
// must keep its own copy: a background prefetch after the buffer changed
// still fetches for the right tag, and later calls find the same state.
func TestTagMayAliasAReusedBuffer(t *testing.T) {
	store := newMemStore(map[string]int64{"order": 10, "payin": 10})
	a := New(store, Options{})
	defer a.Close()
	buf := []byte("order")
	tag := unsafe.String(&buf[0], len(buf))
	ctx := context.Background()
	var got []int64
	for range 3 { // the second call starts a prefetch
		id, err := a.Next(ctx, tag)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, id)
	}
	copy(buf, "payin") // the session's next command overwrites the buffer
	for range 30 {
		id, err := a.Next(ctx, "order")
		if err != nil {
			t.Fatal(err)
		}
		if id <= got[len(got)-1] {
			t.Fatalf("order id %d after %d", id, got[len(got)-1])
		}
		got = append(got, id)
	}
	var payinFetches int64
	store.get(func(s *memStore) { payinFetches = s.rows["payin"].maxID })
	if payinFetches != 1 {
		t.Fatalf("the payin row moved to max_id %d: a fetch for order used the overwritten name", payinFetches)
	}
	if _, ok := a.Stats("payin"); ok {
		t.Fatal("state exists under the overwritten name")
	}
}
