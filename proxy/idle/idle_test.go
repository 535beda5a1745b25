package idle_test

import (
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/proxy/idle"
)

// The count of parked bytes is net of what unparking sessions took back,
// and stops at zero: sessions that alternate between busy and idle do not
// add up to a return, and sessions parked before a return that unpark and
// park again count anew.
func TestIdleMemoryCountsNet(t *testing.T) {
	var m idle.Memory
	m.Min.Store(1 << 40) // never start a return here
	m.GaveBack(100)
	m.TookBack(60)
	if got := m.Parked.Load(); got != 40 {
		t.Fatalf("after +100 -60: %d", got)
	}
	m.TookBack(1000)
	if got := m.Parked.Load(); got != 0 {
		t.Fatalf("below zero: %d", got)
	}
	for range 1000 { // busy/idle churn
		m.GaveBack(68 << 10)
		m.TookBack(68 << 10)
	}
	if got := m.Parked.Load(); got != 0 {
		t.Fatalf("after churn: %d", got)
	}
}

// The idle watch's deadlines fall on a 100 ms grid, 400-500 ms ahead: idle
// sessions' timers fire together, and a closed backend is still noticed
// within half a second.
func TestWatchDeadlineOnGrid(t *testing.T) {
	base := time.Date(2026, 11, 23, 14, 0, 0, 0, time.UTC)
	for _, off := range []time.Duration{0, time.Nanosecond, 37 * time.Millisecond, 99*time.Millisecond + 999*time.Microsecond, 100 * time.Millisecond, 733 * time.Millisecond} {
		now := base.Add(off)
		dl := idle.WatchDeadline(now)
		if d := dl.Sub(now); d <= idle.BackendWatch-idle.WatchGrid || d > idle.BackendWatch {
			t.Errorf("now+%v: deadline %v ahead, want in (%v, %v]", off, d, idle.BackendWatch-idle.WatchGrid, idle.BackendWatch)
		}
		if dl.UnixNano()%int64(idle.WatchGrid) != 0 {
			t.Errorf("now+%v: deadline %v is not on the %v grid", off, dl, idle.WatchGrid)
		}
	}
}
