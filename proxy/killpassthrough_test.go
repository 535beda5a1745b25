package proxy

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
)

// In backend-account mode every session is logged in to the backend as the
// client's own account: KILL between two accounts gets the backend's own
// answer (1095 without CONNECTION ADMIN, as directly), and KILL USER by an
// account with CONNECTION ADMIN ends the other account's sessions and
// counts them, as the server does: the KILL is the backend's, untouched
// (proxy/kill/relay.go).
func TestKillPassThroughAccounts(t *testing.T) {
	needsMariaDB(t, "backend accounts (CREATE USER, mysql.user)")
	t.Parallel()
	sharedDB(t).Exec(t,
		"CREATE USER IF NOT EXISTS kpt_a@'%'", "GRANT SELECT ON *.* TO kpt_a@'%'",
		"CREATE USER IF NOT EXISTS kpt_b@'%'", "GRANT SELECT ON *.* TO kpt_b@'%'")
	e := startProxy(t, sharedDB(t).Addr, func(c *testConfig) { c.Users = nil })
	open := func(dsn string) *sql.DB {
		d, err := sql.Open("mysql", dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d
	}
	viaA := open(e.dsn("kpt_a", "", "", ""))
	a1, a1ID := backendThread(t, viaA)
	defer a1.Close()
	a2, _ := backendThread(t, viaA)
	defer a2.Close()
	b, _ := backendThread(t, open(e.dsn("kpt_b", "", "", "")))
	defer b.Close()
	root, _ := backendThread(t, open(e.dsn("root", "", "", "")))
	defer root.Close()

	// kpt_b may not kill kpt_a's thread: the backend's 1095, word for word.
	directB, _ := backendThread(t, open("kpt_b@tcp("+sharedDB(t).Addr+")/"))
	defer directB.Close()
	q := fmt.Sprintf("KILL %d", a1ID)
	wantCode, wantMsg := killAnswer(t, directB, q, false)
	if wantCode != 1095 {
		t.Fatalf("directly: %s as kpt_b: %d %s, want 1095", q, wantCode, wantMsg)
	}
	for _, prepared := range []bool{false, true} {
		if code, msg := killAnswer(t, b, q, prepared); code != wantCode || msg != wantMsg {
			t.Errorf("through the proxy (prepared %v): %s as kpt_b: %d %q, directly %d %q", prepared, q, code, msg, wantCode, wantMsg)
		}
	}
	if err := a1.PingContext(context.Background()); err != nil {
		t.Fatalf("kpt_a's session was killed by kpt_b: %v", err)
	}

	// root (CONNECTION ADMIN) kills kpt_b's queries and every kpt_a
	// session. The KILL reaches the backend untouched: kpt_b's two
	// threads are counted, the proxy session's and the direct one's, as
	// directly.
	for _, c := range []struct {
		stmt string
		want int64
	}{{"KILL QUERY USER kpt_b@'%'", 2}, {"KILL HARD CONNECTION USER kpt_a", 2}} {
		res, err := root.ExecContext(context.Background(), c.stmt)
		if err != nil {
			t.Fatalf("%s: %v", c.stmt, err)
		}
		if n, _ := res.RowsAffected(); n != c.want {
			t.Errorf("%s: %d rows affected, want %d", c.stmt, n, c.want)
		}
	}
	if err := b.PingContext(context.Background()); err != nil {
		t.Errorf("KILL QUERY USER ended kpt_b's session: %v", err)
	}
	for i, c := range []*sql.Conn{a1, a2} {
		if err := c.PingContext(context.Background()); err == nil {
			t.Errorf("kpt_a's session %d still answers after KILL CONNECTION USER", i+1)
		}
	}
}
