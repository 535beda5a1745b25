package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/internal/nonblock"
	"github.com/leafproxy/leafproxy/proxy"
	"github.com/leafproxy/leafproxy/rewriter"
)

// Tests of limits.plan_memory (planmem.go) and limits.max_plan_depth as
// the engine applies them.

func sqlCode(err error) uint16 {
	var se proxy.SQLError
	if errors.As(err, &se) {
		return se.Code()
	}
	return 0
}

func TestPlanBudget(t *testing.T) {
	ctx := context.Background()
	m := newPlanBudget(100)
	// Larger than the whole budget: 1041 at once, saying which limit.
	if err := m.acquire(ctx, 101); sqlCode(err) != 1041 || !strings.Contains(err.Error(), "raise limits.plan_memory") {
		t.Fatalf("a statement over the budget: %v", err)
	}
	if err := m.acquire(ctx, 60); err != nil {
		t.Fatal(err)
	}
	// Full: an event loop must not wait.
	if err := m.acquire(nonblock.Context(ctx), 50); !errors.Is(err, proxy.ErrWouldBlock) {
		t.Fatalf("full budget on a loop: %v, want ErrWouldBlock", err)
	}
	// A session's goroutine waits until there is room.
	got := make(chan error, 1)
	go func() { got <- m.acquire(ctx, 50) }()
	for {
		if _, waiting := m.inUse(); waiting == 1 {
			break
		}
		select {
		case err := <-got:
			t.Fatalf("acquired (%v) with the budget full", err)
		case <-time.After(time.Millisecond):
		}
	}
	m.release(60)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if u, _ := m.inUse(); u != 50 {
		t.Fatalf("in use %d, want 50", u)
	}
	// TryAcquire takes only what is free now.
	if m.tryAcquire(51) || !m.tryAcquire(50) || m.tryAcquire(1) {
		t.Fatal("tryAcquire took more than was free, or not what was")
	}
	m.release(50)
	// Or gives up after its wait.
	m.wait = time.Millisecond
	if err := m.acquire(ctx, 60); sqlCode(err) != 1041 || !strings.Contains(err.Error(), "stayed in use") {
		t.Fatalf("a wait that ends: %v", err)
	}
	m.release(50)
	if u, _ := m.inUse(); u != 0 {
		t.Fatalf("in use %d after every release", u)
	}
}

// The engine hands each session's plans the limits: nesting is refused
// with 1473, the budget is charged and given back, and on an event loop a
// full budget is ErrWouldBlock before anything is written.
func TestEnginePlanLimits(t *testing.T) {
	rules, err := rewriter.NewRules([]rewriter.Rule{{Table: "orders", Column: "id", Tag: "order"}})
	if err != nil {
		t.Fatal(err)
	}
	e := New(&counter{next: 1000}, rules, WithPlanLimits(5, 1<<20))
	s := &fakeSession{db: "shop", columns: map[string][][2]string{"orders": {{"id", "bigint"}, {"v", "int"}}}}
	ctx := context.Background()
	deep := "INSERT INTO orders SET v = ((((((1))))))"
	if _, err := e.queryText(ctx, s, []byte(deep)); sqlCode(err) != rewriter.CodeTooDeep {
		t.Fatalf("%s: %v, want 1473", deep, err)
	}
	if handled, err := e.queryText(ctx, s, []byte("INSERT INTO orders SET v = (((((1)))))")); err != nil || !handled {
		t.Fatalf("at the limit: handled=%v err=%v", handled, err)
	}
	if u, _ := e.plans.inUse(); u != 0 {
		t.Fatalf("%d bytes of plan memory held after planning", u)
	}
	// 3,000 tokens: 1.5 MiB, more than the whole 1 MiB budget.
	big := "SELECT NEXTVAL('order')" + strings.Repeat("+1", 1500)
	if _, err := e.queryText(ctx, s, []byte(big)); sqlCode(err) != 1041 {
		t.Fatalf("a statement over plan_memory: %v, want 1041", err)
	}
	// The budget in use by others: a loop hands the statement back.
	if err := e.plans.acquire(ctx, 1<<20); err != nil {
		t.Fatal(err)
	}
	relayed := len(s.relayed)
	if handled, err := onLoop(t, s, nil, false, func(ctx context.Context) (bool, error) {
		return e.queryText(ctx, s, []byte("INSERT INTO orders SET v = 1"))
	}); !errors.Is(err, proxy.ErrWouldBlock) || handled {
		t.Fatalf("full budget on a loop: handled=%v err=%v", handled, err)
	}
	if len(s.relayed) != relayed || len(s.wrote) != 0 {
		t.Fatalf("relayed %q before handing back", s.relayed[relayed:])
	}
	e.plans.release(1 << 20)
	// Without the option: the defaults.
	d := New(&counter{}, nil)
	if d.plans.limit != rewriter.DefaultPlanMemory || d.maxDepth != 0 {
		t.Fatalf("defaults: %d bytes, depth %d", d.plans.limit, d.maxDepth)
	}
}
