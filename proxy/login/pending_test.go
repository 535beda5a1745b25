package login

import (
	"net"
	"slices"
	"sync"
	"testing"
)

// A full budget drops the oldest connection of the host holding the
// most; removing from the front, the middle or the end keeps the rest in
// order (the oldest is dropped without a copy).
func TestPendingDropOrder(t *testing.T) {
	var mu sync.Mutex
	var p Pending
	var conns []net.Conn
	for range 10 {
		a, b := net.Pipe()
		defer b.Close()
		conns = append(conns, a)
	}
	for _, c := range conns[:6] {
		if p.Add(c, "flood", 7, &mu) {
			t.Fatal("dropped below the budget")
		}
	}
	if p.Add(conns[6], "other", 7, &mu) {
		t.Fatal("dropped below the budget")
	}
	// Full: the flooding host gives up its oldest, twice.
	for _, c := range conns[7:9] {
		if !p.Add(c, "flood", 7, &mu) {
			t.Fatal("nothing dropped from a full budget")
		}
	}
	order := func(host string) []net.Conn {
		var out []net.Conn
		for _, pc := range p.byHost[host] {
			out = append(out, pc.C)
		}
		return out
	}
	if want := append(slices.Clone(conns[2:6]), conns[7:9]...); !slices.Equal(order("flood"), want) {
		t.Fatalf("flood holds %v, want %v", order("flood"), want)
	}
	p.Remove(conns[3], "flood", &mu) // near the front
	p.Remove(conns[7], "flood", &mu) // near the end
	if want := []net.Conn{conns[2], conns[4], conns[5], conns[8]}; !slices.Equal(order("flood"), want) {
		t.Fatalf("flood holds %v, want %v", order("flood"), want)
	}
	if p.n != 5 || len(p.byHost["other"]) != 1 {
		t.Fatalf("%d held, %d of the other host", p.n, len(p.byHost["other"]))
	}
	if p.Add(conns[9], "flood", 7, &mu) || p.n != 6 {
		t.Fatalf("a room left, yet dropped or miscounted (%d held)", p.n)
	}
}
