package proxy

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
	"github.com/leafproxy/leafproxy/proxy/login"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// The proxy's greeting is the backend's: same version, status flags
// (autocommit: PyMySQL trusts it), charset, and the backend's capabilities
// less only what the relay cannot carry.
func TestGreetingMirrorsBackend(t *testing.T) {
	needsMariaDB(t, "MariaDB's greeting (go-mysql-server's status flags lack autocommit)")
	e := startProxy(t, sharedDB(t).Addr, nil)
	direct := dialRaw(t, sharedDB(t).Addr).hello
	via := dialRaw(t, e.addr).hello
	if via.Version != direct.Version {
		t.Errorf("version %q, backend says %q", via.Version, direct.Version)
	}
	if via.Status != direct.Status || via.Status&gomysql.SERVER_STATUS_AUTOCOMMIT == 0 {
		t.Errorf("status 0x%04x, backend says 0x%04x (autocommit must be set)", via.Status, direct.Status)
	}
	if via.Charset != direct.Charset {
		t.Errorf("charset %d, backend says %d", via.Charset, direct.Charset)
	}
	if want := direct.Caps&login.ProxyCaps | gomysql.CLIENT_SSL; via.Caps != want {
		t.Errorf("capabilities 0x%08x, want 0x%08x (backend 0x%08x)", via.Caps, want, direct.Caps)
	}
	for _, f := range []uint32{gomysql.CLIENT_MULTI_STATEMENTS, gomysql.CLIENT_MULTI_RESULTS, gomysql.CLIENT_PS_MULTI_RESULTS,
		gomysql.CLIENT_FOUND_ROWS, gomysql.CLIENT_SESSION_TRACK, gomysql.CLIENT_CONNECT_ATTRS, gomysql.CLIENT_LOCAL_FILES,
		gomysql.CLIENT_COMPRESS} {
		if direct.Caps&f != 0 && via.Caps&f == 0 {
			t.Errorf("capability 0x%08x offered by the backend is not offered by the proxy", f)
		}
	}
	if direct.MariaDB() {
		if !via.MariaDB() {
			t.Error("proxy does not present itself as MariaDB (CLIENT_MYSQL bit set)")
		}
		if want := direct.ExtCaps & login.ProxyExtCaps; via.ExtCaps != want {
			t.Errorf("extended capabilities 0x%x, want 0x%x", via.ExtCaps, want)
		}
	}
	if via.ThreadID < sessionIDBase {
		t.Errorf("connection id %d is in the backend's thread id range", via.ThreadID)
	}
}

// go-sql-driver's multiStatements, clientFoundRows and CALL with results
// reach the backend session.
func TestClientFlagsReachBackend(t *testing.T) {
	needsMariaDB(t, "a CALL's result sets as MariaDB returns them (go-mysql-server gives one where MariaDB gives two)")
	ensureDB(t, sharedDB(t), "flagsdb")
	sharedDB(t).Exec(t, "DROP TABLE IF EXISTS flagsdb.f", "CREATE TABLE flagsdb.f (id INT PRIMARY KEY, v INT)",
		"INSERT INTO flagsdb.f VALUES (1, 5)",
		"DROP PROCEDURE IF EXISTS flagsdb.p", "CREATE PROCEDURE flagsdb.p() BEGIN SELECT 1; SELECT 2; END")
	e := startProxy(t, sharedDB(t).Addr, nil)
	db := e.open(t, "flagsdb", "multiStatements=true&clientFoundRows=true")
	if _, err := db.Exec("UPDATE f SET v = 5 WHERE id = 1; UPDATE f SET v = 5 WHERE id = 1"); err != nil {
		t.Fatalf("multi-statement text: %v", err)
	}
	res, err := db.Exec("UPDATE f SET v = 5 WHERE id = 1")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Errorf("clientFoundRows: an unchanged matched row reports %d affected, want 1", n)
	}
	rows, err := db.Query("CALL p()")
	if err != nil {
		t.Fatalf("CALL returning result sets: %v", err)
	}
	sets := 0
	for {
		for rows.Next() {
		}
		sets++
		if !rows.NextResultSet() {
			break
		}
	}
	rows.Close()
	if sets < 2 {
		t.Errorf("CALL gave %d result sets, want 2", sets)
	}
}

// KILL with the id the client was greeted with reaches that session's
// backend thread; an id of a connection that did not come through the
// proxy, or of another proxy user's session, is "Unknown thread id".
func TestKillMapsGreetingIDs(t *testing.T) {
	needsMariaDB(t, "KILL of a running query as MariaDB answers it (1317)")
	t.Parallel() // waits more than it works; own servers or own tables
	e := startProxy(t, sharedDB(t).Addr, func(c *testConfig) {
		c.Users = []Account{{Name: "app", Password: "secret"}, {Name: "other", Password: "pw2"}}
	})
	victim := dialRaw(t, e.addr)
	if p := victim.login("app", "secret", "", 0, 0); p[0] != 0 {
		t.Fatalf("login: %x", p)
	}
	done := make(chan []byte, 1)
	go func() { done <- victim.query("SELECT SLEEP(60)")[0] }()
	waitForQuery(t, "SELECT SLEEP(60)")

	killer := e.open(t, "", "")
	// A stranger's thread: a direct session, sleeping.
	direct := sharedDB(t).Open(t, "")
	dconn, err := direct.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer dconn.Close()
	var strangerID uint32
	if err := dconn.QueryRowContext(context.Background(), "SELECT CONNECTION_ID()").Scan(&strangerID); err != nil {
		t.Fatal(err)
	}
	strangerDone := make(chan error, 1)
	go func() {
		var v int
		strangerDone <- dconn.QueryRowContext(context.Background(), "SELECT SLEEP(2)").Scan(&v)
	}()
	waitForQuery(t, "SELECT SLEEP(2)")
	var me *mysql.MySQLError
	if _, err := killer.Exec(fmt.Sprintf("KILL QUERY %d", strangerID)); !errors.As(err, &me) || me.Number != gomysql.ER_NO_SUCH_THREAD {
		t.Fatalf("KILL QUERY of a thread the proxy did not open: %v, want 1094", err)
	}
	if err := <-strangerDone; err != nil {
		t.Fatalf("a stranger's query was disturbed: %v", err)
	}

	// Another proxy user may not kill app's query.
	otherDB, _ := sql.Open("mysql", e.dsn("other", "pw2", "", ""))
	defer otherDB.Close()
	if _, err := otherDB.Exec(fmt.Sprintf("KILL QUERY %d", victim.hello.ThreadID)); !errors.As(err, &me) || me.Number != gomysql.ER_NO_SUCH_THREAD {
		t.Fatalf("KILL by another proxy user: %v, want 1094", err)
	}
	// A KILL among several statements is mapped in place: a thread the
	// proxy did not open is 1094 there too (killmulti_test.go has the
	// rest; the other forms are killforms_test.go's).
	multi := e.open(t, "", "multiStatements=true")
	for _, q := range []string{"SELECT 1; KILL 5", "SELECT ';'; /* ; */ kill 5"} {
		if _, err := multi.Exec(q); !errors.As(err, &me) || me.Number != gomysql.ER_NO_SUCH_THREAD || me.Message != "Unknown thread id: 5" {
			t.Errorf("%s: %v, want 1094 Unknown thread id: 5", q, err)
		}
	}
	// Without multi-statements the server reads one statement and
	// rejects the rest: no KILL runs, and the proxy need not look further.
	if _, err := killer.Exec("SELECT 1; KILL 5"); !errors.As(err, &me) || me.Number != gomysql.ER_PARSE_ERROR {
		t.Errorf("SELECT 1; KILL 5 without multi-statements: %v, want 1064 from the server", err)
	}

	if _, err := killer.Exec(fmt.Sprintf("KILL QUERY %d", victim.hello.ThreadID)); err != nil {
		t.Fatalf("KILL QUERY <greeting id>: %v", err)
	}
	select {
	case p := <-done:
		// MariaDB answers a killed SLEEP with 1 or with ERR 1317.
		if p[0] == 0xFF && errCode(p) != 1317 {
			t.Fatalf("killed query answered %x", p)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("KILL QUERY <greeting id> did not stop the query")
	}
	// The victim's connection survives a KILL QUERY.
	if r := victim.query("SELECT 1"); r[0][0] == 0xFF {
		t.Fatalf("session after KILL QUERY: %x", r[0])
	}

	// COM_PROCESS_KILL with the greeting id ends that connection.
	k := make([]byte, 5)
	k[0] = gomysql.COM_PROCESS_KILL
	binary.LittleEndian.PutUint32(k[1:], victim.hello.ThreadID)
	killer2 := dialRaw(t, e.addr)
	killer2.login("app", "secret", "", 0, 0)
	if p := killer2.command(k); p[0] != 0 {
		t.Fatalf("COM_PROCESS_KILL answered %x", p)
	}
	expectClosed(t, victim.l.Conn)
}

// waitForQuery waits until the backend shows a statement running.
func waitForQuery(t *testing.T, q string) {
	t.Helper()
	waitForQueryOn(t, sharedDB(t), q)
}

// waitForQueryOn waits until server srv shows statement q running: a test
// that acts on a running statement waits for it, not for a guessed time.
func waitForQueryOn(t *testing.T, srv *testdb.Server, q string) {
	t.Helper()
	db := srv.Open(t, "")
	testwait.For(t, fmt.Sprintf("%q to start", q), func() bool {
		var n int
		err := db.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO = ?", q).Scan(&n)
		return err == nil && n > 0
	})
}

// COM_CHANGE_USER: the new proxy account is checked, the backend session is
// replaced (user variables gone); a wrong password answers 1045 and keeps
// the connection, reset, as the old user, as MariaDB does; after three
// refusals the command is refused (1047).
func TestChangeUser(t *testing.T) {
	e := startProxy(t, sharedDB(t).Addr, func(c *testConfig) {
		c.Users = []Account{{Name: "app", Password: "secret"}, {Name: "app2", Password: "pw2"}}
	})
	c := dialRaw(t, e.addr)
	if p := c.login("app", "secret", "", 0, 0); p[0] != 0 {
		t.Fatalf("login: %x", p)
	}
	c.query("SET @x = 42")
	cu := func(user, pass, db string) []byte {
		p := []byte{gomysql.COM_CHANGE_USER}
		p = append(append(p, user...), 0)
		a := nativeAuth(c.hello.Scramble, pass)
		p = append(append(p, byte(len(a))), a...)
		p = append(append(p, db...), 0)
		p = append(p, 45, 0)
		p = append(append(p, gomysql.AUTH_NATIVE_PASSWORD...), 0)
		return c.command(p)
	}
	ensureDB(t, sharedDB(t), "cudb")
	if p := cu("app2", "pw2", "cudb"); p[0] != 0 {
		t.Fatalf("change user answered %x", p)
	}
	r := c.query("SELECT @x, DATABASE()")
	if len(r) < 5 || !bytes.Contains(r[4], []byte("cudb")) || r[4][0] != 0xFB {
		t.Fatalf("after change user: rows %q, want NULL @x and database cudb", r)
	}
	found := false
	for _, si := range e.srv.SessionList() {
		if si.ID == c.hello.ThreadID {
			found = si.User == "app2"
		}
	}
	if !found {
		t.Error("the proxy still sees the old user on the session")
	}
	c.query("SET @x = 43")
	for i := range 3 {
		if p := cu("app", "wrong", ""); errCode(p) != gomysql.ER_ACCESS_DENIED_ERROR {
			t.Fatalf("change user %d with a wrong password: %x, want 1045", i+1, p)
		}
		r := c.query("SELECT @x, DATABASE(), CURRENT_USER()")
		if len(r) < 6 || r[5][0] != 0xFB || !bytes.Contains(r[5], []byte("cudb")) {
			t.Fatalf("after a refused change user: rows %q, want NULL @x (reset) and database cudb (kept)", r)
		}
	}
	if p := cu("app", "secret", ""); errCode(p) != gomysql.ER_UNKNOWN_COM_ERROR {
		t.Fatalf("change user after three refusals: %x, want 1047 as MariaDB answers", p)
	}
	for _, si := range e.srv.SessionList() {
		if si.ID == c.hello.ThreadID && si.User != "app2" {
			t.Errorf("after refused change users the proxy sees user %q, want app2", si.User)
		}
	}
}

// Session tracking: after SET NAMES the OK packet carries the new
// character_set_client, as the backend sends it (mysql2 decodes with it).
func TestSessionTrack(t *testing.T) {
	needsMariaDB(t, "session state tracking (go-mysql-server sends no session state)")
	e := startProxy(t, sharedDB(t).Addr, nil)
	c := dialRaw(t, e.addr)
	if p := c.login("app", "secret", "", gomysql.CLIENT_SESSION_TRACK, 0); p[0] != 0 {
		t.Fatalf("login: %x", p)
	}
	p := c.query("SET NAMES koi8r")[0]
	_, _, st, _ := wire.OKInfo(p)
	if st&gomysql.SERVER_SESSION_STATE_CHANGED == 0 || !bytes.Contains(p, []byte("koi8r")) {
		t.Fatalf("OK after SET NAMES koi8r: %x (status 0x%04x), want session state naming koi8r", p, st)
	}
}

// MariaDB's extended type metadata: JSON columns say "json"; the proxy's
// own result sets carry the (empty) metadata field when it is negotiated.
func TestExtendedTypeInfo(t *testing.T) {
	ensureDB(t, sharedDB(t), "extdb")
	sharedDB(t).Exec(t, "DROP TABLE IF EXISTS extdb.j", "CREATE TABLE extdb.j (d JSON)", `INSERT INTO extdb.j VALUES ('{"a":1}')`)
	e := startProxy(t, sharedDB(t).Addr, nil, WithInterceptor(answer42{}))
	c := dialRaw(t, e.addr)
	if c.hello.ExtCaps&wire.MariaDBExtTypeInfo == 0 {
		t.Skip("backend does not offer extended type info")
	}
	if p := c.login("app", "secret", "extdb", 0, wire.MariaDBExtTypeInfo); p[0] != 0 {
		t.Fatalf("login: %x", p)
	}
	r := c.query("SELECT d FROM j")
	if len(r) < 2 || !bytes.Contains(r[1], []byte("json")) {
		t.Fatalf("column definition %x lacks the json type name", r[1])
	}
	r = c.query("SELECT 42")
	def := r[1]
	pos := 0
	for range 7 { // six names, then the extended metadata
		n, k := wire.LenencUint(def[pos:])
		pos += k + int(n)
	}
	if pos >= len(def) || def[pos] != 0x0c {
		t.Fatalf("proxy-made column definition %x is not in the extended format", def)
	}
}

type answer42 struct{ BaseInterceptor }

func (answer42) Query(_ context.Context, s *Session, sql []byte) (bool, error) {
	if string(sql) != "SELECT 42" {
		return false, nil
	}
	v := int64(42)
	return true, s.WriteResultSet([]string{"v"}, [][]*int64{{&v}})
}

// A backend that closes an idle session (wait_timeout) closes the client's
// connection too, so the pool opens a new one instead of failing.
func TestBackendClosesIdleSession(t *testing.T) {
	needsMariaDB(t, "the backend's wait_timeout closing an idle session (go-mysql-server does not)")
	t.Parallel() // waits more than it works; own servers or own tables
	e := startProxy(t, sharedDB(t).Addr, nil)
	db := e.open(t, "", "wait_timeout=1")
	db.SetMaxIdleConns(1)
	var v int
	if err := db.QueryRow("SELECT 1").Scan(&v); err != nil {
		t.Fatal(err)
	}
	// The backend's wait_timeout passes and the proxy closes the client
	// connection it had pinned.
	testwait.For(t, "the backend drops the idle session", func() bool { cur, _ := e.srv.Sessions(); return cur == 0 })
	if err := db.QueryRow("SELECT 2").Scan(&v); err != nil || v != 2 {
		t.Fatalf("query after the backend dropped the idle session: %v", err)
	}

	// A KILL from outside the proxy closes the client connection promptly.
	c := dialRaw(t, e.addr)
	c.login("app", "secret", "", 0, 0)
	var tid uint32
	for _, si := range e.srv.SessionList() {
		if si.ID == c.hello.ThreadID {
			tid = si.ThreadID
		}
	}
	sharedDB(t).Exec(t, fmt.Sprintf("KILL %d", tid))
	expectClosed(t, c.l.Conn)

	// A command that arrives before the proxy's idle watch has noticed
	// gets a closed connection too (2013 in drivers), not ERR 1158, which
	// pools would take as the statement's answer.
	c2 := dialRaw(t, e.addr)
	c2.login("app", "secret", "", 0, 0)
	for _, si := range e.srv.SessionList() {
		if si.ID == c2.hello.ThreadID {
			tid = si.ThreadID
		}
	}
	sharedDB(t).Exec(t, fmt.Sprintf("KILL %d", tid))
	if err := c2.l.WriteCommand(append([]byte{gomysql.COM_QUERY}, "SELECT 1"...)); err != nil {
		t.Fatal(err)
	}
	_ = c2.l.Flush()
	if p, err := c2.l.ReadPacket(nil, 1<<20); err == nil {
		t.Fatalf("command on a killed backend answered %x, want the connection closed", p)
	}
}

// LOAD DATA LOCAL INFILE: the file request goes to the client and its file
// to the backend.
func TestLocalInfile(t *testing.T) {
	needsMariaDB(t, "LOAD DATA LOCAL INFILE (go-mysql-server has local_infile off)")
	ensureDB(t, sharedDB(t), "infiledb")
	sharedDB(t).Exec(t, "DROP TABLE IF EXISTS infiledb.t", "CREATE TABLE infiledb.t (id INT PRIMARY KEY, s VARCHAR(20))")
	path := filepath.Join(t.TempDir(), "rows.csv")
	var b strings.Builder
	for i := 1; i <= 5000; i++ {
		fmt.Fprintf(&b, "%d,row%d\n", i, i)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	mysql.RegisterLocalFile(path)
	e := startProxy(t, sharedDB(t).Addr, nil)
	db := e.open(t, "infiledb", "")
	res, err := db.Exec("LOAD DATA LOCAL INFILE '" + path + "' INTO TABLE t FIELDS TERMINATED BY ','")
	if err != nil {
		t.Fatalf("LOAD DATA LOCAL INFILE: %v", err)
	}
	if n, _ := res.RowsAffected(); n != 5000 {
		t.Fatalf("%d rows loaded, want 5000", n)
	}
	var v int
	if err := db.QueryRow("SELECT COUNT(*) FROM t").Scan(&v); err != nil || v != 5000 {
		t.Fatalf("count %d, %v", v, err)
	}
}

// The compressed protocol on the client leg, with results and statements
// larger than one frame.
func TestCompression(t *testing.T) {
	ensureDB(t, sharedDB(t), "compdb")
	sharedDB(t).Exec(t, "DROP TABLE IF EXISTS compdb.t", "CREATE TABLE compdb.t (id INT PRIMARY KEY, s LONGTEXT)")
	e := startProxy(t, sharedDB(t).Addr, nil)
	db := e.open(t, "compdb", "compress=true")
	big := strings.Repeat("abcdefghij", 300_000) // 3 MB, larger than one frame
	if _, err := db.Exec("INSERT INTO t VALUES (1, ?)", big); err != nil {
		t.Fatalf("prepared insert, compressed: %v", err)
	}
	if _, err := db.Exec("INSERT INTO t VALUES (2, '" + big + "')"); err != nil {
		t.Fatalf("text insert, compressed: %v", err)
	}
	var s string
	for id := 1; id <= 2; id++ {
		if err := db.QueryRow("SELECT s FROM t WHERE id = ?", id).Scan(&s); err != nil || s != big {
			t.Fatalf("row %d read back compressed: %v (len %d)", id, err, len(s))
		}
	}
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM information_schema.COLUMNS").Scan(&n); err != nil || n == 0 {
		t.Fatalf("small query compressed: %v", err)
	}
}

// A prepare with 65,535 parameters used to spin forever (uint16 counter).
func TestPrepareMaxParams(t *testing.T) {
	e := startProxy(t, sharedDB(t).Addr, nil)
	db := e.open(t, "", "")
	q := "SELECT ?" + strings.Repeat(",?", 65534)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := db.PrepareContext(ctx, q)
	if err != nil {
		t.Fatalf("prepare with 65,535 parameters: %v", err)
	}
	st.Close()
	var v int
	if err := db.QueryRowContext(ctx, "SELECT 7").Scan(&v); err != nil || v != 7 {
		t.Fatalf("session after the big prepare: %v", err)
	}
}

// listen and backend.addr may both be Unix socket paths.
func TestUnixSockets(t *testing.T) {
	needsMariaDB(t, "the backend's Unix socket (go-mysql-server here listens on TCP only)")
	cfg := Config{
		Listen:  filepath.Join(t.TempDir(), "leafproxy.sock"),
		Backend: Backend{Addr: filepath.Join(sharedDB(t).Dir, "mysqld.sock"), User: "root"},
		Users:   []Account{{Name: "app", Password: "secret"}},
	}
	srv, err := NewServer(cfg, WithLogger(testLogger()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.ListenAndServe(ctx) }()
	defer func() { cancel(); <-done }()
	c := mysql.NewConfig()
	c.User, c.Passwd, c.Net, c.Addr = "app", "secret", "unix", cfg.Listen
	db := testwait.Value(t, "a connection over the proxy's socket", func() (*sql.DB, bool) {
		var db *sql.DB
		db, err = sql.Open("mysql", c.FormatDSN())
		if err == nil {
			if err = db.Ping(); err == nil {
				return db, true
			}
			db.Close()
		}
		return nil, false
	}, testwait.Detail(func() string { return fmt.Sprint(err) }))
	defer db.Close()
	var host string
	if err := db.QueryRow("SELECT HOST FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()").Scan(&host); err != nil {
		t.Fatal(err)
	}
	if host != "localhost" {
		t.Errorf("backend sees the proxy from %q, want localhost (a Unix socket)", host)
	}
}
