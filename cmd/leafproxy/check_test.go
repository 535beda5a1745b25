package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
)

// runCmd runs the command and returns its exit status and output.
func runCmd(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func writeFile(t *testing.T, name, text string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, mode) // past the umask
	return path
}

// TestConfigRefusals: values that used to mean something else, or to pass
// unnoticed, are refused at load by check and serve alike (exit 2), each
// naming its key and line.
func TestConfigRefusals(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"limits: {max_connections: -5}", "line 1: limits.max_connections: -5 is negative: give a number (0 takes the default, 4096; there is no unlimited)"},
		{"limits: {max_handshakes: -1}", "limits.max_handshakes: -1 is negative"},
		{"limits: {idle_timeout: -1s}", "limits.idle_timeout: -1s is negative"},
		{"limits: {handshake_timeout: -5s}", "limits.handshake_timeout: -5s is negative"},
		{"backend: {connect_timeout: -2s}", "backend.connect_timeout: -2s is negative"},
		{"shutdown: {grace: -1s}", "shutdown.grace: -1s is negative"},
		{"limits: {command_memory: 9000000000GiB}", `"9000000000GiB" is too large`},
		{"limits: {login_failures: -1}", "limits.login_failures: -1 is negative"},
		{"sequences: {tags: {order: {}}}\ntables: [{table: orders, column: id, tag: ordr}]",
			`line 2: tables[0].tag: "ordr" is not declared in sequences.tags (did you mean "order"?); a new tag must be declared there`},
		{"users: [{name: a, password_hash: '2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19'}]", "users[0].password_hash: \"2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19\" is not a mysql_native_password hash"},
		{"users: [{name: a, password: x, password_hash: '*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19'}]", "users[0].password_hash: set password or password_hash, not both"},
		{"backend: {password: x, password_env: LEAFPROXY_TEST_NONE}", "backend.password: set only one of password, password_env and password_file"},
		{"backend: {password_env: LEAFPROXY_TEST_UNSET}", "backend.password_env: the environment variable LEAFPROXY_TEST_UNSET is not set"},
		{"backend: {password_file: /nonexistent/pw}", "backend.password_file: cannot read the password: open /nonexistent/pw: no such file"},
		{"sequences: {store_password_env: X}", "sequences.store_password: sequences.store is empty"},
	} {
		path := writeFile(t, "c.yaml", tc.yaml+"\n", 0o600)
		for _, cmd := range []string{"check", "serve"} {
			code, _, errOut := runCmd(cmd, "--config", path)
			if code != 2 || !strings.Contains(errOut, tc.want) {
				t.Errorf("%s with %q: exit %d, stderr:\n%s\nwant exit 2 and %q", cmd, tc.yaml, code, errOut, tc.want)
			}
		}
	}
}

// TestCheckCommand: check tries the logins and tags a file names and lists
// every problem (exit 1); a good file passes (exit 0); serve refuses the
// same file before doing anything (exit 2: no store database created).
func TestCheckCommand(t *testing.T) {
	backend := testdb.Start(t)
	backend.Exec(t, "CREATE USER 'leaf'@'%' IDENTIFIED BY 'right'", "GRANT ALL ON *.* TO 'leaf'@'%'")
	good := writeConfig(t, backend, "127.0.0.1:0")
	code, out, errOut := runCmd("check", "--config", good)
	if code != 0 || !strings.Contains(out, "is valid; the backend "+backend.Addr) {
		t.Fatalf("good file: exit %d:\n%s%s", code, out, errOut)
	}
	bad := writeFile(t, "bad.yaml", fmt.Sprintf(`listen: 127.0.0.1:0
backend: {addr: %s, user: root}
users: [{name: app, password: secret, backend_user: leaf, backend_password: wrong}]
sequences: {tags: {order: {}}}
tables: [{table: orders, column: id, tag: order}, {table: events, column: id, tag: audit}]
`, backend.Addr), 0o600)
	code, _, errOut = runCmd("check", "--config", bad)
	for _, w := range []string{bad + " has 2 problems:",
		`  users[0].backend_password: the backend ` + backend.Addr + ` refused login as "leaf"`,
		`  tables[1].tag: tag "audit" is not declared in sequences.tags and leaf_alloc has no row for it; fix the name, or declare it (sequences: {tags: {audit: {}}})`} {
		if code != 1 || !strings.Contains(errOut, w) {
			t.Errorf("check: exit %d, stderr:\n%s\nwant exit 1 and %q", code, errOut, w)
		}
	}
	code, _, errOut = runCmd("serve", "--config", bad)
	if code != 2 || !strings.Contains(errOut, `leafproxy serve: tables[1].tag: tag "audit" is not declared`) || !strings.Contains(errOut, "nothing started") {
		t.Errorf("serve: exit %d, stderr:\n%s", code, errOut)
	}
	var n int
	backend.Open(t, "").QueryRow("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'leafproxy'").Scan(&n)
	if n != 0 {
		t.Errorf("serve created the store before refusing the file")
	}
	// init refuses to create a tag from a typo too.
	if code, _, errOut := runCmd("init", "--config", bad); code == 0 || !strings.Contains(errOut, `tables[1].tag: tag "audit" is not declared`) {
		t.Errorf("init: exit %d, stderr:\n%s", code, errOut)
	}
	var tags int
	backend.Open(t, "").QueryRow("SELECT COUNT(*) FROM leafproxy.leaf_alloc").Scan(&tags)
	if tags != 0 {
		t.Errorf("init created %d tags although it refused the file", tags)
	}
	// Files the proxy reads at start.
	tlsBad := writeFile(t, "tls.yaml", fmt.Sprintf("listen: 127.0.0.1:0\nbackend: {addr: %s, tls: {enabled: true, ca: /nonexistent/ca.pem}}\ntls: {cert: /nonexistent/c.pem, key: /nonexistent/k.pem}\n", backend.Addr), 0o600)
	code, _, errOut = runCmd("check", "--config", tlsBad)
	if code != 1 || !strings.Contains(errOut, "tls.cert: cannot load the certificate and key") || !strings.Contains(errOut, "backend.tls: backend.tls.ca: open /nonexistent/ca.pem") {
		t.Errorf("TLS files: exit %d, stderr:\n%s", code, errOut)
	}
	if code, _, errOut := runCmd("serve", "--config", tlsBad); code != 2 || !strings.Contains(errOut, "tls.cert") {
		t.Errorf("serve with missing TLS files: exit %d, stderr:\n%s", code, errOut)
	}
	// A backend that does not answer: check names it and exits 1.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := l.Addr().String()
	l.Close()
	code, _, errOut = runCmd("check", "--config", good, "--backend", dead)
	if code != 1 || !strings.Contains(errOut, "backend.addr: cannot reach the backend "+dead) {
		t.Errorf("dead backend: exit %d, stderr:\n%s", code, errOut)
	}
}

// TestServeBindsFirst: a metrics.listen (or listen) that cannot be served
// exits 2 at once, naming the key, before any start-up work (the shipped
// unit does not restart on 2).
func TestServeBindsFirst(t *testing.T) {
	backend := testdb.Start(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	path := writeFile(t, "c.yaml", fmt.Sprintf("listen: 127.0.0.1:0\nbackend: {addr: %s}\nmetrics: {listen: %s}\n", backend.Addr, busy.Addr()), 0o600)
	start := time.Now()
	code, _, errOut := runCmd("serve", "--config", path)
	if code != 2 || !strings.Contains(errOut, "metrics.listen: cannot serve metrics on "+busy.Addr().String()) {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	var n int
	backend.Open(t, "").QueryRow("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'leafproxy'").Scan(&n)
	if n != 0 {
		t.Errorf("start-up work done before the listener failed (took %v)", time.Since(start))
	}
	code, _, errOut = runCmd("serve", "--config", path, "--listen", busy.Addr().String())
	if code != 2 || !strings.Contains(errOut, "listen: cannot listen on "+busy.Addr().String()) {
		t.Fatalf("busy listen: exit %d, stderr:\n%s", code, errOut)
	}
}

// TestSecretsFromEnvAndFiles: the backend password from an environment
// variable or a file logs in; a file holding a password that everyone may
// read, or a config file with a password in it that everyone may read, is
// warned about; a private one is not.
func TestSecretsFromEnvAndFiles(t *testing.T) {
	backend := testdb.Start(t)
	backend.Exec(t, "CREATE USER 'leaf'@'%' IDENTIFIED BY 'right pw'", "GRANT ALL ON *.* TO 'leaf'@'%'")
	base := fmt.Sprintf("listen: 127.0.0.1:0\nbackend: {addr: %s, user: leaf, %%s}\nsequences: {store: \"leaf@tcp(%s)/ids\", store_password_file: %%s}\n", backend.Addr, backend.Addr)
	pwPrivate := writeFile(t, "pw", "right pw\n", 0o600)
	pwOpen := writeFile(t, "pw-open", "right pw\n", 0o644)
	t.Setenv("LEAFPROXY_TEST_PW", "right pw")
	for _, tc := range []struct {
		name, backendPw, storeFile string
		mode                       os.FileMode
		warn                       string
	}{
		{"env and private file", "password_env: LEAFPROXY_TEST_PW", pwPrivate, 0o644, ""},
		{"file", "password_file: " + pwPrivate, pwPrivate, 0o600, ""},
		{"open password file", "password_file: " + pwOpen, pwPrivate, 0o600, pwOpen + " holds a password (backend.password_file) and is readable by everyone (mode 0644)"},
		{"inline in an open config", "password: right pw", pwPrivate, 0o644, "holds a plaintext password (backend.password) and is readable by everyone (mode 0644)"},
		{"inline in a private config", "password: right pw", pwPrivate, 0o600, ""},
	} {
		path := writeFile(t, "c.yaml", fmt.Sprintf(base, tc.backendPw, tc.storeFile), tc.mode)
		code, out, errOut := runCmd("check", "--config", path)
		if code != 0 {
			t.Errorf("%s: exit %d:\n%s%s", tc.name, code, out, errOut)
		}
		if tc.warn == "" && strings.Contains(errOut, "warning") || tc.warn != "" && !strings.Contains(errOut, "leafproxy check: warning: ") || !strings.Contains(errOut, tc.warn) {
			t.Errorf("%s: stderr:\n%s\nwant warning %q", tc.name, errOut, tc.warn)
		}
	}
	// The wrong password from a file is the backend's refusal, naming the key.
	wrong := writeFile(t, "wrong", "nope\n", 0o600)
	path := writeFile(t, "c.yaml", fmt.Sprintf(base, "password_file: "+wrong, pwPrivate), 0o600)
	if code, _, errOut := runCmd("check", "--config", path); code != 1 || !strings.Contains(errOut, `backend.password: the backend `+backend.Addr+` refused login as "leaf"`) {
		t.Errorf("wrong password file: exit %d:\n%s", code, errOut)
	}
}
