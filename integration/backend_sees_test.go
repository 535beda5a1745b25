package integration

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

// Issue 24: the backend sees exactly what the client does. Each test reads
// the server's own counters (Aborted_clients, a session's Questions from
// performance_schema, the process list) on a direct root connection, never
// through the proxy, and compares with what the same client does directly.

// rootDB is a direct root connection to the backend.
func rootDB(t *testing.T, b *testdb.Server) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", b.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func globalStatus(t *testing.T, root *sql.DB, name string) int {
	t.Helper()
	var n string
	var v int
	if err := root.QueryRow("SHOW GLOBAL STATUS LIKE '"+name+"'").Scan(&n, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// threadGone waits up to within until the backend lists no thread id (the
// server has counted the connection's end by then).
func threadGone(t *testing.T, root *sql.DB, id int64, within time.Duration) bool {
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

// questions is thread id's Questions counter, read by root from
// performance_schema (the backend runs with --performance-schema=ON).
func questions(t *testing.T, root *sql.DB, id int64) int {
	t.Helper()
	var v int
	err := root.QueryRow(`SELECT s.VARIABLE_VALUE FROM performance_schema.status_by_thread s
		JOIN performance_schema.threads th USING (THREAD_ID)
		WHERE th.PROCESSLIST_ID = ? AND s.VARIABLE_NAME = 'Questions'`, id).Scan(&v)
	if err != nil {
		t.Fatalf("Questions of thread %d: %v", id, err)
	}
	return v
}

// conn is one connection of db and its backend thread id.
func conn(t *testing.T, db *sql.DB) (*sql.Conn, int64) {
	t.Helper()
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var id int64
	if err := c.QueryRowContext(context.Background(), "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	return c, id
}

// pyBackendSees drives PyMySQL through one scenario (argv: scenario host
// port user password db [arg]) and prints JSON lines.
const pyBackendSees = `
import json, sys, time
import pymysql

scenario, host, port, user, password, db = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
arg = sys.argv[7] if len(sys.argv) > 7 else ""
def connect(**kw):
    return pymysql.connect(host=host, port=port, user=user, password=password, database=db or None,
                           connect_timeout=5, autocommit=True, **kw)
def tid(c):
    cur = c.cursor()
    cur.execute("SELECT CONNECTION_ID()")
    return cur.fetchone()[0]
def code(f):
    try:
        f()
        return 0
    except pymysql.err.MySQLError as e:
        return e.args[0]

if scenario == "quit":
    c = connect()
    t = tid(c)
    c.close()  # COM_QUIT
    print(json.dumps({"tid": t}))
elif scenario == "timeout":
    c = connect(read_timeout=1)
    t = tid(c)
    err = code(lambda: c.cursor().execute("SELECT SLEEP(60)"))  # PyMySQL closes the socket on the timeout
    print(json.dumps({"tid": t, "error": err}))
elif scenario == "questions":
    c = connect()
    t = tid(c)
    cur = c.cursor()
    for q in json.loads(arg):
        cur.execute(q)
        cur.fetchall()
    print(json.dumps({"tid": t}), flush=True)
    sys.stdin.readline()  # the test reads the counter while the session lives
    c.close()
    print(json.dumps({"done": True}))
elif scenario == "kill":
    c = connect()
    cur = c.cursor()
    out = {}
    out["execute_immediate"] = code(lambda: cur.execute("EXECUTE IMMEDIATE 'KILL %s'" % arg))
    out["prepare_from"] = code(lambda: cur.execute("PREPARE s FROM 'KILL %s'" % arg)) or code(lambda: cur.execute("EXECUTE s"))
    out["prepare_concat"] = code(lambda: cur.execute("PREPARE s FROM CONCAT('KILL ', %s)" % arg)) or code(lambda: cur.execute("EXECUTE s"))
    out["kill"] = code(lambda: cur.execute("KILL %s" % arg))
    c.close()
    print(json.dumps(out))
`

// A KILL prepared with the binary protocol (go-sql-driver's db.Prepare, and
// db.Exec with arguments) is mapped and checked as a COM_QUERY KILL; KILL
// in PREPARE ... FROM / EXECUTE IMMEDIATE text is refused (go-sql-driver
// and PyMySQL). A direct connection's thread survives all of it.
func TestBackendSeesPreparedKill(t *testing.T) {
	cp := startClientProxy(t, "kdb", nil)
	root := rootDB(t, cp.b)
	stranger, strangerID := conn(t, root)
	db := cp.lf.open(t, "kdb", nil) // no interpolateParams: arguments mean a prepared statement
	var me *mysql.MySQLError
	is := func(err error, code uint16) bool { return errors.As(err, &me) && me.Number == code }

	k, err := db.Prepare("KILL ?")
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if _, err := k.Exec(strangerID); !is(err, 1094) {
		t.Errorf("prepared KILL ? of a direct connection's thread: %v, want 1094", err)
	}
	if _, err := db.Exec("KILL QUERY ?", strangerID); !is(err, 1094) {
		t.Errorf("KILL QUERY ? with an argument: %v, want 1094", err)
	}
	kn, err := db.Prepare("KILL " + strconv.FormatInt(strangerID, 10))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kn.Exec(); !is(err, 1094) {
		t.Errorf("prepared KILL <n> of a direct connection's thread: %v, want 1094", err)
	}
	kn.Close()
	if _, err := db.Exec(fmt.Sprintf("EXECUTE IMMEDIATE 'KILL %d'", strangerID)); !is(err, 1235) {
		t.Errorf("EXECUTE IMMEDIATE 'KILL %d': %v, want 1235", strangerID, err)
	}
	// PREPARE ... FROM a KILL answers as the server does, but what it
	// prepared can never run the KILL: EXECUTE hears 1235.
	kc, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"PREPARE s FROM 'KILL %d'", "PREPARE s FROM CONCAT('KILL ', %d)"} {
		if _, err := kc.ExecContext(context.Background(), fmt.Sprintf(q, strangerID)); err != nil {
			t.Errorf("%s: %v, want OK as directly", fmt.Sprintf(q, strangerID), err)
		}
		if _, err := kc.ExecContext(context.Background(), "EXECUTE s"); !is(err, 1235) {
			t.Errorf("EXECUTE s after %s: %v, want 1235", fmt.Sprintf(q, strangerID), err)
		}
	}
	kc.Close()
	needPyMySQL(t)
	var py struct {
		ExecuteImmediate int `json:"execute_immediate"`
		PrepareFrom      int `json:"prepare_from"`
		PrepareConcat    int `json:"prepare_concat"`
		Kill             int
	}
	script := writeScript(t, "backend_sees.py", pyBackendSees)
	runJSON(t, 60*time.Second, &py, "", nil, systemPython, script, "kill", cp.host, cp.port, "app", "secret", "kdb", strconv.FormatInt(strangerID, 10))
	if py.ExecuteImmediate != 1235 || py.PrepareFrom != 1235 || py.PrepareConcat != 1235 || py.Kill != 1094 {
		t.Errorf("PyMySQL: EXECUTE IMMEDIATE 'KILL n' %d, PREPARE s FROM 'KILL n' then EXECUTE s %d, PREPARE s FROM CONCAT('KILL ', n) then EXECUTE s %d, KILL n %d; want 1235, 1235, 1235, 1094",
			py.ExecuteImmediate, py.PrepareFrom, py.PrepareConcat, py.Kill)
	}
	if err := stranger.PingContext(context.Background()); err != nil {
		t.Fatalf("the direct connection was killed through the proxy: %v", err)
	}

	// Sessions of the proxy: another proxy user gets 1094; the same user
	// stops the statement (KILL QUERY ?) and then the session (KILL ?).
	victim, victimID := conn(t, cp.lf.open(t, "kdb", nil))
	done := make(chan error, 1)
	go func() {
		var v int
		done <- victim.QueryRowContext(context.Background(), "SELECT SLEEP(60)").Scan(&v)
	}()
	waitRunning(t, cp.b, "SELECT SLEEP(60)")
	c2 := mysql.NewConfig()
	c2.User, c2.Passwd, c2.Net, c2.Addr, c2.DBName = "app2", "pw2", "tcp", cp.lf.addr, "kdb"
	other, err := sql.Open("mysql", c2.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Exec("KILL QUERY ?", victimID); !is(err, 1094) {
		t.Errorf("prepared KILL QUERY ? by another proxy user: %v, want 1094", err)
	}
	kq, err := db.Prepare("KILL QUERY ?")
	if err != nil {
		t.Fatal(err)
	}
	defer kq.Close()
	if _, err := kq.Exec(victimID); err != nil {
		t.Fatalf("prepared KILL QUERY ? of the same user's session: %v", err)
	}
	select {
	case err := <-done:
		if err != nil && !is(err, 1317) {
			t.Fatalf("killed SLEEP: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("prepared KILL QUERY ? did not stop the statement")
	}
	if _, err := k.Exec(victimID); err != nil {
		t.Fatalf("prepared KILL ? of the same user's session: %v", err)
	}
	if !threadGone(t, root, victimID, 10*time.Second) {
		t.Errorf("prepared KILL ? answered OK but backend thread %d lives on", victimID)
	}
}

// Clients that quit (go-sql-driver's Close, PyMySQL's close) and sessions
// the proxy ends between commands (idle timeout, shutdown) end their
// backend connection with COM_QUIT: Aborted_clients does not grow. KILL
// of a session and a client that closes without COM_QUIT count as they do
// directly.
func TestBackendSeesQuit(t *testing.T) {
	b := testdb.Start(t)
	b.Exec(t, "CREATE DATABASE IF NOT EXISTS qdb")
	root := rootDB(t, b)
	cfg := leafConfig(t, b, nil)
	lf := startLeaf(t, cfg)
	// aborted runs f, waits until the backend thread it returns is gone and
	// says how much Aborted_clients grew meanwhile.
	aborted := func(what string, f func() int64) int {
		t.Helper()
		before := globalStatus(t, root, "Aborted_clients")
		id := f()
		if !threadGone(t, root, id, 10*time.Second) {
			t.Fatalf("%s: backend thread %d still there after 10s", what, id)
		}
		return globalStatus(t, root, "Aborted_clients") - before
	}
	goQuit := func(dsn string) func() int64 {
		return func() int64 {
			db, err := sql.Open("mysql", dsn)
			if err != nil {
				t.Fatal(err)
			}
			c, id := conn(t, db)
			c.Close()
			db.Close() // COM_QUIT
			return id
		}
	}
	needPyMySQL(t)
	script := writeScript(t, "backend_sees.py", pyBackendSees)
	pyQuit := func(port string) func() int64 {
		return func() int64 {
			var out struct{ Tid int64 }
			runJSON(t, 60*time.Second, &out, "", nil, systemPython, script, "quit", "127.0.0.1", port, "app", "secret", "qdb")
			return out.Tid
		}
	}
	_, port, _ := net.SplitHostPort(lf.addr)
	for _, c := range []struct {
		what string
		f    func() int64
	}{
		{"go-sql-driver Close()", goQuit(lf.dsn("qdb", nil))},
		{"go-sql-driver Close(), compressed (the session's own goroutine)", goQuit(lf.dsn("qdb", map[string]string{"compress": "true"}))},
		{"PyMySQL close()", pyQuit(port)},
		{"limits.idle_timeout", func() int64 {
			icfg := leafConfig(t, b, nil)
			icfg.Limits.IdleTimeout = config.Duration(300 * time.Millisecond)
			il := startLeaf(t, icfg)
			_, id := conn(t, il.open(t, "qdb", nil)) // left idle: the proxy closes it
			return id
		}},
		{"shutdown", func() int64 {
			sl := startLeaf(t, leafConfig(t, b, nil))
			_, id := conn(t, sl.open(t, "qdb", nil))
			sl.stop()
			return id
		}},
	} {
		if n := aborted(c.what, c.f); n != 0 {
			t.Errorf("%s: Aborted_clients +%d on the backend, want 0 (the proxy sends COM_QUIT)", c.what, n)
		}
	}

	// KILL <thread> of an idle session, and a client that closes its
	// socket without COM_QUIT: the same count as directly.
	kill := func(killer *sql.DB, victimDSN string) func() int64 {
		return func() int64 {
			v, err := sql.Open("mysql", victimDSN)
			if err != nil {
				t.Fatal(err)
			}
			defer v.Close()
			_, id := conn(t, v)
			if _, err := killer.Exec(fmt.Sprintf("KILL %d", id)); err != nil {
				t.Fatal(err)
			}
			return id
		}
	}
	through := aborted("KILL of a proxy session", kill(lf.open(t, "qdb", nil), lf.dsn("qdb", nil)))
	direct := aborted("KILL of a direct session", kill(root, b.DSN("qdb")))
	if through != direct {
		t.Errorf("KILL of an idle session: Aborted_clients +%d through the proxy, +%d directly", through, direct)
	}
	through = aborted("a client that leaves without COM_QUIT, through the proxy", dirtyClose(t, lf.addr, "app", "secret"))
	direct = aborted("a client that leaves without COM_QUIT, directly", dirtyClose(t, b.Addr, "root", ""))
	if through != direct || direct != 1 {
		t.Errorf("a client that closes its socket without COM_QUIT: Aborted_clients +%d through the proxy, +%d directly; want the same", through, direct)
	}
}

// dirtyClose logs in with go-mysql's client, asks CONNECTION_ID() and
// closes the socket without COM_QUIT (what a crashed client does).
func dirtyClose(t *testing.T, addr, user, pass string) func() int64 {
	return func() int64 {
		c, err := client.Connect(addr, user, pass, "")
		if err != nil {
			t.Fatal(err)
		}
		r, err := c.Execute("SELECT CONNECTION_ID()")
		if err != nil {
			t.Fatal(err)
		}
		id, _ := r.GetInt(0, 0)
		c.Close() // go-mysql's Close: the socket only (Quit would send COM_QUIT)
		return id
	}
}
