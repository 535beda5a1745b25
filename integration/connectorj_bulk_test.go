package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
)

// connectorJ is MariaDB Connector/J from Debian's libmariadb-java.
const connectorJ = "/usr/share/java/mariadb-java-client.jar"

var (
	javaOnce sync.Once
	javaDir  string
	javaErr  error
)

// javaClasses compiles the Java programs in testdata once per test binary.
func javaClasses(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(connectorJ); err != nil {
		t.Skip("MariaDB Connector/J not installed (apt-get install libmariadb-java; scripts/test.sh does it as root)")
	}
	if _, err := exec.LookPath("javac"); err != nil {
		t.Skip("javac not found (a JDK is needed for the Connector/J tests)")
	}
	javaOnce.Do(func() {
		javaDir, javaErr = os.MkdirTemp("", "leafproxy-java-")
		if javaErr != nil {
			return
		}
		src, _ := filepath.Glob("testdata/*.java")
		args := append([]string{"-d", javaDir, "-cp", connectorJ}, src...)
		if out, err := exec.Command("javac", args...).CombinedOutput(); err != nil {
			javaErr = errorString("javac: " + err.Error() + ": " + string(out))
		}
	})
	if javaErr != nil {
		t.Fatal(javaErr)
	}
	return javaDir
}

type errorString string

func (e errorString) Error() string { return string(e) }

// runJava runs class with args and returns its standard output.
func runJava(t *testing.T, class string, args ...string) string {
	t.Helper()
	dir := javaClasses(t)
	cmd := exec.Command("java", append([]string{"-cp", dir + ":" + connectorJ, class}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("java %s: %v\n%s", class, err, errb.String())
	}
	return out.String()
}

func jdbcURL(addr, db, user, pass string) string {
	return "jdbc:mariadb://" + addr + "/" + db + "?user=" + user + "&password=" + pass + "&useBulkStmts=true"
}

// A Connector/J batch on a table whose key the proxy fills goes as one
// COM_STMT_BULK_EXECUTE; every row must get its own key, and the keys the
// driver reports must be the stored ones.
func TestConnectorJBulkKeys(t *testing.T) {
	backend := testdb.Start(t)
	backend.Open(t, "app")
	backend.Exec(t, "CREATE TABLE app.orders (id BIGINT PRIMARY KEY, v VARCHAR(64))",
		"CREATE TABLE app.plain (id BIGINT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(64))")
	cfg := leafConfig(t, backend, nil)
	cfg.Sequences.Tags = map[string]config.Tag{"order": {Generator: "segment", Step: 100000}}
	cfg.Tables = []config.Table{{Table: "orders", Column: "id", Tag: "order"}}
	lf := startLeaf(t, cfg)
	const n = 5000

	direct := runJava(t, "BulkKeys", jdbcURL(backend.Addr, "app", "root", ""), "plain", strconv.Itoa(n))
	// A bulk execute counts once in Com_stmt_execute; row-by-row, n times.
	// The proxy's greeting offers bulk operations as the backend's does, so
	// Connector/J batches the same way through it.
	var name string
	var execs int
	if err := backend.Open(t, "app").QueryRow("SHOW GLOBAL STATUS LIKE 'Com_stmt_execute'").Scan(&name, &execs); err != nil || execs >= n {
		t.Fatalf("Connector/J ran %d executes for a batch of %d (%v): no COM_STMT_BULK_EXECUTE, the test would not test bulk", execs, n, err)
	}
	out := runJava(t, "BulkKeys", jdbcURL(lf.addr, "app", "app", "secret"), "orders", strconv.Itoa(n))
	lines := strings.Split(strings.TrimSpace(out), "\n")
	t.Logf("batch of %d: direct (AUTO_INCREMENT) %s, through leafproxy (filled keys) %s",
		n, lastLine(direct), lines[len(lines)-1])

	db := backend.Open(t, "app")
	var rows, distinct int
	if err := db.QueryRow("SELECT COUNT(*), COUNT(DISTINCT id) FROM orders").Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	if rows != n || distinct != n {
		t.Fatalf("%d rows with %d distinct keys, want %d", rows, distinct, n)
	}
	keys := lines[:len(lines)-1]
	if len(keys) != n {
		t.Fatalf("driver reported %d generated keys, want %d", len(keys), n)
	}
	for i, k := range keys {
		var v string
		if err := db.QueryRow("SELECT v FROM orders WHERE id = ?", k).Scan(&v); err != nil || v != "row"+strconv.Itoa(i) {
			t.Fatalf("reported key %d (%s) holds %q, %v; want row%d", i, k, v, err, i)
		}
	}
}

func lastLine(s string) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return l[len(l)-1]
}

// A Connector/J batch with the key as a placeholder goes through the proxy
// as one COM_STMT_BULK_EXECUTE (the generated keys are extra parameters of
// every row): bound keys are kept, NULL keys filled, NULLs of other
// columns kept.
func TestConnectorJBulkBoundKeys(t *testing.T) {
	backend := testdb.Start(t)
	backend.Open(t, "app")
	backend.Exec(t, "CREATE TABLE app.orders (id BIGINT PRIMARY KEY, v VARCHAR(64), n INT)")
	cfg := leafConfig(t, backend, nil)
	cfg.Sequences.Tags = map[string]config.Tag{"order": {Generator: "segment", Step: 100000}}
	cfg.Tables = []config.Table{{Table: "orders", Column: "id", Tag: "order"}}
	lf := startLeaf(t, cfg)
	const n = 3000
	db := backend.Open(t, "app")
	execs := func() int {
		var name string
		var v int
		if err := db.QueryRow("SHOW GLOBAL STATUS LIKE 'Com_stmt_execute'").Scan(&name, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := execs()
	out := runJava(t, "BulkKeyed", jdbcURL(lf.addr, "app", "app", "secret"), "orders", strconv.Itoa(n))
	if got := execs() - before; got >= n/10 {
		t.Fatalf("the backend ran %d executes for a batch of %d: the bulk execute was split", got, n)
	}
	t.Logf("batch of %d with bound keys through leafproxy: %s", n, lastLine(out))
	rows, err := db.Query("SELECT id, v, n FROM orders")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	count := 0
	for rows.Next() {
		var id int64
		var v string
		var nn *int64
		if err := rows.Scan(&id, &v, &nn); err != nil {
			t.Fatal(err)
		}
		i, _ := strconv.Atoi(strings.TrimPrefix(v, "row"))
		switch {
		case i%3 == 0 && id != 1_000_000+int64(i):
			t.Errorf("row %d: bound key stored as %d", i, id)
		case i%3 != 0 && id <= 0:
			// Generated: below the bound keys, or (once the proxy saw a
			// bound key, which moves the tag as AUTO_INCREMENT's counter)
			// between them; the primary key holds them apart.
			t.Errorf("row %d: NULL key stored as %d, want a generated key", i, id)
		case (i%2 == 1) != (nn == nil), nn != nil && *nn != int64(i):
			t.Errorf("row %d: n stored as %v", i, nn)
		}
		count++
	}
	if count != n {
		t.Fatalf("%d rows stored, want %d", count, n)
	}
}
