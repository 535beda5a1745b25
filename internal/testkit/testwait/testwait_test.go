package testwait

import (
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeTB records a Fatal instead of ending the test.
type fakeTB struct {
	testing.TB
	failed string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatal(args ...any) {
	f.failed = args[0].(error).Error()
}

func TestForReturnsOnceTheConditionHolds(t *testing.T) {
	var n atomic.Int32
	go func() {
		for n.Load() < 3 {
			n.Add(1)
			runtime.Gosched()
		}
	}()
	For(t, "three steps", func() bool { return n.Load() >= 3 })
}

func TestValueReturnsTheValueSeen(t *testing.T) {
	calls := 0
	got := Value(t, "the third call", func() (int, bool) { calls++; return calls, calls == 3 })
	if got != 3 {
		t.Fatalf("Value returned %d, want 3", got)
	}
}

func TestTimeoutNamesWhatAndDetail(t *testing.T) {
	f := &fakeTB{}
	start := time.Now()
	For(f, "the moon", func() bool { return false }, Within(30*time.Millisecond),
		Detail(func() string { return "still waning" }))
	if el := time.Since(start); el < 30*time.Millisecond || el > 5*time.Second {
		t.Errorf("gave up after %v, want about 30ms", el)
	}
	if !strings.HasPrefix(f.failed, "timed out after ") || !strings.HasSuffix(f.failed, " waiting for the moon: still waning") {
		t.Errorf("failure message %q", f.failed)
	}
}

func TestUntilReturnsAnError(t *testing.T) {
	if _, err := Until("nothing", func() (int, bool) { return 0, false }, Within(time.Millisecond)); err == nil {
		t.Fatal("Until did not time out")
	}
	if v, err := Until("at once", func() (string, bool) { return "x", true }); err != nil || v != "x" {
		t.Fatalf("Until = %q, %v", v, err)
	}
}
