package integration

import (
	"os/exec"
	"strings"
	"testing"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy"
)

// The mariadb command-line client through the proxy, with each auth plugin.
func TestProxyCLI(t *testing.T) {
	cli, err := exec.LookPath("mariadb")
	if err != nil {
		t.Fatalf("mariadb client not installed (scripts/test.sh installs it): %v", err)
	}
	b := newBackend(t)
	b.Open(t, "clidb").Close()
	for _, method := range []string{gomysql.AUTH_NATIVE_PASSWORD, gomysql.AUTH_CACHING_SHA2_PASSWORD} {
		t.Run(method, func(t *testing.T) {
			p := startProxy(t, proxyConfig(b), proxy.WithAuthMethod(method))
			run := func(password string, sql string) (string, error) {
				cmd := exec.Command(cli, "--no-defaults", "-h", p.Host, "-P", p.Port, "-u", "app", "-p"+password,
					"--batch", "--skip-column-names", "-D", "clidb", "-e", sql)
				out, err := cmd.CombinedOutput()
				return string(out), err
			}
			out, err := run("secret", `CREATE TABLE IF NOT EXISTS t (id INT PRIMARY KEY, s VARCHAR(20));
				REPLACE INTO t VALUES (1, 'it''s a\\b');
				SELECT id, s FROM t;
				SELECT DATABASE();
				SELECT CONCAT('x', NULL) IS NULL`)
			if err != nil {
				t.Fatalf("mariadb CLI: %v\n%s", err, out)
			}
			want := "1\tit's a\\\\b\nclidb\n1\n" // --batch escapes the backslash
			if out != want {
				t.Fatalf("CLI output %q, want %q", out, want)
			}
			out, err = run("secret", "SELECT * FROM no_such_table")
			if err == nil || !strings.Contains(out, "ERROR 1146 (42S02)") {
				t.Fatalf("CLI error output %q (%v), want ERROR 1146", out, err)
			}
			out, err = run("wrong", "SELECT 1")
			if err == nil || !strings.Contains(out, "ERROR 1045") {
				t.Fatalf("CLI wrong password output %q (%v), want ERROR 1045", out, err)
			}
		})
	}
}
