package proxy

import (
	"database/sql"
	"errors"
	"strconv"
	"testing"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-sql-driver/mysql"
)

// backendConnections is MariaDB's count of connection attempts.
func backendConnections(t *testing.T, db *sql.DB) int {
	t.Helper()
	var name, v string
	if err := db.QueryRow("SHOW GLOBAL STATUS LIKE 'Connections'").Scan(&name, &v); err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(v)
	return n
}

func TestAuthPlugins(t *testing.T) {
	ensureDB(t, sharedDB(t), "authdb")
	direct := sharedDB(t).Open(t, "authdb")
	for _, method := range []string{gomysql.AUTH_NATIVE_PASSWORD, gomysql.AUTH_CACHING_SHA2_PASSWORD} {
		t.Run(method, func(t *testing.T) {
			e := startProxy(t, sharedDB(t).Addr, nil, WithAuthMethod(method))
			db := e.open(t, "authdb", "")
			var got string
			if err := db.QueryRow("SELECT DATABASE()").Scan(&got); err != nil {
				t.Fatalf("login with %s: %v", method, err)
			}
			if got != "authdb" {
				t.Fatalf("default database %q, want authdb", got)
			}

			before := backendConnections(t, direct)
			cases := []struct{ user, pass string }{{"app", "wrong"}, {"app", ""}}
			if method == gomysql.AUTH_NATIVE_PASSWORD {
				// With caching_sha2, go-mysql's in-memory provider answers an
				// unknown user with its own error 1449 (see doc.go).
				cases = append(cases, struct{ user, pass string }{"nobody", "secret"})
			}
			for _, tc := range cases {
				bad, _ := sql.Open("mysql", e.dsn(tc.user, tc.pass, "", ""))
				err := bad.Ping()
				bad.Close()
				var me *mysql.MySQLError
				if !errors.As(err, &me) || me.Number != 1045 {
					t.Fatalf("user %q password %q: %v, want error 1045", tc.user, tc.pass, err)
				}
			}
			if after := backendConnections(t, direct); after != before {
				t.Fatalf("failed logins reached the backend: Connections %d -> %d", before, after)
			}
		})
	}
}

// With no users configured, clients log in with the backend's own accounts
// (backend-account mode, passthrough_test.go); unknown accounts get 1045.
func TestAuthDefaultsToBackendAccounts(t *testing.T) {
	needsMariaDB(t, "the backend refusing an unknown account with 1045 (go-mysql-server without a mysql.user table accepts any)")
	e := startProxy(t, sharedDB(t).Addr, func(c *testConfig) { c.Users = nil })
	db, err := sql.Open("mysql", e.dsn("root", "", "", ""))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Ping(); err != nil {
		t.Fatalf("backend user through proxy: %v", err)
	}
	bad, _ := sql.Open("mysql", e.dsn("app", "secret", "", ""))
	defer bad.Close()
	var me *mysql.MySQLError
	if err := bad.Ping(); !errors.As(err, &me) || me.Number != 1045 {
		t.Fatalf("unconfigured user: %v, want 1045", err)
	}
}

func TestClientTLS(t *testing.T) {
	e := startProxy(t, sharedDB(t).Addr, func(c *testConfig) { c.TLS.Required = true })
	db := e.open(t, "", "tls=skip-verify")
	var v string
	if err := db.QueryRow("SELECT 1").Scan(&v); err != nil {
		t.Fatalf("TLS client: %v", err)
	}
	plain := e.open(t, "", "")
	var me *mysql.MySQLError
	if err := plain.Ping(); !errors.As(err, &me) || me.Number != 3159 {
		t.Fatalf("plaintext client with tls.required: %v, want 3159", err)
	}
}
