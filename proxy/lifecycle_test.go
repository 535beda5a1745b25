package proxy

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
	"github.com/leafproxy/leafproxy/proxy/backend"
)

func TestBackendDownAtLogin(t *testing.T) {
	// A closed port: nothing listens there.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	e := startProxy(t, dead, nil)
	db := e.open(t, "", "")
	err = db.Ping()
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != backend.ErrUnreachable || !strings.Contains(me.Message, dead) {
		t.Fatalf("login with backend down: %v, want 1429 naming %s", err, dead)
	}
	// The proxy itself stays up: other clients still get its handshake and
	// the same clear error.
	db2 := e.open(t, "", "")
	if err := db2.Ping(); !errors.As(err, &me) || me.Number != backend.ErrUnreachable {
		t.Fatalf("second login: %v", err)
	}
}

func TestBackendStoppedThenBack(t *testing.T) {
	s := testdb.Start(t)
	e := startProxy(t, s.Addr, nil)
	s.Stop(t)
	db := e.open(t, "", "")
	var me *mysql.MySQLError
	if err := db.Ping(); !errors.As(err, &me) || me.Number != backend.ErrUnreachable {
		t.Fatalf("login with backend stopped: %v, want 1429", err)
	}
	s.Restart(t)
	db2 := e.open(t, "", "")
	if err := db2.Ping(); err != nil {
		t.Fatalf("login after backend came back: %v", err)
	}
}

func TestBackendKilledMidSession(t *testing.T) {
	s := testdb.Start(t)
	e := startProxy(t, s.Addr, nil)
	db := e.open(t, "", "")
	db.SetMaxIdleConns(1)
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := conn.ExecContext(ctx, "SELECT SLEEP(30)")
		done <- err
	}()
	waitForQueryOn(t, s, "SELECT SLEEP(30)")
	s.Kill(t)
	select {
	case err := <-done:
		var me *mysql.MySQLError
		if err == nil {
			t.Fatal("query survived a killed backend")
		}
		if errors.As(err, &me) && me.Number != errBackendLost {
			t.Fatalf("killed backend: %v, want 1158 or a closed connection", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("client not told about the lost backend")
	}
	s.Restart(t)
	db2 := e.open(t, "", "")
	var one int
	if err := db2.QueryRow("SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("new session after restart: %v", err)
	}
}

func TestManyConnections(t *testing.T) {
	e := startProxy(t, sharedDB(t).Addr, nil)
	const n = 500
	var wg sync.WaitGroup
	errs := make(chan error, n)
	conns := make(chan *sql.DB, n)
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			db, err := sql.Open("mysql", e.dsn("app", "secret", "", ""))
			if err != nil {
				errs <- err
				return
			}
			var v int
			if err := db.QueryRow("SELECT 1").Scan(&v); err != nil || v != 1 {
				errs <- err
				db.Close()
				return
			}
			conns <- db // hold it open until all are up
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("connection failed: %v", err)
	}
	if got := e.srv.active.Load(); got != n {
		t.Fatalf("%d sessions open, want %d", got, n)
	}
	close(conns)
	for db := range conns {
		db.Close()
	}
	testwait.For(t, "every session to end after its client closed", func() bool { return e.srv.active.Load() == 0 },
		testwait.Detail(func() string { return fmt.Sprintf("%d sessions still open", e.srv.active.Load()) }))
}

func TestMaxConnections(t *testing.T) {
	e := startProxy(t, sharedDB(t).Addr, func(c *testConfig) { c.Limits.MaxConnections = 2 })
	db := e.open(t, "", "")
	db.SetMaxIdleConns(0) // Conn.Close really closes
	ctx := context.Background()
	c1, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	c2, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	extra := e.open(t, "", "")
	var me *mysql.MySQLError
	if err := extra.Ping(); !errors.As(err, &me) || me.Number != 1040 {
		t.Fatalf("third connection: %v, want 1040", err)
	}
	c2.Close()
	testwait.For(t, "the slot freed after a client left", func() bool { return extra.Ping() == nil })
}

func TestShutdownWithStatementsInFlight(t *testing.T) {
	// A grace far above what the shutdown should take, so that "an idle
	// session kept it waiting" (the whole grace) stays apart from a slow
	// shutdown on a loaded machine.
	e := startProxy(t, sharedDB(t).Addr, func(c *testConfig) { c.Shutdown.Grace = testDuration(60 * time.Second) })
	busy := e.open(t, "", "")
	idle := e.open(t, "", "")
	ctx := context.Background()
	idleConn, err := idle.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer idleConn.Close()
	if err := idleConn.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	result := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		conn, err := busy.Conn(ctx)
		if err != nil {
			result <- err
			return
		}
		defer conn.Close()
		close(started)
		var v int
		err = conn.QueryRowContext(ctx, "SELECT SLEEP(1)").Scan(&v)
		result <- err
	}()
	<-started
	waitForQuery(t, "SELECT SLEEP(1)")
	t0 := time.Now()
	stopped := make(chan error, 1)
	go func() { stopped <- e.stop() }()
	testwait.For(t, "the listener closes while a statement is in flight", func() bool {
		c, err := net.DialTimeout("tcp", e.addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	if err := <-result; err != nil {
		t.Fatalf("statement in flight cut off: %v", err)
	}
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Serve did not return within grace")
	}
	if d := time.Since(t0); d > 30*time.Second {
		t.Fatalf("shutdown took %v: idle session kept it waiting", d)
	}
	if err := idleConn.PingContext(ctx); err == nil {
		t.Fatal("idle session still open after shutdown")
	}
}

// Statements still running when the grace period ends are cut off.
func TestShutdownGraceExpires(t *testing.T) {
	e := startProxy(t, sharedDB(t).Addr, func(c *testConfig) { c.Shutdown.Grace = testDuration(500 * time.Millisecond) })
	db := e.open(t, "", "")
	result := make(chan error, 1)
	go func() {
		_, err := db.Exec("SELECT SLEEP(120)")
		result <- err
	}()
	waitForQuery(t, "SELECT SLEEP(120)")
	t0 := time.Now()
	_ = e.stop()
	// Not cut off, it would run for 120 s; the bound is wide for a loaded
	// machine.
	if d := time.Since(t0); d > 60*time.Second {
		t.Fatalf("Serve returned after %v, grace was 500ms", d)
	}
	select {
	case err := <-result:
		if err == nil {
			t.Fatal("long statement reported success after forced shutdown")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("client of a cut-off session still waiting")
	}
}
