package proxy

import (
	"context"
	"strings"
	"testing"

	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

// A session idle for longer than idle.BackendWatch gives its buffers back
// (park) and takes them again at the next command: plain, compressed, with
// a large statement before the pause and a large result after it.
func TestParkedSessionsWork(t *testing.T) {
	needsMariaDB(t, "a compressed session parking its buffers (go-mysql-server has no compression; there the compressed session did not park within 60 s, not investigated further)")
	t.Parallel() // waits more than it works; own servers or own tables
	ensureDB(t, sharedDB(t), "parkdb")
	sharedDB(t).Exec(t, "DROP TABLE IF EXISTS parkdb.t", "CREATE TABLE parkdb.t (id INT PRIMARY KEY, s LONGTEXT)")
	e := startProxy(t, sharedDB(t).Addr, nil)
	big := strings.Repeat("0123456789", 100_000)
	for i, params := range []string{"", "compress=true"} {
		db := e.open(t, "parkdb", params)
		conn, err := db.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(context.Background(), "INSERT INTO t VALUES (?, '"+big+"')", i); err != nil {
			t.Fatal(err)
		}
		for round := range 2 {
			// Parked: by the idle watch after idle.BackendWatch on the
			// session's goroutine; at the move onto an event loop, where
			// it stays parked between commands.
			parks := e.srv.idleMem.Parks.Load()
			testwait.For(t, "the idle session parks its buffers", func() bool {
				return e.srv.idleMem.Parks.Load() > parks || (params == "" && loopsOn && e.srv.LoopStats().Sessions == 1)
			})
			var s string
			if err := conn.QueryRowContext(context.Background(), "SELECT s FROM t WHERE id = ?", i).Scan(&s); err != nil || s != big {
				t.Fatalf("%q, after idle %d: %v (len %d)", params, round, err, len(s))
			}
		}
		conn.Close()
	}
}
