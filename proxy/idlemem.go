package proxy

import (
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"time"
)

// Returning idle sessions' memory to the operating system (issue 11: 1,000
// idle connections under 64 KB each). A session silent for backendWatch
// parks: its buffers go to sync.Pools. Pooled buffers are freed only by
// the second GC after their last use, and freed pages go back to the OS
// only as the runtime's scavenger gets to them; a proxy whose clients
// went idle allocates nothing, so no GC comes for the two minutes of the
// runtime's forced cycle and RSS stays at its busy size. So when a burst
// of parking has given back idleReturnMin bytes, once parking has been
// quiet for idleReturnQuiet (the burst is over), the proxy runs two
// collections and returns the free pages (debug.FreeOSMemory), at most
// once per idleReturnEvery. Busy sessions never park, so a busy proxy
// never gets here more than that.
const (
	idleReturnMin   = 16 << 20
	idleReturnQuiet = 250 * time.Millisecond
	idleReturnWait  = 5 * time.Second // wait no longer for parking to quiet down
	idleReturnEvery = 10 * time.Second
)

type idleMemory struct {
	parked  atomic.Int64 // bytes parked since the last return
	running atomic.Bool  // a returnWhenQuiet is waiting or working
	last    atomic.Int64 // unix nanoseconds of the last return
	done    chan struct{}
	returns atomic.Int64 // how many returns ran (tests)
	min     int64        // idleReturnMin; tests lower it
}

func (m *idleMemory) threshold() int64 {
	if m.min > 0 {
		return m.min
	}
	return idleReturnMin
}

// gaveBack records n bytes of buffers parked by a session.
func (m *idleMemory) gaveBack(n int) {
	if n <= 0 || m.parked.Add(int64(n)) < m.threshold() || m.running.Load() || !m.running.CompareAndSwap(false, true) {
		return
	}
	go m.returnWhenQuiet()
}

func (m *idleMemory) returnWhenQuiet() {
	defer m.running.Store(false)
	sleep := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-m.done:
			return false
		}
	}
	if last := m.last.Load(); last != 0 {
		if wait := time.Until(time.Unix(0, last).Add(idleReturnEvery)); wait > 0 && !sleep(wait) {
			return
		}
	}
	for waited := time.Duration(0); waited < idleReturnWait; waited += idleReturnQuiet {
		before := m.parked.Load()
		if !sleep(idleReturnQuiet) {
			return
		}
		if m.parked.Load()-before < m.threshold()/16 {
			break
		}
	}
	m.parked.Store(0)
	runtime.GC()         // pooled buffers move to the pools' victim caches
	debug.FreeOSMemory() // a second GC frees them; free pages go back to the OS
	m.last.Store(time.Now().UnixNano())
	m.returns.Add(1)
}
