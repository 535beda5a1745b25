package integration

import (
	"database/sql"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

// Debian's python3-pymysql, run by the system interpreter (the python3 on
// PATH may be another one without it).
const systemPython = "/usr/bin/python3"

func needPyMySQL(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(systemPython); err != nil {
		t.Skipf("%s not found: install Debian's python3 and python3-pymysql (scripts/test.sh does, as root)", systemPython)
	}
	if out, err := exec.Command(systemPython, "-c", "import pymysql").CombinedOutput(); err != nil {
		t.Skipf("PyMySQL missing: apt-get install python3-pymysql (scripts/test.sh does, as root): %v: %s", err, out)
	}
}

// pymysqlScript prints one JSON object with what it observed; the Go test
// judges. argv: host port.
const pymysqlScript = `
import json, sys, threading, time
import pymysql

host, port = sys.argv[1], int(sys.argv[2])
bhost, bport = sys.argv[3], int(sys.argv[4])  # the backend, for root
def connect(**kw):
    return pymysql.connect(host=host, port=port, user="app", password="secret",
                           database="pydb", connect_timeout=5, **kw)
out = {"version": pymysql.__version__}

# PyMySQL's default: autocommit off, decided from the greeting's status flags.
c = connect()
out["autocommit_default"] = c.get_autocommit()
cur = c.cursor()
cur.execute("SELECT @@autocommit")
out["server_autocommit_default"] = cur.fetchone()[0]
cur.execute("INSERT INTO t VALUES (1, 'rolled back')")
c.rollback()
cur.execute("SELECT COUNT(*) FROM t WHERE id = 1")
out["after_rollback_same_session"] = cur.fetchone()[0]

# An uncommitted row is invisible to another session until commit().
other = connect(autocommit=True)
ocur = other.cursor()
cur.execute("INSERT INTO t VALUES (2, 'committed')")
ocur.execute("SELECT COUNT(*) FROM t WHERE id = 2")
out["uncommitted_seen_by_other"] = ocur.fetchone()[0]
c.commit()
ocur.execute("SELECT COUNT(*) FROM t WHERE id = 2")
out["committed_seen_by_other"] = ocur.fetchone()[0]

# conn.autocommit(True): each statement commits, rollback() undoes nothing.
c.autocommit(True)
out["autocommit_after_set"] = c.get_autocommit()
cur.execute("SELECT @@autocommit")
out["server_autocommit_after_set"] = cur.fetchone()[0]
cur.execute("INSERT INTO t VALUES (3, 'autocommitted')")
c.rollback()
# and back off: a transaction again.
c.autocommit(False)
cur.execute("INSERT INTO t VALUES (4, 'rolled back too')")
c.rollback()
# autocommit=True at connect.
a = connect(autocommit=True)
out["autocommit_connect_true"] = a.get_autocommit()
acur = a.cursor()
acur.execute("INSERT INTO t VALUES (5, 'autocommit at connect')")
a.rollback()
c.close()

# Thread id: the greeting's id (what KILL needs) against CONNECTION_ID().
acur.execute("SELECT CONNECTION_ID()")
out["connection_id"] = acur.fetchone()[0]
out["thread_id"] = a.thread_id()
# The test looks the session up in the proxy while it is open.
print(json.dumps({"thread_id": a.thread_id(), "connection_id": out["connection_id"]}), flush=True)
sys.stdin.readline()

res = {}
def sleeper():
    t0 = time.time()
    try:
        acur.execute("SELECT SLEEP(30)")
        res["value"] = acur.fetchone()[0]
    except pymysql.err.OperationalError as e:
        res["error"] = e.args[0]
    res["elapsed"] = time.time() - t0
th = threading.Thread(target=sleeper)
th.start()
for _ in range(1000):
    ocur.execute("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO = 'SELECT SLEEP(30)'")
    if ocur.fetchone()[0] > 0:
        break
    time.sleep(0.02)
ocur.execute("KILL QUERY %d" % a.thread_id())
th.join(40)
out["sleep"] = res
# The killed query's connection lives on.
acur.execute("SELECT 7")
out["after_kill"] = acur.fetchone()[0]

# The backend drops the idle session (KILL CONNECTION by root, directly):
# the proxy closes the client's connection, so PyMySQL sees a lost
# connection (2013), as it would directly, and ping(reconnect=True)
# recovers. The test waits until the proxy has closed the session.
root = pymysql.connect(host=bhost, port=bport, user="root", autocommit=True)
acur.execute("SELECT CONNECTION_ID()")
root.cursor().execute("KILL CONNECTION %d" % acur.fetchone()[0])
print(json.dumps({"stage": "dropped"}), flush=True)
sys.stdin.readline()
try:
    acur.execute("SELECT 1")
    out["after_backend_drop"] = 0
except pymysql.err.OperationalError as e:
    out["after_backend_drop"] = e.args[0]
a.ping(reconnect=True)
acur = a.cursor()
acur.execute("SELECT 8")
out["after_reconnect"] = acur.fetchone()[0]

# conn.kill(id) is COM_PROCESS_KILL: another proxy user gets 1094; the same
# user ends the connection, whose next query fails at once with 2013.
victim = connect(autocommit=True)
vcur = victim.cursor()
vcur.execute("SELECT CONNECTION_ID()")
victim_backend = vcur.fetchone()[0]
stranger = pymysql.connect(host=host, port=port, user="app2", password="pw2", autocommit=True)
try:
    stranger.kill(victim.thread_id())
    out["process_kill_other_user"] = 0
except pymysql.err.OperationalError as e:
    out["process_kill_other_user"] = e.args[0]
other.kill(victim.thread_id())
try:
    vcur.execute("SELECT 1")
    out["after_process_kill"] = 0
except pymysql.err.OperationalError as e:
    out["after_process_kill"] = e.args[0]
rcur = root.cursor()
for _ in range(500):
    rcur.execute("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = %d" % victim_backend)
    out["victim_backend_left"] = rcur.fetchone()[0]
    if out["victim_backend_left"] == 0:
        break
    time.sleep(0.02)
print(json.dumps(out))
`

// PyMySQL trusts the greeting's status flags for autocommit: with the
// default autocommit=False, INSERT then rollback() must leave no row (the
// proxy once greeted with status 0, so PyMySQL never sent autocommit=0 and
// the row stayed). Also conn.autocommit(True), the thread id PyMySQL
// hands to KILL QUERY and conn.kill(), and a backend dropping an idle
// session.
func TestPyMySQL(t *testing.T) {
	needPyMySQL(t)
	cp := startClientProxy(t, "pydb", nil)
	cp.b.Exec(t, "CREATE TABLE pydb.t (id INT PRIMARY KEY, v VARCHAR(40))")

	var got struct {
		Version                  string
		AutocommitDefault        bool `json:"autocommit_default"`
		ServerAutocommitDefault  int  `json:"server_autocommit_default"`
		AfterRollbackSameSession int  `json:"after_rollback_same_session"`
		UncommittedSeenByOther   int  `json:"uncommitted_seen_by_other"`
		CommittedSeenByOther     int  `json:"committed_seen_by_other"`
		AutocommitAfterSet       bool `json:"autocommit_after_set"`
		ServerAutocommitAfterSet int  `json:"server_autocommit_after_set"`
		AutocommitConnectTrue    bool `json:"autocommit_connect_true"`
		Sleep                    struct {
			Value   *int
			Error   *int
			Elapsed float64
		}
		AfterKill        int `json:"after_kill"`
		AfterBackendDrop int `json:"after_backend_drop"`
		AfterReconnect   int `json:"after_reconnect"`
		ProcessKillOther int `json:"process_kill_other_user"`
		AfterProcessKill int `json:"after_process_kill"`
		VictimLeft       int `json:"victim_backend_left"`
	}
	script := writeScript(t, "pymysql_check.py", pymysqlScript)
	bhost, bport, _ := net.SplitHostPort(cp.b.Addr)
	py := startInteractive(t, 90*time.Second, "", nil, systemPython, script, cp.host, cp.port, bhost, bport)
	var hello struct {
		ThreadID     int64 `json:"thread_id"`
		ConnectionID int64 `json:"connection_id"`
	}
	py.next(&hello)
	// The greeting's id is the proxy's session id; CONNECTION_ID() is the
	// backend thread the session runs on.
	if hello.ThreadID < 1<<30 {
		t.Errorf("conn.thread_id() = %d, want a proxy session id (>= 2^30)", hello.ThreadID)
	}
	found := false
	for _, si := range cp.lf.svc.Proxy.SessionList() {
		if int64(si.ID) == hello.ThreadID {
			found = true
			if int64(si.ThreadID) != hello.ConnectionID {
				t.Errorf("session %d runs on backend thread %d, but CONNECTION_ID() said %d", si.ID, si.ThreadID, hello.ConnectionID)
			}
		}
	}
	if !found {
		t.Errorf("no proxy session has conn.thread_id() %d", hello.ThreadID)
	}
	py.send("go on")
	var dropped struct{ Stage string }
	py.next(&dropped)
	if _, err := testwait.Until("the proxy to close the client's connection", func() (struct{}, bool) {
		return struct{}{}, !sessionListed(cp, uint32(hello.ThreadID))
	}); err != nil {
		t.Errorf("the backend dropped session %d's idle connection, but the proxy kept the client's open: %v", hello.ThreadID, err)
	}
	py.send("go on")
	py.next(&got)
	py.wait()
	seen, _ := json.Marshal(got)
	t.Logf("PyMySQL %s: %s", got.Version, seen)

	if got.AutocommitDefault || got.ServerAutocommitDefault != 0 {
		t.Errorf("default connection: PyMySQL autocommit %v, server @@autocommit %d; want both off",
			got.AutocommitDefault, got.ServerAutocommitDefault)
	}
	if got.AfterRollbackSameSession != 0 {
		t.Errorf("INSERT then rollback(): the session still sees %d row(s)", got.AfterRollbackSameSession)
	}
	if got.UncommittedSeenByOther != 0 || got.CommittedSeenByOther != 1 {
		t.Errorf("another session saw %d uncommitted and %d committed rows, want 0 and 1",
			got.UncommittedSeenByOther, got.CommittedSeenByOther)
	}
	if !got.AutocommitAfterSet || got.ServerAutocommitAfterSet != 1 || !got.AutocommitConnectTrue {
		t.Errorf("autocommit(True): PyMySQL %v, server %d; autocommit=True at connect: %v; want on everywhere",
			got.AutocommitAfterSet, got.ServerAutocommitAfterSet, got.AutocommitConnectTrue)
	}
	// What reached the table, read directly: 2, 3 and 5 committed; 1 and 4
	// rolled back.
	direct, err := sql.Open("mysql", cp.b.DSN("pydb"))
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	rows, err := direct.Query("SELECT id FROM t ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	var ids []int
	for rows.Next() {
		var id int
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if want := []int{2, 3, 5}; !equalInts(ids, want) {
		t.Errorf("rows in the table: %v, want %v (1 and 4 were rolled back)", ids, want)
	}

	// KILL QUERY <conn.thread_id()> from another PyMySQL connection stopped
	// the SLEEP(30): MariaDB answers 1 or ERR 1317.
	s := got.Sleep
	if s.Elapsed > 20 || (s.Value == nil && s.Error == nil) {
		t.Errorf("SLEEP(30) ran %.1fs after KILL QUERY (value %v, error %v): not stopped", s.Elapsed, s.Value, s.Error)
	}
	if s.Error != nil && *s.Error != 1317 {
		t.Errorf("killed SLEEP answered error %d, want 1317", *s.Error)
	}
	if s.Value != nil && *s.Value != 1 {
		t.Errorf("killed SLEEP returned %d, want 1 (interrupted)", *s.Value)
	}
	if got.AfterKill != 7 {
		t.Errorf("the connection after KILL QUERY answered %d, want 7", got.AfterKill)
	}
	// A dropped backend is a lost connection to PyMySQL (2013, which it and
	// pools treat as "reconnect"), not an ERR from a live one (1158).
	if got.AfterBackendDrop != 2013 || got.AfterReconnect != 8 {
		t.Errorf("query after the backend dropped the idle session: error %d, want 2013; after ping(reconnect=True): %d, want 8",
			got.AfterBackendDrop, got.AfterReconnect)
	}
	// conn.kill(): COM_PROCESS_KILL with the greeting id.
	if got.ProcessKillOther != 1094 {
		t.Errorf("conn.kill() by another proxy user answered %d, want 1094", got.ProcessKillOther)
	}
	if got.AfterProcessKill != 2013 || got.VictimLeft != 0 {
		t.Errorf("after conn.kill(): the victim's next query failed with %d (want 2013, lost connection), its backend thread is listed %d time(s) (want 0)",
			got.AfterProcessKill, got.VictimLeft)
	}
}

// sessionListed reports whether the proxy lists a session with greeting id.
func sessionListed(cp *clientProxy, id uint32) bool {
	for _, si := range cp.lf.svc.Proxy.SessionList() {
		if si.ID == id {
			return true
		}
	}
	return false
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
