package proxy

import (
	"context"
	"errors"
	"fmt"
	"testing"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-sql-driver/mysql"
)

// PREPARE name FROM '<KILL>' succeeds (or fails) as the server answers it,
// but whatever executes the statement afterwards, a text EXECUTE, a
// multi-statement text or a stored procedure, hears 1235 and reaches no
// thread.
func TestPrepareFromKill(t *testing.T) {
	needsMariaDB(t, "PREPARE ... FROM an expression (go-mysql-server does not parse it)")
	t.Parallel()
	e := startProxy(t, sharedDB(t).Addr, nil)
	stranger, strangerID := backendThread(t, sharedDB(t).Open(t, ""))
	defer stranger.Close()
	ctx := context.Background()
	c, _ := backendThread(t, e.open(t, "", "multiStatements=true"))
	defer c.Close()
	ensureDB(t, sharedDB(t), "killdyn")
	direct, _ := backendThread(t, sharedDB(t).Open(t, ""))
	defer direct.Close()

	// The server's own answers to the PREPARE itself.
	for _, q := range []string{"PREPARE s FROM 'KILL nosuchcol'", "PREPARE s FROM 'KILL 1 +'", "PREPARE s FROM ' KILL 0 '"} {
		wantCode, wantMsg := killAnswer(t, direct, q, false)
		if code, msg := killAnswer(t, c, q, false); code != wantCode || msg != wantMsg {
			t.Errorf("%s: %d %q through the proxy, directly %d %q", q, code, msg, wantCode, wantMsg)
		}
	}
	var me *mysql.MySQLError
	refused := func(what string, err error) {
		t.Helper()
		if !errors.As(err, &me) || me.Number != gomysql.ER_NOT_SUPPORTED_YET {
			t.Errorf("%s: %v, want 1235", what, err)
		}
	}
	if _, err := c.ExecContext(ctx, fmt.Sprintf("PREPARE `s` FROM CONCAT('KILL ', %d)", strangerID)); err != nil {
		t.Fatalf("PREPARE of a KILL: %v", err)
	}
	_, err := c.ExecContext(ctx, "EXECUTE s")
	refused("EXECUTE s", err)
	_, err = c.ExecContext(ctx, "DO 1; EXECUTE S")
	refused("EXECUTE in a multi-statement text", err)
	if _, err := c.ExecContext(ctx, "CREATE OR REPLACE PROCEDURE killdyn.kill_prepared() EXECUTE s"); err != nil {
		t.Fatal(err)
	}
	defer sharedDB(t).Exec(t, "DROP PROCEDURE IF EXISTS killdyn.kill_prepared")
	_, err = c.ExecContext(ctx, "CALL killdyn.kill_prepared()")
	refused("EXECUTE in a procedure", err)
	if err := stranger.PingContext(ctx); err != nil {
		t.Fatalf("the direct connection was killed: %v", err)
	}
	// The name is a statement of the session like any other.
	if _, err := c.ExecContext(ctx, "DEALLOCATE PREPARE s"); err != nil {
		t.Errorf("DEALLOCATE PREPARE s: %v", err)
	}
}
