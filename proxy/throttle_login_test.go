package proxy

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

var registerFrom2 sync.Once

// from2 is a go-sql-driver network ("from2(host:port)") that connects from
// 127.0.0.2: a second client host on one machine (Linux routes all of
// 127.0.0.0/8 to loopback).
func from2DSN(e *env, user, pass string) string {
	registerFrom2.Do(func() {
		mysql.RegisterDialContext("from2", func(ctx context.Context, addr string) (net.Conn, error) {
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
			return d.DialContext(ctx, "tcp", addr)
		})
	})
	c := mysql.NewConfig()
	c.User, c.Passwd, c.Net, c.Addr = user, pass, "from2", e.addr
	c.Timeout = 5 * time.Second
	return c.FormatDSN()
}

// loginCode opens one connection with dsn and reports the MySQL error number
// (0 for a successful login).
func loginCode(t *testing.T, dsn string) uint16 {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Ping()
	var me *mysql.MySQLError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &me):
		return me.Number
	}
	t.Fatalf("login: %v", err)
	return 0
}

// TestLoginThrottle: 200 wrong-password logins from 127.0.0.1 get 10
// checks (limits.login_failures) and then 1129 without one, in well under
// the time the checks would take; meanwhile 127.0.0.2 logs in at normal
// speed, and its own wrong password is still answered 1045. The counters
// say what happened.
func TestLoginThrottle(t *testing.T) {
	e := startProxy(t, sharedDB(t).Addr, func(c *testConfig) {
		c.Limits.LoginFailures = 10
		c.Limits.LoginFailureInterval = time.Minute
	})
	var other sync.WaitGroup
	var otherSlowest atomic.Int64
	var otherErr atomic.Value
	stop := make(chan struct{})
	other.Add(1)
	go func() {
		defer other.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			start := time.Now()
			db, _ := sql.Open("mysql", from2DSN(e, "app", "secret"))
			err := db.Ping()
			db.Close()
			if err != nil {
				otherErr.Store(err)
				return
			}
			if d := int64(time.Since(start)); d > otherSlowest.Load() {
				otherSlowest.Store(d)
			}
		}
	}()
	counts := map[uint16]int{}
	start := time.Now()
	for range 200 {
		counts[loginCode(t, e.dsn("app", "wrong", "", ""))]++
	}
	elapsed := time.Since(start)
	close(stop)
	other.Wait()
	t.Logf("200 wrong-password logins from 127.0.0.1 in %v: %v", elapsed.Round(time.Millisecond), counts)
	if counts[1045] != 10 || counts[1129] != 190 {
		t.Errorf("answers %v, want 10 x 1045 then 190 x 1129", counts)
	}
	if err := otherErr.Load(); err != nil {
		t.Fatalf("127.0.0.2 could not log in during the attack: %v", err)
	}
	if slow := time.Duration(otherSlowest.Load()); slow > time.Second {
		t.Errorf("127.0.0.2's slowest login took %v", slow)
	}
	// The blocked host is refused even with the right password; the other
	// host's wrong password is checked (1045), not refused.
	if code := loginCode(t, e.dsn("app", "secret", "", "")); code != 1129 {
		t.Errorf("right password from the blocked host: %d, want 1129", code)
	}
	if code := loginCode(t, from2DSN(e, "app", "wrong")); code != 1045 {
		t.Errorf("wrong password from 127.0.0.2: %d, want 1045", code)
	}
	st := e.srv.LoginStats()
	if st.Failures != 11 || st.Refused != 191 || st.Blocks != 1 || st.BlockedHosts != 1 || st.Hosts != 2 {
		t.Errorf("stats %+v", st)
	}
}

// TestLoginThrottleExpires: a blocked host logs in again once its block is
// over (the host is never locked out for good), and a failure right after
// blocks it again.
func TestLoginThrottleExpires(t *testing.T) {
	e := startProxy(t, sharedDB(t).Addr, func(c *testConfig) {
		c.Limits.LoginFailures = 3
		c.Limits.LoginFailureInterval = 300 * time.Millisecond
	})
	for range 3 {
		if code := loginCode(t, e.dsn("app", "wrong", "", "")); code != 1045 {
			t.Fatalf("wrong password: %d", code)
		}
	}
	if code := loginCode(t, e.dsn("app", "secret", "", "")); code != 1129 {
		t.Fatalf("after 3 failures: %d, want 1129", code)
	}
	testwait.For(t, "the login accepted after a 300 ms block", func() bool { return loginCode(t, e.dsn("app", "secret", "", "")) == 0 })
	if code := loginCode(t, e.dsn("app", "wrong", "", "")); code != 1045 {
		t.Fatalf("first failure after the block: %d, want 1045", code)
	}
	if code := loginCode(t, e.dsn("app", "secret", "", "")); code != 1129 {
		t.Fatalf("after a failure right after the block: %d, want 1129", code)
	}
}
