package proxy

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// killAnswer runs q on c (text protocol, or prepared and executed with the
// binary protocol) and returns the server's error code and message (0, ""
// for OK).
func killAnswer(t *testing.T, c *sql.Conn, q string, prepared bool) (uint16, string) {
	t.Helper()
	ctx := context.Background()
	var err error
	if prepared {
		var st *sql.Stmt
		if st, err = c.PrepareContext(ctx, q); err == nil {
			_, err = st.ExecContext(ctx)
			st.Close()
		}
	} else {
		_, err = c.ExecContext(ctx, q)
	}
	var me *mysql.MySQLError
	switch {
	case err == nil:
		return 0, ""
	case errors.As(err, &me):
		return me.Number, me.Message
	}
	t.Fatalf("%s: %v", q, err)
	return 0, ""
}

// KILL with an expression, KILL QUERY ID, and the errors of malformed KILLs
// answer through the proxy exactly as the server answers directly, in the
// text and the binary protocol, for ids no proxy session has.
func TestKillFormsAnswerAsServer(t *testing.T) {
	needsMariaDB(t, "KILL's forms answered as MariaDB answers them")
	t.Parallel()
	e := startProxy(t, sharedDB(t).Addr, nil)
	direct, _ := backendThread(t, sharedDB(t).Open(t, ""))
	defer direct.Close()
	via, _ := backendThread(t, e.open(t, "", ""))
	defer via.Close()
	for _, q := range []string{
		"KILL 999999 + 1", "KILL '999999'", "KILL -1", "KILL 2.5", "KILL 2.5e0", "KILL NULL", "KILL 'abc'",
		"KILL HARD QUERY 999990 + 9", "KILL SOFT CONNECTION @@port * 0 + 999999", "KILL (SELECT 999999)",
		"KILL foo", "KILL foo bar", "KILL 1 +", "KILL\n\n 1 +", "KILL", "KILL ?",
		"KILL (SELECT COUNT(*) FROM mysql.user)", "KILL 1 + (SELECT 1 FROM mysql.user LIMIT 1)",
		"KILL QUERY ID 999999999", "KILL QUERY ID 999999999 + 1", "KILL QUERY ID foo", "KILL QUERY ID '999999999x'",
		"KILL USER nosuch", "KILL QUERY USER 'nosuch'@'%'", "KILL USER 'nosuch'@localhost",
	} {
		for _, prepared := range []bool{false, true} {
			if prepared && q == "KILL ?" {
				continue // a parameter to bind; TestPreparedKill has it
			}
			wantCode, wantMsg := killAnswer(t, direct, q, prepared)
			code, msg := killAnswer(t, via, q, prepared)
			if code != wantCode || msg != wantMsg {
				t.Errorf("%s (prepared %v): through the proxy %d %q, directly %d %q", q, prepared, code, msg, wantCode, wantMsg)
			}
		}
	}
	if err := direct.PingContext(context.Background()); err != nil {
		t.Fatalf("the direct connection was killed: %v", err)
	}
}

// A session that kills its own connection by expression hears 1927, as
// directly, and its connection is gone; killing its own query is 1317 and
// the session lives on.
func TestKillConnectionID(t *testing.T) {
	needsMariaDB(t, "KILL and CONNECTION_ID() as MariaDB runs them")
	t.Parallel()
	e := startProxy(t, sharedDB(t).Addr, nil)
	for _, prepared := range []bool{false, true} {
		c, _ := backendThread(t, e.open(t, "", ""))
		if code, msg := killAnswer(t, c, "KILL QUERY CONNECTION_ID()", prepared); code != 1317 {
			t.Errorf("KILL QUERY CONNECTION_ID() (prepared %v): %d %s, want 1317", prepared, code, msg)
		}
		if err := c.PingContext(context.Background()); err != nil {
			t.Fatalf("after killing its own query the session is gone: %v", err)
		}
		if code, msg := killAnswer(t, c, "KILL CONNECTION_ID()", prepared); code != 1927 || msg != "Connection was killed" {
			t.Errorf("KILL CONNECTION_ID() (prepared %v): %d %s, want 1927", prepared, code, msg)
		}
		if err := c.PingContext(context.Background()); err == nil {
			t.Errorf("prepared %v: the session that killed itself still answers", prepared)
		}
		c.Close()
	}
}

// KILL by expression, KILL QUERY ID and KILL USER reach proxy sessions of
// the same user, and never a thread the proxy did not open.
func TestKillFormsReachOwnSessions(t *testing.T) {
	needsMariaDB(t, "KILL's forms (id expressions, user variables) as MariaDB runs them")
	t.Parallel()
	e := startProxy(t, sharedDB(t).Addr, nil)
	db := e.open(t, "", "")
	killer, _ := backendThread(t, db)
	defer killer.Close()
	ctx := context.Background()

	// sleeper starts SELECT SLEEP(n) on c and returns its outcome channel.
	sleeper := func(c *sql.Conn, q string) chan error {
		done := make(chan error, 1)
		go func() {
			var v int
			done <- c.QueryRowContext(ctx, q).Scan(&v)
		}()
		waitForQuery(t, q)
		return done
	}
	interrupted := func(what string, done chan error) {
		t.Helper()
		select {
		case err := <-done:
			var me *mysql.MySQLError
			if err != nil && !(errors.As(err, &me) && me.Number == 1317) {
				t.Fatalf("%s: killed SLEEP: %v", what, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s did not stop the statement", what)
		}
	}

	// KILL QUERY by a user variable holding the victim's CONNECTION_ID().
	victim, victimID := backendThread(t, db)
	defer victim.Close()
	done := sleeper(victim, "SELECT SLEEP(61)")
	if _, err := killer.ExecContext(ctx, fmt.Sprintf("SET @victim = %d", victimID)); err != nil {
		t.Fatal(err)
	}
	if code, msg := killAnswer(t, killer, "KILL QUERY @victim + 0", false); code != 0 {
		t.Fatalf("KILL QUERY @victim + 0: %d %s", code, msg)
	}
	interrupted("KILL QUERY @victim + 0", done)

	// KILL QUERY ID of the victim's running statement, prepared.
	done = sleeper(victim, "SELECT SLEEP(62)")
	var qid int64
	if err := killer.QueryRowContext(ctx, "SELECT QUERY_ID FROM information_schema.PROCESSLIST WHERE INFO = 'SELECT SLEEP(62)'").Scan(&qid); err != nil {
		t.Fatal(err)
	}
	if code, msg := killAnswer(t, killer, fmt.Sprintf("KILL QUERY ID %d", qid), true); code != 0 {
		t.Fatalf("KILL QUERY ID: %d %s", code, msg)
	}
	interrupted("KILL QUERY ID", done)

	// KILL QUERY USER of the backend account: the proxy session's query
	// stops, a direct connection's query of the same account runs on.
	stranger, strangerID := backendThread(t, sharedDB(t).Open(t, ""))
	defer stranger.Close()
	strangerDone := sleeper(stranger, "SELECT SLEEP(63)")
	done = sleeper(victim, "SELECT SLEEP(64)")
	res, err := killer.ExecContext(ctx, "KILL QUERY USER root")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 2 { // the victim's query and the killer's own
		t.Errorf("KILL QUERY USER root: %d rows affected, want 2", n)
	}
	interrupted("KILL QUERY USER", done)
	if code, _ := killAnswer(t, killer, fmt.Sprintf("KILL QUERY (SELECT %d)", strangerID), false); code != 1094 {
		t.Errorf("KILL QUERY of a direct connection's thread by expression: %d, want 1094", code)
	}
	select {
	case err := <-strangerDone:
		t.Fatalf("a direct connection's statement ended: %v", err)
	default:
	}
	sharedDB(t).Open(t, "").Exec(fmt.Sprintf("KILL QUERY %d", strangerID))
	<-strangerDone

	// KILL USER ends the other sessions, then the killer's own after its OK.
	if code, msg := killAnswer(t, killer, "KILL USER CURRENT_USER()", false); code != 0 {
		t.Fatalf("KILL USER CURRENT_USER(): %d %s", code, msg)
	}
	if err := victim.PingContext(ctx); err == nil {
		t.Error("KILL USER left the victim's session alive")
	}
	if err := killer.PingContext(ctx); err == nil {
		t.Error("KILL USER CURRENT_USER() left the killer's own session alive")
	}
	if err := stranger.PingContext(ctx); err != nil {
		t.Errorf("KILL USER through the proxy ended a direct connection: %v", err)
	}
}

// Proxy users logged in to the backend as different accounts: the backend
// decides a KILL between them with its own privileges, as directly (1095
// without CONNECTION ADMIN; allowed with it), while the proxy still keeps
// KILLs from threads it did not open.
func TestKillAcrossBackendAccounts(t *testing.T) {
	needsMariaDB(t, "backend accounts (CREATE USER, mysql.user)")
	t.Parallel()
	sharedDB(t).Exec(t, "CREATE USER IF NOT EXISTS kill_low@'%'", "GRANT SELECT ON *.* TO kill_low@'%'")
	e := startProxy(t, sharedDB(t).Addr, func(c *testConfig) {
		c.Users = append(c.Users, Account{Name: "low", Password: "pw", BackendUser: "kill_low"})
	})
	open := func(user, pw string) *sql.DB {
		d, err := sql.Open("mysql", e.dsn(user, pw, "", ""))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d
	}
	app, appID := backendThread(t, e.open(t, "", ""))
	defer app.Close()
	low, lowID := backendThread(t, open("low", "pw"))
	defer low.Close()

	// Directly, kill_low may not kill root's thread: 1095.
	directLow, err := sql.Open("mysql", "kill_low@tcp("+sharedDB(t).Addr+")/")
	if err != nil {
		t.Fatal(err)
	}
	defer directLow.Close()
	dl, _ := backendThread(t, directLow)
	defer dl.Close()
	q := fmt.Sprintf("KILL %d", appID)
	wantCode, wantMsg := killAnswer(t, dl, q, false)
	if wantCode != 1095 {
		t.Fatalf("directly: %s as kill_low: %d %s, want 1095", q, wantCode, wantMsg)
	}
	if code, msg := killAnswer(t, low, q, false); code != wantCode || msg != wantMsg {
		t.Errorf("through the proxy: %s as low: %d %q, directly %d %q", q, code, msg, wantCode, wantMsg)
	}
	if err := app.PingContext(context.Background()); err != nil {
		t.Fatalf("app's session was killed: %v", err)
	}
	// KILL QUERY ID of root's running query, which kill_low cannot see:
	// the backend's 1979, as directly.
	done := make(chan error, 1)
	go func() {
		var v int
		done <- app.QueryRowContext(context.Background(), "SELECT SLEEP(66)").Scan(&v)
	}()
	waitForQuery(t, "SELECT SLEEP(66)")
	var qid int64
	if err := sharedDB(t).Open(t, "").QueryRow("SELECT QUERY_ID FROM information_schema.PROCESSLIST WHERE INFO = 'SELECT SLEEP(66)'").Scan(&qid); err != nil {
		t.Fatal(err)
	}
	q = fmt.Sprintf("KILL QUERY ID %d", qid)
	wantCode, wantMsg = killAnswer(t, dl, q, false)
	if wantCode != 1979 {
		t.Fatalf("directly: %s as kill_low: %d %s, want 1979", q, wantCode, wantMsg)
	}
	if code, msg := killAnswer(t, low, q, false); code != wantCode || msg != wantMsg {
		t.Errorf("through the proxy: %s as low: %d %q, directly %d %q", q, code, msg, wantCode, wantMsg)
	}
	other, _ := backendThread(t, e.open(t, "", ""))
	defer other.Close()
	if code, msg := killAnswer(t, other, q, false); code != 0 {
		t.Fatalf("%s by another session of app: %d %s", q, code, msg)
	}
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("KILL QUERY ID did not stop the query")
	}
	// root has CONNECTION ADMIN: app (not a proxy admin) may kill low's session.
	if code, msg := killAnswer(t, app, fmt.Sprintf("KILL %d", lowID), false); code != 0 {
		t.Fatalf("KILL of another backend account's session with CONNECTION ADMIN: %d %s", code, msg)
	}
	if err := low.PingContext(context.Background()); err == nil {
		t.Error("the killed session still answers")
	}
}
