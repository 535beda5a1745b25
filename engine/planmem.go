package engine

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/leafproxy/leafproxy/proxy"
	"github.com/leafproxy/leafproxy/rewriter"
)

// Option configures an Engine (New).
type Option func(*Engine)

// WithPlanLimits bounds what planning statements may cost
// (limits.max_plan_depth, limits.plan_memory; rewriter/parse.go): the
// deepest nesting of parentheses in a statement the parser reads (0:
// rewriter.DefaultMaxDepth) and the memory all sessions' planning may take
// at once (0: rewriter.DefaultPlanMemory).
func WithPlanLimits(maxDepth int, memory int64) Option {
	return func(e *Engine) {
		e.maxDepth = maxDepth
		if memory > 0 {
			e.plans = newPlanBudget(memory)
		}
	}
}

// planWait is how long a statement waits for its share of the plan
// budget on a session's goroutine (as a large command waits for
// limits.command_memory).
const planWait = 10 * time.Second

// planBudget is limits.plan_memory: a counting semaphore over the bytes
// the sessions' planning may take at once (rewriter.Budget, per session
// through planMemory).
type planBudget struct {
	limit int64
	wait  time.Duration // planWait
	mu    sync.Mutex
	used  int64
	wake  chan struct{} // closed and replaced when memory is released
	// waiting counts the sessions waiting for memory: a release wakes
	// them (and only then makes a new channel).
	waiting int
}

func newPlanBudget(limit int64) *planBudget {
	return &planBudget{limit: limit, wait: planWait, wake: make(chan struct{})}
}

// acquire takes n bytes, waiting for them up to planWait; a statement
// larger than the whole budget fails at once, and on an event loop (ctx
// must not block) a wait is proxy.ErrWouldBlock: the goroutine waits.
func (m *planBudget) acquire(ctx context.Context, n int64) error {
	if n > m.limit {
		return &planMemoryError{msg: fmt.Sprintf("leafproxy: this statement is too large for the proxy to plan: "+
			"it may take %d MiB, more than limits.plan_memory (%d MiB) allows all statements being planned at once; "+
			"split it into smaller statements, or raise limits.plan_memory", mibUp(n), m.limit>>20)}
	}
	var timer *time.Timer
	for {
		m.mu.Lock()
		if m.used+n <= m.limit {
			m.used += n
			m.mu.Unlock()
			return nil
		}
		if proxy.MustNotBlock(ctx) {
			m.mu.Unlock()
			return proxy.ErrWouldBlock
		}
		wake := m.wake
		m.waiting++
		m.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(m.wait)
			defer timer.Stop()
		}
		var timedOut bool
		var err error
		select {
		case <-wake:
		case <-timer.C:
			timedOut = true
		case <-ctx.Done():
			err = ctx.Err()
		}
		m.mu.Lock()
		m.waiting--
		m.mu.Unlock()
		if err != nil {
			return err
		}
		if timedOut {
			return &planMemoryError{msg: fmt.Sprintf("leafproxy: out of memory for planning: limits.plan_memory (%d MiB) "+
				"stayed in use by other large statements the proxy parses for %v; try again, or raise limits.plan_memory", m.limit>>20, m.wait)}
		}
	}
}

// tryAcquire takes n bytes if they are free now.
func (m *planBudget) tryAcquire(n int64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.used+n > m.limit {
		return false
	}
	m.used += n
	return true
}

func (m *planBudget) release(n int64) {
	m.mu.Lock()
	m.used -= n
	if m.waiting > 0 {
		close(m.wake)
		m.wake = make(chan struct{})
	}
	m.mu.Unlock()
}

// inUse is what is reserved now and how many wait (tests).
func (m *planBudget) inUse() (used int64, waiting int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used, m.waiting
}

func mibUp(n int64) int64 { return (n + 1<<20 - 1) >> 20 }

// gcAfter: a statement that held this much plan memory (a many-row
// INSERT of ~200,000 rows and more) is followed by a garbage collection,
// so that the next one, which may have waited for the budget, reuses its
// memory rather than growing the heap past it (the GC's headroom doubled
// the RSS of four 1,000,000-row INSERTs in turn).
const gcAfter = 32 << 20

// releasePlan gives back what the session's last plan held
// (Planner.Release), after the collection: sessions waiting for the
// budget start once it is done. An event loop does not wait for it.
func (st *state) releasePlan(ctx context.Context) {
	if st.planner.Held() >= gcAfter {
		if proxy.MustNotBlock(ctx) {
			go runtime.GC()
		} else {
			runtime.GC()
		}
	}
	st.planner.Release()
}

// planMemory is a session's rewriter.Budget: the engine's budget, waited
// on with the context of the call under way (state.ctx).
type planMemory struct {
	budget  *planBudget
	session *state
}

var _ rewriter.Budget = planMemory{}

func (p planMemory) Acquire(n int64) error {
	ctx := p.session.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	return p.budget.acquire(ctx, n)
}

func (p planMemory) TryAcquire(n int64) bool { return p.budget.tryAcquire(n) }

func (p planMemory) Release(n int64) { p.budget.release(n) }

// planMemoryError is 1041 (ER_OUT_OF_RESOURCES, HY000): a statement the
// plan budget cannot take.
type planMemoryError struct{ msg string }

func (e *planMemoryError) Error() string    { return e.msg }
func (e *planMemoryError) Code() uint16     { return 1041 }
func (e *planMemoryError) SQLState() string { return "HY000" }
