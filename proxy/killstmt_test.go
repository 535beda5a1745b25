package proxy

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-sql-driver/mysql"
)

// backendThread opens one connection of db and returns it with its backend
// thread id.
func backendThread(t testing.TB, db *sql.DB) (*sql.Conn, int64) {
	t.Helper()
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := c.QueryRowContext(context.Background(), "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	return c, id
}

// A prepared KILL (binary protocol) is mapped and checked as KILL in a
// COM_QUERY: a thread the proxy did not open is 1094, a session of the
// same user is killed; KILL in EXECUTE IMMEDIATE text is refused.
func TestPreparedKill(t *testing.T) {
	needsMariaDB(t, "KILL ? prepared, as MariaDB runs it")
	t.Parallel()
	e := startProxy(t, sharedDB(t).Addr, nil)
	direct := sharedDB(t).Open(t, "")
	stranger, strangerID := backendThread(t, direct)
	defer stranger.Close()

	db := e.open(t, "", "") // no interpolateParams: db.Prepare is COM_STMT_PREPARE
	var me *mysql.MySQLError
	k, err := db.Prepare("KILL ?")
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if _, err := k.Exec(strangerID); !errors.As(err, &me) || me.Number != gomysql.ER_NO_SUCH_THREAD {
		t.Errorf("prepared KILL ? of a direct connection's thread: %v, want 1094", err)
	}
	if _, err := db.Exec(fmt.Sprintf("KILL %d", strangerID)); !errors.As(err, &me) || me.Number != gomysql.ER_NO_SUCH_THREAD {
		t.Errorf("KILL of a direct connection's thread: %v, want 1094", err)
	}
	kn, err := db.Prepare(fmt.Sprintf("KILL CONNECTION %d", strangerID))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kn.Exec(); !errors.As(err, &me) || me.Number != gomysql.ER_NO_SUCH_THREAD {
		t.Errorf("prepared KILL CONNECTION <n> of a direct connection's thread: %v, want 1094", err)
	}
	kn.Close()
	for _, q := range []string{fmt.Sprintf("EXECUTE IMMEDIATE CONCAT('KILL ', %d)", strangerID)} {
		if _, err := db.Exec(q); !errors.As(err, &me) || me.Number != gomysql.ER_NOT_SUPPORTED_YET {
			t.Errorf("%s: %v, want 1235", q, err)
		}
	}
	if err := stranger.PingContext(context.Background()); err != nil {
		t.Fatalf("the direct connection was killed: %v", err)
	}

	// A session of the same proxy user: KILL QUERY ? stops its statement.
	victim, victimID := backendThread(t, e.open(t, "", ""))
	defer victim.Close()
	done := make(chan error, 1)
	go func() {
		var v int
		done <- victim.QueryRowContext(context.Background(), "SELECT SLEEP(59)").Scan(&v)
	}()
	waitForQuery(t, "SELECT SLEEP(59)")
	kq, err := db.Prepare("KILL QUERY ?")
	if err != nil {
		t.Fatal(err)
	}
	defer kq.Close()
	if _, err := kq.Exec(victimID); err != nil {
		t.Fatalf("prepared KILL QUERY ? of a proxy session: %v", err)
	}
	select {
	case err := <-done:
		if err != nil && !(errors.As(err, &me) && me.Number == 1317) {
			t.Fatalf("killed SLEEP: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("prepared KILL QUERY did not stop the statement")
	}
	if _, err := k.Exec(victimID); err != nil {
		t.Fatalf("prepared KILL ? of a proxy session: %v", err)
	}
	if err := victim.PingContext(context.Background()); err == nil {
		t.Fatal("the killed session still answers")
	}
}
