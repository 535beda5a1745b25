package frontdoor_test

import (
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/leafproxy/leafproxy/proxy/frontdoor"
)

// Session ids start above SessionIDBase, apart from backend thread ids; a
// connection not greeted yet gets a new one and is counted as accepted.
func TestSessionIDs(t *testing.T) {
	var accepted atomic.Uint64
	d := &frontdoor.Door{Accepted: &accepted}
	d.Init()
	a, b := d.SessionID(nil), d.SessionID(nil)
	if a != frontdoor.SessionIDBase+1 || b != a+1 || accepted.Load() != 2 {
		t.Fatalf("ids %d, %d, accepted %d: want %d, %d, 2", a, b, accepted.Load(), frontdoor.SessionIDBase+1, frontdoor.SessionIDBase+2)
	}
}

// Listen takes over a Unix socket file a dead process left behind, and
// refuses one still served.
func TestListenUnixSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "proxy.sock")
	l, err := frontdoor.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := frontdoor.Listen(path); err == nil {
		t.Fatal("a second Listen on a served socket succeeded")
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close() // the file stays, as a dead process leaves it
	l, err = frontdoor.Listen(path)
	if err != nil {
		t.Fatalf("Listen on a stale socket file: %v", err)
	}
	l.Close()
}
