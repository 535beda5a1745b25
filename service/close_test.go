package service_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
	"github.com/leafproxy/leafproxy/service"
)

// TestCloseStopsEverything: Close on a service that is serving (a client
// session open, the metrics endpoint probed) ends Serve, and afterwards
// no goroutine the service started remains and both ports are free.
// Close again is a no-op; Serve after Close is refused.
func TestCloseStopsEverything(t *testing.T) {
	backend := testdb.Start(t)
	cfg := testConfig(backend) // a segment and a snowflake tag, metrics on
	before := runtime.NumGoroutine()

	svc, err := service.New(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		svc.Close()
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- svc.Serve(context.Background(), l) }()
	metrics := testwait.Value(t, "the metrics endpoint", func() (net.Addr, bool) { a := svc.MetricsAddr(); return a, a != nil })

	r := &running{Svc: svc, Addr: l.Addr().String()}
	db := r.client(t)
	conn, err := db.Conn(context.Background()) // a session still open at Close
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"SELECT NEXTVAL('t')", "SELECT NEXTVAL('s')"} {
		var id int64
		if err := conn.QueryRowContext(context.Background(), q).Scan(&id); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	resp, err := hc.Get("http://" + metrics.String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	if err := svc.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve after Close: %v", err)
		}
	default:
		t.Fatal("Close returned before Serve did")
	}
	// The open session was ended by the proxy, not by the client.
	var one int
	if err := conn.QueryRowContext(context.Background(), "SELECT 1").Scan(&one); err == nil {
		t.Errorf("a session opened before Close still answers")
	}
	conn.Close()
	db.Close()

	waitGoroutines(t, before)
	for _, addr := range []string{l.Addr().String(), metrics.String()} {
		free, err := net.Listen("tcp", addr)
		if err != nil {
			t.Errorf("port %s still taken after Close: %v", addr, err)
			continue
		}
		free.Close()
	}
	if err := svc.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	l2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Serve(context.Background(), l2); !errors.Is(err, service.ErrClosed) {
		t.Errorf("Serve after Close: %v, want ErrClosed", err)
	}
}

// TestCloseWithoutServe: a service made and closed without serving leaves
// no goroutine behind either (the generators' background loops, the
// pools New opened).
func TestCloseWithoutServe(t *testing.T) {
	backend := testdb.Start(t)
	cfg := testConfig(backend)
	before := runtime.NumGoroutine()
	svc, err := service.New(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h := svc.Health(context.Background()); !h.OK {
		t.Fatalf("health before Close: %+v", h)
	}
	if err := svc.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	waitGoroutines(t, before)
}

// waitGoroutines waits until no more goroutines run than before (the
// ones a closed service stopped may take a moment to return), and fails
// with every goroutine's stack when that does not happen.
func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	testwait.For(t, fmt.Sprintf("no more goroutines after Close than the %d before New", before),
		func() bool { return runtime.NumGoroutine() <= before },
		testwait.Detail(func() string {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			return fmt.Sprintf("%d goroutines:\n%s", runtime.NumGoroutine(), buf)
		}))
}
