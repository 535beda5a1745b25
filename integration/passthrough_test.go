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
