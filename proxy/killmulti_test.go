package proxy

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/proxy/wire"
)

// With users configured, a KILL among the statements of a multi-statement
// text is mapped in place (issue 30): the statements around it run as
// directly, the KILL reaches a session the caller may kill by its
// greeting id or backend thread id, any other id is 1094 at that
// statement; what cannot be mapped before the text runs is 1235 and
// nothing of the text runs.
func TestKillInMultiStatementMapped(t *testing.T) {
	needsMariaDB(t, "KILL QUERY of a running query as MariaDB answers it (1317)")
	t.Parallel()
	ensureDB(t, sharedDB(t), "killmulti")
	sharedDB(t).Exec(t, "DROP TABLE IF EXISTS killmulti.t", "CREATE TABLE killmulti.t (v INT)")
	e := startProxy(t, sharedDB(t).Addr, func(c *testConfig) {
		c.Users = []Account{{Name: "app", Password: "secret"}, {Name: "other", Password: "pw2"}}
	})
	ctx := context.Background()
	open := func(user, pass string) *sql.DB {
		d, err := sql.Open("mysql", e.dsn(user, pass, "killmulti", "multiStatements=true"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d
	}
	app, other := open("app", "secret"), open("other", "pw2")
	var me *mysql.MySQLError
	rows := func() (n int) {
		if err := sharedDB(t).Open(t, "").QueryRow("SELECT COUNT(*) FROM killmulti.t").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	// KILL QUERY of another app session, by its greeting id and by its
	// backend thread id, after and before other statements.
	victim := dialRaw(t, e.addr)
	if p := victim.login("app", "secret", "", 0, 0); p[0] != 0 {
		t.Fatalf("login: %x", p)
	}
	victimThread := rawScalar(t, victim, "SELECT CONNECTION_ID()")
	for i, q := range []string{
		"SELECT 1; KILL QUERY %[1]d", "KILL QUERY %[2]s; SELECT 2", "INSERT INTO t VALUES (1); KILL SOFT QUERY %[1]d",
	} {
		sleep := fmt.Sprintf("SELECT SLEEP(%d)", 80+i)
		done := make(chan []byte, 1)
		go func() { ps := victim.query(sleep); done <- ps[len(ps)-1] }()
		waitForQuery(t, sleep)
		kq := fmt.Sprintf(q, victim.hello.ThreadID, victimThread)
		if _, err := app.ExecContext(ctx, kq); err != nil {
			t.Fatalf("%s: %v", kq, err)
		}
		if p := <-done; p[0] != 0xFF || wire.ParseErr(p).Code != gomysql.ER_QUERY_INTERRUPTED {
			t.Fatalf("%s: the victim's SLEEP ended with %x, want ERR 1317", kq, p)
		}
	}
	if n := rows(); n != 1 {
		t.Errorf("INSERT ...; KILL QUERY: %d rows, want 1", n)
	}

	// Another proxy user's session, and a thread the proxy did not open:
	// 1094 at the KILL, the statements before it have run, those after
	// it have not (as the server's own 1094 would).
	direct, directID := backendThread(t, sharedDB(t).Open(t, ""))
	defer direct.Close()
	for _, c := range []struct {
		db *sql.DB
		id string
	}{{other, fmt.Sprint(victim.hello.ThreadID)}, {app, fmt.Sprint(directID)}} {
		q := "INSERT INTO t VALUES (2); KILL " + c.id + "; INSERT INTO t VALUES (3)"
		_, err := c.db.ExecContext(ctx, q)
		want := "Unknown thread id: " + c.id
		if !errors.As(err, &me) || me.Number != gomysql.ER_NO_SUCH_THREAD || me.Message != want {
			t.Errorf("%s: %v, want 1094 %s", q, err, want)
		}
	}
	// Ids no thread has, as the server words them (past 2^63, past 2^64).
	directMulti, err := sql.Open("mysql", "root@tcp("+sharedDB(t).Addr+")/killmulti?multiStatements=true")
	if err != nil {
		t.Fatal(err)
	}
	defer directMulti.Close()
	for _, id := range []string{"99999999", "9223372036854775808", "18446744073709551615", "99999999999999999999"} {
		q := "INSERT INTO t VALUES (2); KILL HARD QUERY " + id + "; INSERT INTO t VALUES (3)"
		_, want := directMulti.ExecContext(ctx, q)
		_, err := app.ExecContext(ctx, q)
		if want == nil || err == nil || err.Error() != want.Error() {
			t.Errorf("%s: through the proxy %v, directly %v", q, err, want)
		}
	}
	if n := rows(); n != 11 {
		t.Errorf("after INSERT; KILL <unknown>; INSERT texts: %d rows, want 11 (1 + one per text, through the proxy and directly)", n)
	}
	if err := direct.PingContext(ctx); err != nil {
		t.Fatalf("the direct connection was killed: %v", err)
	}

	// Not mappable before the text runs: refused whole, nothing runs.
	for _, q := range []string{
		"INSERT INTO t VALUES (9); KILL @id", "INSERT INTO t VALUES (9); KILL QUERY ID 5",
		"INSERT INTO t VALUES (9); KILL USER app", "INSERT INTO t VALUES (9); KILL 1 + 1",
	} {
		if _, err := app.ExecContext(ctx, q); !errors.As(err, &me) || me.Number != gomysql.ER_NOT_SUPPORTED_YET {
			t.Errorf("%s: %v, want 1235", q, err)
		}
	}
	if n := rows(); n != 11 {
		t.Errorf("refused texts inserted rows: %d, want 11", n)
	}

	// KILL CONNECTION_ID() is the session's own: 1927, and it is gone.
	self, _ := backendThread(t, app)
	if code, msg := killAnswer(t, self, "DO 1; KILL CONNECTION_ID ( )", false); code != 1927 {
		t.Errorf("DO 1; KILL CONNECTION_ID(): %d %s, want 1927", code, msg)
	}
	if err := self.PingContext(ctx); err == nil {
		t.Error("the session that killed itself still answers")
	}
	self.Close()

	// KILL CONNECTION of an idle app session in a multi-statement text
	// closes that client.
	if _, err := app.ExecContext(ctx, fmt.Sprintf("SELECT 1; KILL %d", victim.hello.ThreadID)); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, victim.l.Conn)
}
