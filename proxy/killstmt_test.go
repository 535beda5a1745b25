package proxy

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-sql-driver/mysql"
)

// The id of an execute of KILL ?, however the client binds it.
func TestKillStmtBind(t *testing.T) {
	exec := func(null bool, typ ...byte) []byte {
		p := []byte{gomysql.COM_STMT_EXECUTE, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0}
		if null {
			p[10] = 1
		}
		if typ == nil {
			return append(p, 0)
		}
		return append(append(p, 1), typ...)
	}
	le := func(n int, v uint64) []byte {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint64(b, v)
		return b[:n]
	}
	str := func(s string) []byte { return append([]byte{byte(len(s))}, s...) }
	cases := []struct {
		name string
		pkt  []byte
		id   uint32
		code uint16
	}{
		{"longlong", append(exec(false, gomysql.MYSQL_TYPE_LONGLONG, 0), le(8, 42)...), 42, 0},
		{"unsigned longlong", append(exec(false, gomysql.MYSQL_TYPE_LONGLONG, 0x80), le(8, 1<<30+1)...), 1<<30 + 1, 0},
		{"long", append(exec(false, gomysql.MYSQL_TYPE_LONG, 0), le(4, 7)...), 7, 0},
		{"tiny", append(exec(false, gomysql.MYSQL_TYPE_TINY, 0), 9), 9, 0},
		{"negative tiny", append(exec(false, gomysql.MYSQL_TYPE_TINY, 0), 0xFF), 0, gomysql.ER_NOT_SUPPORTED_YET},
		{"too large", append(exec(false, gomysql.MYSQL_TYPE_LONGLONG, 0), le(8, 1<<33)...), 0, gomysql.ER_NOT_SUPPORTED_YET},
		{"digits", append(exec(false, gomysql.MYSQL_TYPE_VAR_STRING, 0), str("123")...), 123, 0},
		{"decimal", append(exec(false, gomysql.MYSQL_TYPE_NEWDECIMAL, 0), str("5")...), 5, 0},
		{"text", append(exec(false, gomysql.MYSQL_TYPE_STRING, 0), str("12a")...), 0, gomysql.ER_NOT_SUPPORTED_YET},
		{"double", append(exec(false, gomysql.MYSQL_TYPE_DOUBLE, 0), le(8, math.Float64bits(77))...), 77, 0},
		{"fraction", append(exec(false, gomysql.MYSQL_TYPE_DOUBLE, 0), le(8, math.Float64bits(7.5))...), 0, gomysql.ER_NOT_SUPPORTED_YET},
		{"null", exec(true, gomysql.MYSQL_TYPE_NULL, 0), 0, gomysql.ER_NOT_SUPPORTED_YET},
		{"date", append(exec(false, gomysql.MYSQL_TYPE_DATE, 0), 0), 0, gomysql.ER_NOT_SUPPORTED_YET},
		{"short value", append(exec(false, gomysql.MYSQL_TYPE_LONGLONG, 0), 1, 2), 0, gomysql.ER_MALFORMED_PACKET},
		{"no types ever bound", append(exec(false), le(8, 1)...), 0, gomysql.ER_MALFORMED_PACKET},
		{"truncated", []byte{gomysql.COM_STMT_EXECUTE, 1, 0, 0, 0}, 0, gomysql.ER_MALFORMED_PACKET},
	}
	for _, c := range cases {
		var ks killStmt
		id, code, msg := ks.bind(c.pkt)
		if id != c.id || code != c.code || (code != 0) != (msg != "") {
			t.Errorf("%s: id %d, code %d (%s); want %d, %d", c.name, id, code, msg, c.id, c.code)
		}
	}
	// Types sent once are remembered for executes that do not resend them.
	var ks killStmt
	if id, _, msg := ks.bind(append(exec(false, gomysql.MYSQL_TYPE_LONG, 0), le(4, 3)...)); id != 3 || msg != "" {
		t.Fatalf("first execute: %d %s", id, msg)
	}
	if id, _, msg := ks.bind(append(exec(false), le(4, 4)...)); id != 4 || msg != "" {
		t.Fatalf("execute without types: %d %s", id, msg)
	}
	ks.long = true
	if _, code, _ := ks.bind(append(exec(false), le(4, 4)...)); code != gomysql.ER_NOT_SUPPORTED_YET {
		t.Fatalf("long data: code %d", code)
	}
}

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
