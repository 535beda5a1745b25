package proxy

import (
	"syscall"
	"time"
)

// The loop's housekeeping: idle sweeps, drain and stop.

// stopping reports whether close has begun.
func (l *loop) stopping() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stop
}

// idleSweep closes lanes idle longer than limits.idle_timeout.
func (l *loop) idleSweep(r *runner) {
	now := time.Now().UnixNano()
	last := l.swept.Load()
	if now-last < int64(l.sweep)/2 || !l.swept.CompareAndSwap(last, now) {
		return // another runner is at it, or just was
	}
	r.now = now
	l.mu.Lock()
	top := l.top
	l.mu.Unlock()
	for i := range top {
		if ln := l.lanes.get(i); ln != nil {
			ln.pend.Or(pendCheck)
			r.serve(ln)
		}
	}
}

// requestDrain asks the loop to close its idle lanes now and the others
// when their responses are through (Server.Shutdown).
func (l *loop) requestDrain() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.drain = true
	if !l.dead.Load() && !l.stop {
		l.wake()
	}
}

// close stops the loop and waits for it (after Shutdown: no lanes left).
func (l *loop) close() {
	l.mu.Lock()
	if !l.stop {
		close(l.quit) // the waiting runners end
	}
	l.stop = true
	runners := l.runners
	l.mu.Unlock()
	// Closing the poller's file wakes it out of the netpoller with an
	// error; it sees stop and ends.
	for _, r := range runners {
		r.file.Close()
	}
	<-l.stopped
	l.mu.Lock()
	if l.evfd >= 0 {
		syscall.Close(l.evfd)
		l.evfd = -1
	}
	l.mu.Unlock()
}
