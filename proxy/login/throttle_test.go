package login_test

import (
	"net"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/proxy/login"
)

// TestThrottleBudget: a host spends its burst, is blocked for interval,
// each failure right after a block doubles the block up to maxBlock, and a
// bucket that has filled again forgives it; other hosts are untouched.
func TestThrottleBudget(t *testing.T) {
	const iv = time.Second
	th := login.NewThrottle(3, iv, 5*time.Second, 100)
	now := time.Unix(1000, 0)
	for i := 1; i <= 2; i++ {
		if d := th.Fail("a", now); d != 0 {
			t.Fatalf("failure %d blocked for %v", i, d)
		}
	}
	if d := th.Fail("a", now); d != iv {
		t.Fatalf("third failure: blocked %v, want %v", d, iv)
	}
	if w, b := th.Blocked("a", now.Add(iv/2)); !b || w != iv/2 {
		t.Fatalf("during the block: %v %v", w, b)
	}
	if _, b := th.Blocked("b", now); b {
		t.Fatal("another host is blocked")
	}
	// Right after each block, one failure blocks again, twice as long.
	at := now.Add(iv)
	for _, want := range []time.Duration{2 * iv, 4 * iv, 5 * iv, 5 * iv} {
		if _, b := th.Blocked("a", at); b {
			t.Fatalf("still blocked at the end of the block (%v)", at.Sub(now))
		}
		d := th.Fail("a", at)
		if d != want {
			t.Fatalf("block %v, want %v", d, want)
		}
		at = at.Add(d)
	}
	// A full bucket (3 intervals of calm after the block) forgives.
	at = at.Add(3 * iv)
	if d := th.Fail("a", at); d != 0 {
		t.Fatalf("after the bucket refilled: blocked %v", d)
	}
	if got := th.Refused(); got != 1 {
		t.Errorf("refused %d, want 1", got)
	}
	if th := login.NewThrottle(-1, iv, iv, 10); th != nil {
		t.Error("a negative budget must turn the throttle off")
	}
}

// TestThrottleTableBounded: 200,000 hosts failing once each leave at
// most maxHosts entries.
func TestThrottleTableBounded(t *testing.T) {
	th := login.NewThrottle(2, time.Millisecond, time.Hour, 1000)
	now := time.Unix(1000, 0)
	th.Fail("evil", now)
	th.Fail("evil", now) // blocked for a millisecond, strike 1
	for i := range 200_000 {
		th.Fail(net.IPv4(10, byte(i>>16), byte(i>>8), byte(i)).String(), now.Add(time.Duration(i)*time.Microsecond))
	}
	if n := th.HostsTracked(); n > 1000 {
		t.Fatalf("%d hosts tracked, bound 1000", n)
	}
}

func TestHostKey(t *testing.T) {
	for _, tc := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.ParseIP("127.0.0.2"), Port: 5}, "127.0.0.2"},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:10.0.0.1"), Port: 5}, "10.0.0.1"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:aaaa::1"), Port: 5}, "2001:db8:1:2::/64"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:bbbb::9"), Port: 7}, "2001:db8:1:2::/64"},
		{&net.UnixAddr{Name: "/tmp/s", Net: "unix"}, "localhost"},
	} {
		if got := login.HostKey(tc.addr); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.addr, got, tc.want)
		}
	}
}
