package eventloop

import "sync/atomic"

// laneTable finds a lane by its index without a lock: runners look up
// every event; lanes come and go under Loop.mu.
type laneTable struct {
	chunks [1 << 12]atomic.Pointer[[1 << 10]atomic.Pointer[Lane]]
}

func (t *laneTable) get(idx int32) *Lane {
	if idx < 0 || int(idx>>10) >= len(t.chunks) {
		return nil
	}
	c := t.chunks[idx>>10].Load()
	if c == nil {
		return nil
	}
	return c[idx&(1<<10-1)].Load()
}

// set runs with Loop.mu held.
func (t *laneTable) set(idx int32, ln *Lane) {
	c := t.chunks[idx>>10].Load()
	if c == nil {
		c = new([1 << 10]atomic.Pointer[Lane])
		t.chunks[idx>>10].Store(c)
	}
	c[idx&(1<<10-1)].Store(ln)
}

const maxLanes = 1 << 22
