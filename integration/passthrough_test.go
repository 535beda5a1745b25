package integration

import (
	"database/sql"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// Backend-account mode (no users in the configuration), through the
// clients people use: the mariadb CLI, mariadb-test's change_user
// (libmariadb, with its ed25519 plugin), PyMySQL, and the admin SQL.
func TestBackendAccountsClients(t *testing.T) {
	b := newBackend(t)
	var n int
	if err := b.Open(t, "").QueryRow("SELECT COUNT(*) FROM information_schema.PLUGINS WHERE PLUGIN_NAME = 'ed25519' AND PLUGIN_STATUS = 'ACTIVE'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		b.Exec(t, "INSTALL SONAME 'auth_ed25519'")
	}
	b.Exec(t,
		"CREATE USER u1@'%'",
		"CREATE USER u2@'%' IDENTIFIED BY 'x'",
		"CREATE USER u3@'%' IDENTIFIED VIA ed25519 USING PASSWORD('y')",
		"CREATE DATABASE acctdb",
		"CREATE TABLE acctdb.t (v int)",
		"GRANT SELECT ON acctdb.* TO u2@'%'",
		"GRANT SELECT ON acctdb.* TO u3@'%'",
	)
	cfg := leafConfig(t, b, nil)
	cfg.Users = nil
	cfg.Admins = []string{"root"}
	lf := startLeaf(t, cfg)
	host, port, _ := net.SplitHostPort(lf.addr)

	t.Run("mariadb CLI", func(t *testing.T) {
		for _, a := range []struct{ user, pass, want string }{{"u1", "", "u1@%"}, {"u2", "x", "u2@%"}, {"u3", "y", "u3@%"}} {
			args := []string{"--no-defaults", "-h" + host, "-P" + port, "-u" + a.user, "-N", "-B", "-e", "SELECT CURRENT_USER()"}
			if a.pass != "" {
				args = append(args, "-p"+a.pass)
			}
			out, err := exec.Command("mariadb", args...).CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != a.want {
				t.Errorf("mariadb -u%s: %v: %s, want %s", a.user, err, out, a.want)
			}
		}
		out, err := exec.Command("mariadb", "--no-defaults", "-h"+host, "-P"+port, "-uu3", "-pwrong", "-e", "SELECT 1").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "ERROR 1045 (28000): Access denied for user 'u3'@'localhost' (using password: YES)") {
			t.Errorf("mariadb -uu3 with a wrong password: %v: %s", err, out)
		}
		out, err = exec.Command("mariadb", "--no-defaults", "-h"+host, "-P"+port, "-uu1", "-e", "SELECT * FROM acctdb.t").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "ERROR 1142") {
			t.Errorf("u1 reading a table it has no grant on: %v: %s, want ERROR 1142", err, out)
		}
	})

	t.Run("mariadb-test change_user", func(t *testing.T) {
		bin, err := exec.LookPath("mariadb-test")
		if err != nil {
			t.Skip("mariadb-test not installed (Debian's mariadb-client)")
		}
		script := `SET @v = 1;
change_user u3,y,acctdb;
SELECT CURRENT_USER(), DATABASE(), @v;
--error 1045
change_user u2,wrong;
SELECT CURRENT_USER(), DATABASE();
change_user u2,x;
SELECT CURRENT_USER();
--error 1045
change_user u1,nope;
--error 1045
change_user u1,nope2;
--error 1047
change_user u1;
SELECT CURRENT_USER();
`
		dir := t.TempDir()
		cmd := exec.Command(bin, "--host="+host, "--port="+port, "--user=root", "--tmpdir="+dir,
			"--logdir="+dir, "--silent")
		cmd.Stdin = strings.NewReader(script)
		out, err := cmd.CombinedOutput()
		want := []string{
			"u3@%\tacctdb\tNULL",
			"ERROR 28000: Access denied for user 'u2'@'localhost' (using password: YES)",
			"u3@%\tacctdb",
			"u2@%",
			"ERROR 08S01: Unknown command",
		}
		for _, w := range want {
			if !strings.Contains(string(out), w) {
				t.Errorf("mariadb-test output lacks %q:\n%s", w, out)
			}
		}
		if err != nil {
			t.Errorf("mariadb-test: %v\n%s", err, out)
		}
	})

	t.Run("PyMySQL", func(t *testing.T) {
		needPyMySQL(t)
		script := `
import json, sys
import pymysql
host, port = sys.argv[1], int(sys.argv[2])
out = {}
accounts = [("u1", ""), ("u2", "x")]
try:
    import nacl  # PyMySQL's client_ed25519 needs PyNaCl
    accounts.append(("u3", "y"))
except ImportError:
    out["no_nacl"] = True
for user, pw in accounts:
    c = pymysql.connect(host=host, port=port, user=user, password=pw, connect_timeout=5)
    cur = c.cursor()
    cur.execute("SELECT CURRENT_USER()")
    out[user] = cur.fetchone()[0]
    c.close()
try:
    pymysql.connect(host=host, port=port, user="u2", password="wrong", connect_timeout=5)
except pymysql.err.OperationalError as e:
    out["wrong"] = [e.args[0], e.args[1]]
print(json.dumps(out))
`
		path := filepath.Join(t.TempDir(), "accounts.py")
		if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
			t.Fatal(err)
		}
		raw, err := exec.Command(systemPython, path, host, port).CombinedOutput()
		if err != nil {
			t.Fatalf("PyMySQL: %v\n%s", err, raw)
		}
		var got map[string]any
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatalf("PyMySQL output %s: %v", raw, err)
		}
		if got["u1"] != "u1@%" || got["u2"] != "u2@%" {
			t.Errorf("PyMySQL logins: %v", got)
		}
		if got["no_nacl"] == true {
			t.Log("PyNaCl missing: PyMySQL's ed25519 login not tried (apt-get install python3-nacl)")
		} else if got["u3"] != "u3@%" {
			t.Errorf("PyMySQL ed25519 login: %v", got)
		}
		w, _ := got["wrong"].([]any)
		if len(w) != 2 || w[0] != float64(1045) || w[1] != "Access denied for user 'u2'@'localhost' (using password: YES)" {
			t.Errorf("PyMySQL wrong password: %v", got["wrong"])
		}
	})

	// Issue 30: the greeting's id (PyMySQL's thread_id()) is the backend
	// thread's, as CONNECTION_ID() and SHOW PROCESSLIST say; KILL by it,
	// as COM_PROCESS_KILL (conn.kill) and inside a multi-statement text,
	// ends that connection, which the client notices as directly.
	t.Run("PyMySQL connection ids and KILL", func(t *testing.T) {
		needPyMySQL(t)
		script := `
import json, sys, time
import pymysql
from pymysql.constants import CLIENT
host, port = sys.argv[1], int(sys.argv[2])
out = {}
def connect(user, pw="", multi=False):
    return pymysql.connect(host=host, port=port, user=user, password=pw, connect_timeout=5,
                           client_flag=CLIENT.MULTI_STATEMENTS if multi else 0)
admin = connect("root", multi=True)
for way in ("conn.kill", "multi-statement"):
    victim = connect("u1")
    cur = victim.cursor()
    cur.execute("SELECT CONNECTION_ID()")
    cid = cur.fetchone()[0]
    cur.execute("SHOW PROCESSLIST")
    listed = [r[0] for r in cur.fetchall() if r[7] == "SHOW PROCESSLIST"]
    out[way] = {"thread_id": victim.thread_id(), "connection_id": cid, "processlist": listed}
    if way == "conn.kill":
        admin.kill(victim.thread_id())
    else:
        c = admin.cursor()
        c.execute("KILL %s; SELECT 1" % victim.thread_id())
        while c.nextset():
            pass
    try:
        cur.execute("SELECT 1")
        out[way]["after"] = "answered"
    except pymysql.err.OperationalError as e:
        out[way]["after"] = e.args[0]
    gone = False
    for _ in range(500):  # until the backend no longer lists the thread (5 s at most)
        c = admin.cursor()
        c.execute("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = %s", (victim.thread_id(),))
        if c.fetchone()[0] == 0:
            gone = True
            break
        time.sleep(0.01)
    out[way]["gone"] = gone
print(json.dumps(out))
`
		path := filepath.Join(t.TempDir(), "ids.py")
		if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
			t.Fatal(err)
		}
		raw, err := exec.Command(systemPython, path, host, port).CombinedOutput()
		if err != nil {
			t.Fatalf("PyMySQL: %v\n%s", err, raw)
		}
		var got map[string]struct {
			ThreadID     int64   `json:"thread_id"`
			ConnectionID int64   `json:"connection_id"`
			Processlist  []int64 `json:"processlist"`
			After        any     `json:"after"`
			Gone         bool    `json:"gone"`
		}
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatalf("PyMySQL output %s: %v", raw, err)
		}
		for _, way := range []string{"conn.kill", "multi-statement"} {
			g := got[way]
			if g.ThreadID != g.ConnectionID || len(g.Processlist) != 1 || g.Processlist[0] != g.ThreadID {
				t.Errorf("%s: thread_id() %d, CONNECTION_ID() %d, SHOW PROCESSLIST %v: want one id", way, g.ThreadID, g.ConnectionID, g.Processlist)
			}
			if g.After == "answered" || !g.Gone {
				t.Errorf("%s: after KILL the victim's next query: %v, thread gone from the processlist: %v", way, g.After, g.Gone)
			}
		}
	})

	t.Run("admin SQL", func(t *testing.T) {
		for _, a := range []struct {
			user, pass string
			admin      bool
		}{{"root", "", true}, {"u2", "x", false}} {
			db, err := sql.Open("mysql", a.user+":"+a.pass+"@tcp("+lf.addr+")/")
			if err != nil {
				t.Fatal(err)
			}
			rows, err := db.Query("SHOW LEAFPROXY SESSIONS")
			var me *mysql.MySQLError
			switch {
			case a.admin && err != nil:
				t.Errorf("%s (listed in admins): %v", a.user, err)
			case !a.admin && !(errors.As(err, &me) && me.Number == 1227):
				t.Errorf("%s (not listed): %v, want 1227", a.user, err)
			}
			if rows != nil {
				rows.Close()
			}
			db.Close()
		}
	})
}
