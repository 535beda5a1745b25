package proxy

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

// Issue 24: the backend sees what the client does. These tests read the
// server's own counters on a backend of their own (another test's
// connections would move them), directly, not through the proxy.

// globalStatus reads one of the server's global status counters.
func globalStatus(t testing.TB, root *sql.DB, name string) int {
	t.Helper()
	var n string
	var v int
	if err := root.QueryRow("SHOW GLOBAL STATUS LIKE '"+name+"'").Scan(&n, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// threadGone waits until the backend has no thread id (its end is counted
// by then: the server counts an abort before it drops the thread).
func threadGone(t testing.TB, root *sql.DB, id int64, within time.Duration) bool {
	t.Helper()
	_, err := testwait.Until(fmt.Sprintf("thread %d gone", id), func() (struct{}, bool) {
		var n int
		if err := root.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?", id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return struct{}{}, n == 0
	}, testwait.Within(within))
	return err == nil
}

// A client that quits, or a session the proxy ends between commands, ends
// its backend connection with COM_QUIT: Aborted_clients stays where it
// was. A client that vanishes without COM_QUIT counts as aborted, as it
// does directly.
func TestBackendSeesQuit(t *testing.T) {
	b := testdb.Start(t)
	root := b.Open(t, "")
	e := startProxy(t, b.Addr, nil)
	idleProxy := startProxy(t, b.Addr, func(c *testConfig) { c.Limits.IdleTimeout = 300 * time.Millisecond })
	// aborted runs f, waits until the thread it returns is gone and says
	// how much Aborted_clients grew.
	aborted := func(what string, f func() int64) int {
		t.Helper()
		before := globalStatus(t, root, "Aborted_clients")
		id := f()
		if !threadGone(t, root, id, 10*time.Second) {
			t.Fatalf("%s: backend thread %d still there after 10s", what, id)
		}
		return globalStatus(t, root, "Aborted_clients") - before
	}
	quit := func(e *env, params string) func() int64 {
		return func() int64 {
			db, err := sql.Open("mysql", e.dsn("app", "secret", "", params))
			if err != nil {
				t.Fatal(err)
			}
			c, id := backendThread(t, db)
			c.Close()
			db.Close() // COM_QUIT
			return id
		}
	}
	for _, c := range []struct {
		what string
		f    func() int64
	}{
		{"go-sql-driver quits", quit(e, "")},
		{"go-sql-driver quits, compressed (the session's own goroutine)", quit(e, "compress=true")},
		{"idle timeout", func() int64 {
			db, err := sql.Open("mysql", idleProxy.dsn("app", "secret", "", ""))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			c, id := backendThread(t, db)
			defer c.Close()
			return id // the proxy closes it after 300ms
		}},
		{"shutdown", func() int64 {
			p := startProxy(t, b.Addr, nil)
			db, err := sql.Open("mysql", p.dsn("app", "secret", "", ""))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			c, id := backendThread(t, db)
			defer c.Close()
			if err := p.stop(); err != nil {
				t.Fatal(err)
			}
			return id
		}},
	} {
		if n := aborted(c.what, c.f); n != 0 {
			t.Errorf("%s: Aborted_clients +%d on the backend, want 0 (COM_QUIT)", c.what, n)
		}
	}

	// A client that closes its socket without COM_QUIT: as directly.
	vanish := func(addr, user, pass string) func() int64 {
		return func() int64 {
			c := dialRaw(t, addr)
			if p := c.login(user, pass, "", 0, 0); p[0] != 0 {
				t.Fatalf("login: %x", p)
			}
			r := c.query("SELECT CONNECTION_ID()")
			var id int64
			fmt.Sscan(textValue(r[3]), &id)
			c.l.Conn.Close()
			return id
		}
	}
	direct := aborted("a direct client closes without COM_QUIT", vanish(b.Addr, "root", ""))
	if through := aborted("a client closes without COM_QUIT", vanish(e.addr, "app", "secret")); through != direct || direct != 1 {
		t.Errorf("a client that closes without COM_QUIT: Aborted_clients +%d through the proxy, +%d directly; want the same (1)", through, direct)
	}
}

// A client that goes away while its statement runs: the backend stops the
// statement at once (directly MariaDB notices within about 5 s in SLEEP,
// and only when it writes for other statements), on a loop and on the
// session's own goroutine (compression and TLS keep a session there).
func TestClientGoneMidStatement(t *testing.T) {
	b := testdb.Start(t)
	root := b.Open(t, "")
	e := startProxy(t, b.Addr, nil)
	// A command a loop hands to the session's goroutine runs there too.
	handed := startProxy(t, b.Addr, nil, WithInterceptor(handOffSleep{}))
	for _, v := range []struct {
		e      *env
		params string
	}{{e, ""}, {e, "compress=true"}, {e, "tls=skip-verify"}, {handed, ""}} {
		e, params := v.e, v.params
		db := e.open(t, "", params)
		c, id := backendThread(t, db)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		var v int
		err := c.QueryRowContext(ctx, "SELECT SLEEP(60)").Scan(&v) // go-sql-driver closes the socket at the deadline
		cancel()
		if err == nil {
			t.Fatalf("%q: SLEEP(60) returned within 300ms", params)
		}
		c.Close()
		t0 := time.Now()
		if !threadGone(t, root, id, 3*time.Second) {
			var info sql.NullString
			_ = root.QueryRow("SELECT INFO FROM information_schema.PROCESSLIST WHERE ID = ?", id).Scan(&info)
			t.Errorf("%q: the client went away, but its backend thread %d still runs %q 3s later", params, id, info.String)
			continue
		}
		t.Logf("%q: backend thread gone %v after the client", params, time.Since(t0).Round(time.Millisecond))
	}
	for _, e := range []*env{e, handed} {
		testwait.For(t, "the abandoned sessions end", func() bool { cur, _ := e.srv.Sessions(); return cur == 0 })
	}

	// A statement sent just before the client closes completes, as it
	// would directly.
	b.Exec(t, "CREATE DATABASE IF NOT EXISTS hang", "CREATE TABLE hang.t (id INT PRIMARY KEY)")
	for i := range 5 {
		c := loggedIn(t, e.addr, "")
		sendCommands(t, c, queryPkt(fmt.Sprintf("INSERT INTO hang.t VALUES (%d)", i)))
		c.l.Conn.Close()
	}
	testwait.For(t, "the INSERTs sent before each client left reach the table", func() bool {
		var n int
		if err := root.QueryRow("SELECT COUNT(*) FROM hang.t").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 5
	})
}

// handOffSleep sends SLEEP from an event loop to the session's goroutine,
// which relays it.
type handOffSleep struct{ BaseInterceptor }

func (handOffSleep) Query(ctx context.Context, s *Session, sql []byte) (bool, error) {
	if MustNotBlock(ctx) && string(sql) == "SELECT SLEEP(60)" {
		return false, ErrWouldBlock
	}
	return false, nil
}
