package integration

import (
	"crypto/sha1"
	"database/sql"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/config"
)

// nativeHash is what SELECT PASSWORD(pw) prints on MariaDB.
func nativeHash(pw string) string {
	s1 := sha1.Sum([]byte(pw))
	s2 := sha1.Sum(s1[:])
	return fmt.Sprintf("*%X", s2[:])
}

// TestPasswordHashLogin: a proxy user given only password_hash (the form
// MariaDB's PASSWORD() prints, checked here against the backend's own
// answer) logs in through go-sql-driver and PyMySQL with either
// auth_method (caching_sha2_password clients are switched to
// mysql_native_password), and a wrong password is refused with 1045.
func TestPasswordHashLogin(t *testing.T) {
	for _, method := range []string{"mysql_native_password", "caching_sha2_password"} {
		t.Run(method, func(t *testing.T) {
			cp := startClientProxy(t, "", func(c *config.Config) {
				c.AuthMethod = method
				c.Users = []config.User{{Name: "hashed", PasswordHash: nativeHash("s3cret pw")}, {Name: "app", Password: "secret"}}
			})
			var backendHash string
			if err := cp.b.Open(t, "").QueryRow("SELECT PASSWORD('s3cret pw')").Scan(&backendHash); err != nil {
				t.Fatal(err)
			}
			if backendHash != nativeHash("s3cret pw") {
				t.Fatalf("PASSWORD() = %s, test computes %s", backendHash, nativeHash("s3cret pw"))
			}
			for _, tc := range []struct {
				user, pw string
				want     uint16
			}{{"hashed", "s3cret pw", 0}, {"hashed", "wrong", 1045}, {"app", "secret", 0}, {"nobody", "x", 1045}} {
				c := mysql.NewConfig()
				c.User, c.Passwd, c.Net, c.Addr = tc.user, tc.pw, "tcp", cp.lf.addr
				db, _ := sql.Open("mysql", c.FormatDSN())
				var who string
				err := db.QueryRow("SELECT CURRENT_USER()").Scan(&who)
				db.Close()
				var me *mysql.MySQLError
				switch {
				case tc.want == 0 && err != nil:
					t.Errorf("%s/%s: %v", tc.user, tc.pw, err)
				case tc.want != 0 && (!errors.As(err, &me) || me.Number != tc.want):
					t.Errorf("%s/%s: %v, want %d", tc.user, tc.pw, err, tc.want)
				}
			}
			needPyMySQL(t)
			script := `
import sys, pymysql
host, port = sys.argv[1], int(sys.argv[2])
c = pymysql.connect(host=host, port=port, user="hashed", password="s3cret pw", connect_timeout=5)
cur = c.cursor(); cur.execute("SELECT 1 + 1"); print("ok", cur.fetchone()[0])
try:
    pymysql.connect(host=host, port=port, user="hashed", password="nope", connect_timeout=5)
    print("wrong password accepted")
except pymysql.err.OperationalError as e:
    print("refused", e.args[0])
`
			out, err := exec.Command(systemPython, "-c", script, cp.host, cp.port).CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != "ok 2\nrefused 1045" {
				t.Errorf("PyMySQL: %v:\n%s", err, out)
			}
		})
	}
}
