package proxy

import (
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/proxy/backend"
)

// Backend TLS (backend.tls): against a MariaDB started with a certificate
// signed by a CA the test makes, the proxy's backend leg is encrypted
// (the backend reports a cipher for the session), a CA that did not sign
// the server's certificate or a wrong server name fails the login with an
// error naming the certificate problem, insecure_skip_verify accepts any
// certificate, and a backend without TLS is refused rather than used in
// clear.
func TestBackendTLS(t *testing.T) {
	certs, err := testdb.MakeCerts(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	other, err := testdb.MakeCerts(t.TempDir()) // a CA that signed nothing the backend has
	if err != nil {
		t.Fatal(err)
	}
	db := testdb.StartWith(t, certs.ServerTLSFlags()...)
	var name, haveSSL string
	if err := db.Open(t, "").QueryRow("SHOW GLOBAL VARIABLES LIKE 'have_ssl'").Scan(&name, &haveSSL); err != nil || haveSSL != "YES" {
		t.Fatalf("backend started without TLS: have_ssl=%q %v", haveSSL, err)
	}

	cipher := func(t *testing.T, e *env) (string, error) {
		t.Helper()
		var n, v string
		err := e.open(t, "", "").QueryRow("SHOW SESSION STATUS LIKE 'Ssl_cipher'").Scan(&n, &v)
		return v, err
	}
	withTLS := func(tc BackendTLS) func(*testConfig) {
		return func(c *testConfig) { c.Backend.TLS = tc }
	}

	t.Run("verified against the CA", func(t *testing.T) {
		e := startProxy(t, db.Addr, withTLS(BackendTLS{Enabled: true, CA: certs.CA, ServerName: "localhost"}))
		c, err := cipher(t, e)
		if err != nil || c == "" {
			t.Fatalf("backend leg not encrypted: Ssl_cipher=%q err=%v", c, err)
		}
		t.Logf("backend leg cipher %s", c)
	})
	t.Run("server name defaults to the backend host", func(t *testing.T) {
		e := startProxy(t, db.Addr, withTLS(BackendTLS{Enabled: true, CA: certs.CA})) // 127.0.0.1, in the cert's IPs
		if c, err := cipher(t, e); err != nil || c == "" {
			t.Fatalf("Ssl_cipher=%q err=%v", c, err)
		}
	})
	t.Run("plaintext backend leg without backend.tls", func(t *testing.T) {
		e := startProxy(t, db.Addr, nil)
		if c, err := cipher(t, e); err != nil || c != "" {
			t.Fatalf("Ssl_cipher=%q err=%v, want empty", c, err)
		}
	})

	t.Run("backend accounts over the TLS leg", func(t *testing.T) {
		db.Exec(t, "CREATE USER IF NOT EXISTS tlsu@'%' IDENTIFIED BY 'z'")
		e := startProxy(t, db.Addr, func(c *testConfig) {
			c.Users = nil
			c.Backend.TLS = BackendTLS{Enabled: true, CA: certs.CA}
		})
		for _, params := range []string{"", "tls=skip-verify"} {
			d, err := sql.Open("mysql", e.dsn("tlsu", "z", "", params))
			if err != nil {
				t.Fatal(err)
			}
			var cur, n, c string
			err = d.QueryRow("SELECT CURRENT_USER()").Scan(&cur)
			if err == nil {
				err = d.QueryRow("SHOW SESSION STATUS LIKE 'Ssl_cipher'").Scan(&n, &c)
			}
			d.Close()
			if err != nil || cur != "tlsu@%" || c == "" {
				t.Fatalf("tlsu through the proxy (%q): %v, user %q, backend cipher %q", params, err, cur, c)
			}
		}
	})

	refused := func(t *testing.T, e *env, wantIn ...string) {
		t.Helper()
		_, err := cipher(t, e)
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != backend.ErrUnreachable {
			t.Fatalf("login: %v, want ERR %d", err, backend.ErrUnreachable)
		}
		for _, w := range wantIn {
			if !strings.Contains(me.Message, w) {
				t.Errorf("error %q does not say %q", me.Message, w)
			}
		}
		t.Logf("client sees: %s", me.Message)
	}
	t.Run("wrong CA refused", func(t *testing.T) {
		e := startProxy(t, db.Addr, withTLS(BackendTLS{Enabled: true, CA: other.CA, ServerName: "localhost"}))
		refused(t, e, db.Addr, "TLS", "certificate signed by unknown authority")
	})
	t.Run("wrong server name refused", func(t *testing.T) {
		e := startProxy(t, db.Addr, withTLS(BackendTLS{Enabled: true, CA: certs.CA, ServerName: "db.example.com"}))
		refused(t, e, "TLS", "db.example.com")
	})
	t.Run("insecure_skip_verify accepts any certificate", func(t *testing.T) {
		e := startProxy(t, db.Addr, withTLS(BackendTLS{Enabled: true, CA: other.CA, ServerName: "db.example.com", InsecureSkipVerify: true}))
		if c, err := cipher(t, e); err != nil || c == "" {
			t.Fatalf("Ssl_cipher=%q err=%v", c, err)
		}
	})
	t.Run("backend without TLS refused", func(t *testing.T) {
		e := startProxy(t, sharedDB(t).Addr, withTLS(BackendTLS{Enabled: true, InsecureSkipVerify: true}))
		refused(t, e, "does not offer TLS")
	})
}
