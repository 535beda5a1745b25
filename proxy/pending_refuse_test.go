package proxy

import (
	"net"
	"sync"
	"testing"
)

// refuseNew: with the budget full, a newcomer of the host holding the most
// pending handshakes is refused in the accept loop; any other host's is
// let in (add then closes one of the top host's).
func TestPendingRefuseNew(t *testing.T) {
	var p pendingHandshakes
	var mu sync.Mutex
	conn := func() net.Conn { a, b := net.Pipe(); t.Cleanup(func() { a.Close(); b.Close() }); return a }
	for range 3 {
		p.add(conn(), "flood", 4, &mu)
	}
	p.add(conn(), "other", 4, &mu)
	if !p.refuseNew("flood", 4, &mu) {
		t.Error("a newcomer of the host holding the most, budget full: not refused")
	}
	if p.refuseNew("other", 4, &mu) || p.refuseNew("new", 4, &mu) {
		t.Error("another host's newcomer refused")
	}
	if p.refuseNew("flood", 0, &mu) || p.refuseNew("flood", 5, &mu) {
		t.Error("refused with room in the budget")
	}
	if !p.add(conn(), "other", 4, &mu) || len(p.byHost["flood"]) != 2 {
		t.Errorf("another host's newcomer did not take one of the flood's: %d", len(p.byHost["flood"]))
	}
}
