//go:build linux

package proxy

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

// Loop tests of idle timeouts and shutdown.

// limits.idle_timeout closes a silent session, on an event loop of each
// size and on the session's goroutine (event_loops -1), and never one that
// keeps sending commands.
func TestIdleTimeout(t *testing.T) {
	for _, loops := range append(runnerCounts, -1) {
		t.Run(fmt.Sprintf("event_loops=%d", loops), func(t *testing.T) {
			e := startProxy(t, sharedDB(t).Addr, func(c *Config) {
				c.Limits.IdleTimeout = 300 * time.Millisecond
				c.EventLoops = loops
			})
			db := e.open(t, "", "")
			db.SetMaxOpenConns(1)
			conn, err := db.Conn(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if err := conn.PingContext(context.Background()); err != nil {
				t.Fatal(err)
			}
			for start := time.Now(); time.Since(start) < 600*time.Millisecond; {
				if err := conn.PingContext(context.Background()); err != nil { // never idle long enough
					t.Fatalf("a session pinging without pause was closed by the idle timeout: %v", err)
				}
			}
			testwait.For(t, "the idle session is closed", func() bool { cur, _ := e.srv.Sessions(); return cur == 0 })
			err = conn.PingContext(context.Background())
			if err == nil || !(errors.Is(err, io.EOF) || errors.Is(err, sql.ErrConnDone) || errors.Is(err, driver.ErrBadConn) ||
				bytes.Contains([]byte(err.Error()), []byte("invalid connection")) || bytes.Contains([]byte(err.Error()), []byte("bad connection"))) {
				t.Fatalf("ping after the idle timeout: %v, want a closed connection", err)
			}
		})
	}
}

// limits.idle_timeout holds while another session keeps the loop busy:
// the silent session is closed. (A runner may still park between pings
// and sweep on its timer; what this asserts is the outcome, not which of
// the two sweeps did it.)
func testLoopIdleTimeoutOnBusyLoop(t *testing.T, runners int) {
	needLoops(t)
	e := startLoopProxy(t, runners, func(c *Config) {
		c.Limits.IdleTimeout = 300 * time.Millisecond
	})
	db := e.open(t, "", "")
	db.SetMaxOpenConns(2)
	idle, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if err := idle.PingContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	busy, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	testwait.For(t, "the silent session closed while the loop stayed busy", func() bool {
		if err := busy.PingContext(context.Background()); err != nil {
			t.Fatal(err)
		}
		cur, _ := e.srv.Sessions()
		return cur == 1
	})
}

// Shutdown twice (an explicit call and the context's) is harmless.
func TestShutdownTwice(t *testing.T) {
	e := startProxy(t, sharedDB(t).Addr, nil)
	db := e.open(t, "", "")
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	_ = e.stop()
}

// Sessions logging in and moving onto the loop while Shutdown drains it:
// every session ends and Shutdown returns in time. A stress test around a
// window a review found (a drain pass meeting a lane listed but not yet
// registered); the window is narrow, so this does not prove its fix.
func testLoopShutdownWhileSessionsArrive(t *testing.T, runners int) {
	e := startLoopProxy(t, runners, nil)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				db, err := sql.Open("mysql", e.dsn("app", "secret", "", "timeout=2s"))
				if err != nil {
					return
				}
				_ = db.Ping()
				db.Close()
			}
		}()
	}
	if loopsOn {
		testwait.For(t, "sessions move onto the loop", func() bool { return e.srv.LoopStats().Moves >= 16 })
	} else {
		testwait.For(t, "sessions log in", func() bool { cur, _ := e.srv.Sessions(); return cur > 0 })
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- e.srv.Shutdown(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Shutdown: %v (sessions were cut off after the grace period)", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Shutdown did not return")
	}
	close(stop)
	wg.Wait()
	if cur, _ := e.srv.Sessions(); cur != 0 {
		t.Fatalf("%d sessions left after Shutdown", cur)
	}
	if st := e.srv.LoopStats(); st.Sessions != 0 {
		t.Fatalf("loop stats after Shutdown: %+v", st)
	}
}
