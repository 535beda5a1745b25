package idle

import (
	"context"
	"sync"
	"time"
)

// Budget is a counting semaphore over bytes: the memory all sessions
// together may hold for large client commands (limits.command_memory; 0
// or less: no limit).
type Budget struct {
	Limit int64
	large chan struct{} // one multi-piece command is read at a time
	mu    sync.Mutex
	used  int64
	wake  chan struct{} // closed and replaced when memory is released
	// Wait is how long a command waits for its turn (the large slot, then
	// its bytes) before it is refused with 1041: a timeout, not a hang.
	Wait time.Duration
}

// NewBudget returns a budget of limit bytes.
func NewBudget(limit int64) *Budget {
	return &Budget{Limit: limit, wake: make(chan struct{}), large: make(chan struct{}, 1), Wait: 10 * time.Second}
}

// AcquireLarge takes the one slot for reading a multi-piece command.
func (m *Budget) AcquireLarge(ctx context.Context) error {
	select {
	case m.large <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ReleaseLarge gives the slot back.
func (m *Budget) ReleaseLarge() { <-m.large }

// Acquire waits until n bytes fit or ctx ends. A request larger than the
// whole budget can never fit and fails at once.
func (m *Budget) Acquire(ctx context.Context, n int64) error {
	if m.Limit <= 0 {
		return nil
	}
	for {
		m.mu.Lock()
		if m.used+n <= m.Limit {
			m.used += n
			m.mu.Unlock()
			return nil
		}
		if n > m.Limit {
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

// Held is how many bytes are reserved now.
func (m *Budget) Held() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used
}

// Release gives n bytes back.
func (m *Budget) Release(n int64) {
	if m.Limit <= 0 || n == 0 {
		return
	}
	m.mu.Lock()
	m.used -= n
	close(m.wake)
	m.wake = make(chan struct{})
	m.mu.Unlock()
}
