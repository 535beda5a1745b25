package segment

import (
	"context"
	"testing"

	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

// TestBlockTakesTheBufferedSegment: a block the current segment cannot
// hold comes from the buffered next segment (which becomes current, no
// store call), so that a client taking blocks is served at memory speed;
// only a block no buffered segment can hold is fetched on its own. IDs
// stay increasing: a single ID after the block follows it.
func TestBlockTakesTheBufferedSegment(t *testing.T) {
	ctx := context.Background()
	st := newMemStore(map[string]int64{"t": 1000})
	a := New(st, Options{WatchEvery: -1})
	defer a.Close()
	if id, err := a.Next(ctx, "t"); err != nil || id != 1 {
		t.Fatalf("first ID %d, %v", id, err)
	}
	if first, err := a.Block(ctx, "t", 200); err != nil || first != 2 {
		t.Fatalf("block from the current segment at %d, %v; want 2", first, err)
	}
	// Past 10% of the segment: the next one is fetched in the background.
	testwait.For(t, "the next segment buffered", func() bool { s, _ := a.Stats("t"); return s.NextReady })
	next, _ := a.Stats("t")
	first, err := a.Block(ctx, "t", 900) // 799 left in [1, 1001)
	if err != nil || first != next.Next.Start {
		t.Fatalf("block at %d, %v; want %d, the start of the buffered segment %+v", first, err, next.Next.Start, next.Next)
	}
	s, _ := a.Stats("t")
	if s.Blocks != 0 || s.Current != next.Next {
		t.Fatalf("after the block: %d ranges fetched for blocks, current %+v; want none and the buffered segment %+v current", s.Blocks, s.Current, next.Next)
	}
	if id, _ := a.Next(ctx, "t"); id != first+900 {
		t.Fatalf("ID after the block %d, want %d", id, first+900)
	}
	// Larger than any buffered segment: a range of its own.
	if _, err := a.Block(ctx, "t", 50_000); err != nil {
		t.Fatal(err)
	}
	if s, _ := a.Stats("t"); s.Blocks != 1 {
		t.Fatalf("%d ranges fetched for blocks, want 1", s.Blocks)
	}
}

// TestBlocksAloneFillTheBuffer: a tag used for blocks alone gets its
// double buffer too: the first block, with nothing buffered, starts the
// loader (and is fetched on its own, or, when the loader's segment comes
// back first, served from it); the next block comes from the segment the
// loader brought, without a range of its own.
func TestBlocksAloneFillTheBuffer(t *testing.T) {
	ctx := context.Background()
	st := newMemStore(map[string]int64{"u": 1000})
	a := New(st, Options{WatchEvery: -1})
	defer a.Close()
	if _, err := a.Block(ctx, "u", 10); err != nil {
		t.Fatal(err)
	}
	// Which of the two came first decides where the loaded segment sits
	// (buffered, or already current): either way 10 more are in memory.
	testwait.For(t, "a segment loaded", func() bool {
		s, _ := a.Stats("u")
		return !s.Loading && (s.NextReady || s.Remaining >= 10)
	})
	first, _ := a.Stats("u")
	if first.Blocks > 1 {
		t.Fatalf("%d ranges fetched for one block", first.Blocks)
	}
	if _, err := a.Block(ctx, "u", 10); err != nil {
		t.Fatal(err)
	}
	if s, _ := a.Stats("u"); s.Blocks != first.Blocks || s.Current.End == 0 {
		t.Fatalf("%d ranges fetched for blocks (was %d: the second came from the buffer), current segment %+v", s.Blocks, first.Blocks, s.Current)
	}
	// Unknown tags start no loader over and over: the miss is remembered.
	if _, err := a.Block(ctx, "nope", 10); err == nil {
		t.Fatal("block of an unknown tag: no error")
	}
	// The first call's own loader (started before the miss was known) may
	// still be asking: it is the last fetch the tag gets.
	testwait.For(t, "the unknown tag's loader to stop", func() bool {
		nt := (*a.tags.Load())["nope"]
		nt.mu.Lock()
		defer nt.mu.Unlock()
		return !nt.loading
	})
	fetches := st.fetchesOf("nope")
	if _, err := a.Block(ctx, "nope", 10); err == nil {
		t.Fatal("block of an unknown tag: no error")
	}
	if n := st.fetchesOf("nope"); n != fetches {
		t.Fatalf("a remembered unknown tag was fetched again (%d fetches, was %d)", n, fetches)
	}
}

// TestIDsAfterABlockFollowIt: a segment fetch under way when a block is
// fetched on its own gets the range below the block's, but may reach the
// allocator after it: it is not served (fetched again), so the IDs handed
// out after the block are above it, as a native sequence's NEXTVAL after
// NEXTVAL('t', n) and AUTO_INCREMENT's key after an INSERT ... SELECT.
func TestIDsAfterABlockFollowIt(t *testing.T) {
	ctx := context.Background()
	st := newMemStore(map[string]int64{"t": 100})
	a := New(st, Options{WatchEvery: -1})
	defer a.Close()
	if _, err := a.Next(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	gate, hold := make(chan struct{}), make(chan struct{})
	st.set(func(s *memStore) {
		s.gate = gate
		s.after = func(step int64) {
			if step != 5000 {
				<-hold // the segment fetch, with its range, waits
			}
		}
	})
	for range 20 { // past 10%: the next segment is fetched
		if _, err := a.Next(ctx, "t"); err != nil {
			t.Fatal(err)
		}
	}
	gate <- struct{}{} // the segment fetch takes its range first
	type res struct {
		first int64
		err   error
	}
	got := make(chan res, 1)
	go func() {
		first, err := a.Block(ctx, "t", 5000) // 79 left: a range of its own
		got <- res{first, err}
	}()
	gate <- struct{}{}
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	st.set(func(s *memStore) { s.gate = nil })
	close(hold)
	id, err := a.Next(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if id < r.first+5000 {
		t.Fatalf("ID %d after the block [%d, %d)", id, r.first, r.first+5000)
	}
}

// TestBlockWaitsForTheNextSegment: a block that the next segment will
// hold waits for it when nothing buffered can serve it (as NEXTVAL waits
// when both buffers are empty) instead of fetching a range of its own:
// under load, ranges fetched for blocks would keep dropping the segments
// the loader brings.
func TestBlockWaitsForTheNextSegment(t *testing.T) {
	ctx := context.Background()
	st := newMemStore(map[string]int64{"t": 100})
	a := New(st, Options{WatchEvery: -1})
	defer a.Close()
	if _, err := a.Next(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	st.set(func(s *memStore) { s.gate = gate })
	if first, err := a.Block(ctx, "t", 50); err != nil || first != 2 {
		t.Fatalf("block at %d, %v", first, err)
	}
	testwait.For(t, "the next segment's fetch at the gate", func() bool {
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.inflight == 1
	})
	got := make(chan int64, 1)
	go func() {
		first, err := a.Block(ctx, "t", 80) // 49 left
		if err != nil {
			t.Error(err)
		}
		got <- first
	}()
	gate <- struct{}{}
	if first := <-got; first != 101 {
		t.Fatalf("block at %d, want 101: the start of the next segment", first)
	}
	if s, _ := a.Stats("t"); s.Blocks != 0 {
		t.Fatalf("%d ranges fetched for blocks, want none", s.Blocks)
	}
}
