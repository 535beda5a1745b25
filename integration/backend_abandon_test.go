package integration

import (
	"context"
	"database/sql"
	"testing"
	"time"
)

// A client that goes away while its statement runs (a driver's read
// timeout or context deadline closes the socket): the backend stops the
// statement at once. Directly MariaDB notices within about 5 s in SLEEP,
// and only when it writes for other statements; through the proxy it
// used to run on until done, with nobody to read its answer.
func TestBackendSeesAbandonedQuery(t *testing.T) {
	cp := startClientProxy(t, "adb", nil)
	root := rootDB(t, cp.b)
	gone := func(what string, id int64) {
		t.Helper()
		t0 := time.Now()
		if !threadGone(t, root, id, 3*time.Second) {
			var info sql.NullString
			_ = root.QueryRow("SELECT INFO FROM information_schema.PROCESSLIST WHERE ID = ?", id).Scan(&info)
			t.Errorf("%s: the client went away, but backend thread %d still runs %q 3s later", what, id, info.String)
			return
		}
		t.Logf("%s: backend thread gone %v after the client", what, time.Since(t0).Round(time.Millisecond))
	}
	// go-sql-driver: a context deadline closes the connection. Compressed,
	// the session runs on its own goroutine instead of an event loop.
	for _, params := range []map[string]string{nil, {"compress": "true"}} {
		c, id := conn(t, cp.lf.open(t, "adb", params))
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		var v int
		err := c.QueryRowContext(ctx, "SELECT SLEEP(60)").Scan(&v)
		cancel()
		if err == nil {
			t.Fatal("SLEEP(60) returned within 300ms")
		}
		gone("go-sql-driver "+map[bool]string{true: "compressed", false: "plain"}[params != nil], id)
	}
	// PyMySQL: read_timeout closes the connection.
	needPyMySQL(t)
	script := writeScript(t, "backend_sees.py", pyBackendSees)
	var out struct {
		Tid   int64
		Error int
	}
	runJSON(t, 60*time.Second, &out, "", nil, systemPython, script, "timeout", cp.host, cp.port, "app", "secret", "adb")
	if out.Error != 2013 {
		t.Fatalf("PyMySQL read_timeout: error %d, want 2013", out.Error)
	}
	gone("PyMySQL read_timeout", out.Tid)
}
