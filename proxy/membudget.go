package proxy

import (
	"context"
	"sync"
	"time"
)

// memBudget is a counting semaphore over bytes: the memory all sessions
// together may hold for large client commands.
type memBudget struct {
	limit int64
	large chan struct{} // one multi-piece command is read at a time
	mu    sync.Mutex
	used  int64
	wake  chan struct{} // closed and replaced when memory is released
	// wait is how long a command waits for its turn (the large slot, then
	// its bytes) before it is refused with 1041: a timeout, not a hang.
	wait time.Duration
}

func newMemBudget(limit int64) *memBudget {
	return &memBudget{limit: limit, wake: make(chan struct{}), large: make(chan struct{}, 1), wait: 10 * time.Second}
}

// acquireLarge takes the one slot for reading a multi-piece command.
func (m *memBudget) acquireLarge(ctx context.Context) error {
	select {
	case m.large <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *memBudget) releaseLarge() { <-m.large }

// acquire waits until n bytes fit or ctx ends. A request larger than the
// whole budget can never fit and fails at once.
func (m *memBudget) acquire(ctx context.Context, n int64) error {
	if m.limit <= 0 {
		return nil
	}
	for {
		m.mu.Lock()
		if m.used+n <= m.limit {
			m.used += n
			m.mu.Unlock()
			return nil
		}
		if n > m.limit {
			m.mu.Unlock()
			return context.DeadlineExceeded
		}
		wake := m.wake
		m.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// held is how many bytes are reserved now.
func (m *memBudget) held() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used
}

func (m *memBudget) release(n int64) {
	if m.limit <= 0 || n == 0 {
		return
	}
	m.mu.Lock()
	m.used -= n
	close(m.wake)
	m.wake = make(chan struct{})
	m.mu.Unlock()
}
