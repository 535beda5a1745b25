package login

import (
	"testing"
	"time"
)

// A silent connection's deadline is handshake_timeout plus a random part
// of up to half of it: connections opened together are spread out.
func TestSilentTimeoutSpread(t *testing.T) {
	const base = 5 * time.Second
	lo, hi := 2*base, time.Duration(0)
	for range 1000 {
		d := SilentTimeout(base)
		if d < base || d >= base+base/2 {
			t.Fatalf("%v: outside [%v, %v)", d, base, base+base/2)
		}
		lo, hi = min(lo, d), max(hi, d)
	}
	if hi-lo < base/4 {
		t.Errorf("1,000 deadlines within %v of each other: not spread", hi-lo)
	}
	if d := SilentTimeout(1); d != 1 {
		t.Errorf("SilentTimeout(1ns) = %v", d)
	}
}
