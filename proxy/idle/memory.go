package idle

import (
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"time"
)

// Returning idle sessions' memory to the operating system, so that an
// idle connection costs little more than its goroutine. A session silent
// for BackendWatch parks: its buffers go to sync.Pools. Pooled buffers are freed only by
// the second GC after their last use, and freed pages go back to the OS
// only as the runtime's scavenger gets to them; a proxy whose clients
// went idle allocates nothing, so no GC comes for the two minutes of the
// runtime's forced cycle and RSS stays at its busy size. So when a burst
// of parking has given back idleReturnMin bytes, once parking has been
// quiet for idleReturnQuiet (the burst is over), the proxy runs two
// collections and returns the free pages (debug.FreeOSMemory), at most
// once per idleReturnEvery. What unparking sessions take back is
// subtracted, and parking that does not quiet down within idleReturnWait
// is left alone: sessions that alternate between busy and idle keep their
// buffers in use, and returning those pages would only fault them in again.
const (
	idleReturnMin   = 16 << 20
	idleReturnQuiet = 250 * time.Millisecond
	idleReturnWait  = 5 * time.Second // wait no longer for parking to quiet down
	idleReturnEvery = 10 * time.Second
)

// Memory counts what idle sessions gave back and returns it to the
// operating system when a burst of parking is over (one per server).
type Memory struct {
	Parked  atomic.Int64 // bytes parked since the last return
	running atomic.Bool  // a returnWhenQuiet is waiting or working
	last    atomic.Int64 // unix nanoseconds of the last return
	// Done ends a return's wait (the server's shutdown); set before use.
	Done    <-chan struct{}
	Returns atomic.Int64 // how many returns ran (tests)
	Parks   atomic.Int64 // how many times a session parked its buffers (tests)
	Min     atomic.Int64 // idleReturnMin when 0; tests lower it
}

func (m *Memory) threshold() int64 {
	if v := m.Min.Load(); v > 0 {
		return v
	}
	return idleReturnMin
}

// TookBack records n bytes of buffers an idle session took back from the
// pools: busy sessions that park and unpark in turn give nothing back.
// The count stops at zero: after a return, sessions that were parked then
// unpark and park again owe nothing.
func (m *Memory) TookBack(n int) {
	for n > 0 {
		v := m.Parked.Load()
		if m.Parked.CompareAndSwap(v, max(v-int64(n), 0)) {
			return
		}
	}
}

// GaveBack records n bytes of buffers parked by a session.
func (m *Memory) GaveBack(n int) {
	if n <= 0 || m.Parked.Add(int64(n)) < m.threshold() || m.running.Load() || !m.running.CompareAndSwap(false, true) {
		return
	}
	go m.returnWhenQuiet()
}

func (m *Memory) returnWhenQuiet() {
	defer m.running.Store(false)
	sleep := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-m.Done:
			return false
		}
	}
	if last := m.last.Load(); last != 0 {
		if wait := time.Until(time.Unix(0, last).Add(idleReturnEvery)); wait > 0 && !sleep(wait) {
			return
		}
	}
	quiet := false
	for waited := time.Duration(0); waited < idleReturnWait && !quiet; waited += idleReturnQuiet {
		before := m.Parked.Load()
		if !sleep(idleReturnQuiet) {
			return
		}
		quiet = m.Parked.Load()-before < m.threshold()/16
	}
	if !quiet || m.Parked.Load() < m.threshold() {
		// Sessions keep parking and unparking (a busy proxy with pooled
		// clients), or took the buffers back: the pools are in use, and
		// returning their pages would only fault them in again.
		m.Parked.Store(0)
		return
	}
	m.Parked.Store(0)
	runtime.GC()         // pooled buffers move to the pools' victim caches
	debug.FreeOSMemory() // a second GC frees them; free pages go back to the OS
	m.last.Store(time.Now().UnixNano())
	m.Returns.Add(1)
}
