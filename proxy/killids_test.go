package proxy

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"testing"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/proxy/relay"
)

// Backend-account mode (issue 30): the greeting's connection id,
// CONNECTION_ID() and the processlist's ID are one number, the backend
// thread's, and the proxy lists the session under it.
func TestBackendAccountIDsAgree(t *testing.T) {
	needsMariaDB(t, "MariaDB's processlist and thread ids")
	t.Parallel()
	e := startProxy(t, sharedDB(t).Addr, func(c *testConfig) { c.Users = nil })
	for _, compress := range []bool{false, true} {
		rc := dialRaw(t, e.addr)
		var caps uint32
		if compress {
			caps = gomysql.CLIENT_COMPRESS
		}
		if p := rc.login("root", "", "", caps, 0); p[0] != 0 {
			t.Fatalf("login: %x", p)
		}
		if compress {
			rc.l.Compress(false, clientReadBuf, clientWriteBuf)
		}
		greeted := rc.hello.ThreadID
		if greeted == 0 || greeted >= sessionIDBase {
			t.Errorf("greeting's connection id %d is not a backend thread id", greeted)
		}
		if got := rawScalar(t, rc, "SELECT CONNECTION_ID()"); got != strconv.FormatUint(uint64(greeted), 10) {
			t.Errorf("compress %v: greeted with %d, CONNECTION_ID() = %s", compress, greeted, got)
		}
		// The processlist, read through another session and directly.
		for _, db := range []*sql.DB{sharedDB(t).Open(t, ""), openAs(t, e, "root")} {
			var user, host string
			if err := db.QueryRow("SELECT USER, HOST FROM information_schema.PROCESSLIST WHERE ID = ?", greeted).Scan(&user, &host); err != nil {
				t.Errorf("processlist has no thread %d: %v", greeted, err)
			} else if user != "root" {
				t.Errorf("processlist thread %d is %s's", greeted, user)
			}
		}
		listed := false
		for _, si := range e.srv.SessionList() {
			listed = listed || si.ID == greeted && si.ThreadID == greeted
		}
		if !listed {
			t.Errorf("the proxy does not list a session with id and thread %d", greeted)
		}
	}
}

// rawScalar runs a one-row, one-column query on a raw client and returns
// its value as text.
func rawScalar(t *testing.T, rc *rawClient, q string) string {
	t.Helper()
	ps := rc.query(q)
	if ps[0][0] == 0xFF || len(ps) < 4 {
		t.Fatalf("%s: %x", q, ps[0])
	}
	row, err := relay.TextRow(ps[3], 1)
	if err != nil || row[0] == nil {
		t.Fatalf("%s: row %x: %v", q, ps[3], err)
	}
	return *row[0]
}

func openAs(t *testing.T, e *env, user string) *sql.DB {
	t.Helper()
	d, err := sql.Open("mysql", e.dsn(user, "", "", "multiStatements=true"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// Backend-account mode: KILL QUERY of another session by its greeting id
// reaches the backend untouched in every form (alone, after SELECT 1 in
// one multi-statement text, prepared, EXECUTE IMMEDIATE, PREPARE FROM),
// and KILL CONNECTION of an idle session, or of one's own, closes that
// client's connection.
func TestBackendAccountKillForms(t *testing.T) {
	needsMariaDB(t, "KILL of a running query as MariaDB answers it (1317)")
	t.Parallel()
	e := startProxy(t, sharedDB(t).Addr, func(c *testConfig) { c.Users = nil })
	db := openAs(t, e, "root")
	ctx := context.Background()
	killer, _ := backendThread(t, db)
	defer killer.Close()
	victim, victimID := backendThread(t, db)
	defer victim.Close()
	for i, form := range []struct {
		q        string
		prepared bool
	}{
		{"KILL QUERY %d", false},
		{"SELECT 1; KILL QUERY %d", false},
		{"KILL QUERY %d; SELECT 1", false},
		{"KILL QUERY %d", true},
		{"EXECUTE IMMEDIATE 'KILL QUERY %d'", false},
		{"PREPARE k FROM 'KILL QUERY %d'; EXECUTE k; DEALLOCATE PREPARE k", false},
	} {
		q := fmt.Sprintf("SELECT SLEEP(%d)", 70+i)
		done := make(chan error, 1)
		go func() {
			var v int
			done <- victim.QueryRowContext(ctx, q).Scan(&v)
		}()
		waitForQuery(t, q)
		kq := fmt.Sprintf(form.q, victimID)
		if form.prepared {
			if code, msg := killAnswer(t, killer, kq, true); code != 0 {
				t.Fatalf("%s (prepared): %d %s", kq, code, msg)
			}
		} else if _, err := killer.ExecContext(ctx, kq); err != nil {
			t.Fatalf("%s: %v", kq, err)
		}
		var me *mysql.MySQLError
		if err := <-done; err != nil && !(errors.As(err, &me) && me.Number == 1317) {
			t.Fatalf("%s: the victim's SLEEP: %v", kq, err)
		}
	}

	// KILL of an idle session closes its client; the killer lives on.
	other := dialRaw(t, e.addr)
	if p := other.login("root", "", "", 0, 0); p[0] != 0 {
		t.Fatalf("login: %x", p)
	}
	if _, err := killer.ExecContext(ctx, fmt.Sprintf("KILL %d", other.hello.ThreadID)); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, other.l.Conn)
	// COM_PROCESS_KILL too.
	other = dialRaw(t, e.addr)
	if p := other.login("root", "", "", 0, 0); p[0] != 0 {
		t.Fatalf("login: %x", p)
	}
	pk := dialRaw(t, e.addr)
	if p := pk.login("root", "", "", 0, 0); p[0] != 0 {
		t.Fatalf("login: %x", p)
	}
	if p := pk.command(binary.LittleEndian.AppendUint32([]byte{gomysql.COM_PROCESS_KILL}, other.hello.ThreadID)); p[0] != 0 {
		t.Fatalf("COM_PROCESS_KILL: %x", p)
	}
	expectClosed(t, other.l.Conn)
	if err := killer.PingContext(ctx); err != nil {
		t.Fatalf("the killer's session ended: %v", err)
	}

	// Killing one's own connection: 1927 from the backend, then the
	// proxy closes the client, in a text of its own and as the last
	// statement of a multi-statement text.
	for _, q := range []string{"KILL CONNECTION_ID()", "SELECT 1; KILL %d"} {
		self := dialRaw(t, e.addr)
		if p := self.login("root", "", "", gomysql.CLIENT_MULTI_STATEMENTS|gomysql.CLIENT_MULTI_RESULTS, 0); p[0] != 0 {
			t.Fatalf("login: %x", p)
		}
		if q != "KILL CONNECTION_ID()" {
			q = fmt.Sprintf(q, self.hello.ThreadID)
			self.query(q) // SELECT 1's result set: the ERR follows
		} else if p := self.query(q)[0]; p[0] != 0xFF || binary.LittleEndian.Uint16(p[1:3]) != 1927 { // ER_CONNECTION_KILLED
			t.Fatalf("%s: %x, want ERR 1927", q, p)
		}
		expectClosed(t, self.l.Conn)
	}
}
