package integration

import (
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// mysql2Version is the node mysql2 release the tests install (MariaDB's
// extended type metadata, hence JSON columns as objects, is in 3.x);
// LEAFPROXY_MYSQL2_VERSION overrides it.
const mysql2Version = "3.24.6"

var mysql2Pkgs npmPackages

// needMySQL2 returns a directory whose node_modules holds mysql2 (npmPackages).
func needMySQL2(t *testing.T) string {
	t.Helper()
	ver := mysql2Version
	if v := os.Getenv("LEAFPROXY_MYSQL2_VERSION"); v != "" {
		ver = v
	}
	return mysql2Pkgs.need(t, "mysql2-"+ver, "mysql2@"+ver)
}

// mysql2Script drives node mysql2 through the proxy. argv: host port.
// It prints JSON lines; after changeUser it waits for a line on stdin (the
// test inspects the proxy's sessions meanwhile).
const mysql2Script = `
const mysql = require('mysql2/promise');
const readline = require('readline');
const [host, port] = process.argv.slice(2);
const rl = readline.createInterface({ input: process.stdin });
const lines = rl[Symbol.asyncIterator]();
const cfg = (user, password) => ({ host, port: Number(port), user, password, database: 'nodedb', connectTimeout: 5000 });

(async () => {
  const out = { version: require('mysql2/package.json').version };
  const c = await mysql.createConnection(cfg('app', 'secret'));
  out.threadId = c.threadId;
  let [rows] = await c.query('SELECT CONNECTION_ID() AS id');
  out.connectionId = rows[0].id;

  // changeUser: a fresh backend session as another proxy account.
  await c.query('SET @x = 42');
  await c.changeUser({ user: 'app2', password: 'pw2', database: 'nodedb' });
  [rows] = await c.query('SELECT @x AS x, DATABASE() AS db, CONNECTION_ID() AS id');
  out.afterChange = rows[0];
  out.threadIdAfterChange = c.threadId;
  console.log(JSON.stringify({ stage: 'changed', threadId: c.threadId }));
  await lines.next();

  // Session tracking: after SET NAMES koi8r the driver encodes queries and
  // decodes results in koi8r because the OK packet says so.
  const word = 'Привет, мир';
  await c.query('SET NAMES koi8r');
  [rows] = await c.query("SELECT '" + word + "' AS s, @@character_set_client AS cs");
  out.koi8r = { s: rows[0].s, cs: rows[0].cs, ok: rows[0].s === word };
  await c.query('INSERT INTO u (id, s) VALUES (1, ?)', [word]);
  [rows] = await c.query('SELECT s FROM u WHERE id = 1');
  out.koi8r.stored = rows[0].s;
  await c.query('SET NAMES utf8mb4');

  // MariaDB's extended type metadata: a JSON column is an object.
  [rows] = await c.query('SELECT d FROM j');
  out.jsonText = { type: typeof rows[0].d, value: rows[0].d };
  [rows] = await c.execute('SELECT d FROM j WHERE 1 = ?', [1]);
  out.jsonBinary = { type: typeof rows[0].d, value: rows[0].d };

  // connection.threadId is what KILL needs. c is app2's now: app may not
  // kill it, app2 may.
  const appConn = await mysql.createConnection(cfg('app', 'secret'));
  const app2Conn = await mysql.createConnection(cfg('app2', 'pw2'));
  const t0 = Date.now();
  const sleeping = c.query('SELECT SLEEP(30) AS s').then(
    ([r]) => ({ value: r[0].s }), (e) => ({ errno: e.errno }));
  for (let i = 0; i < 1000; i++) {
    [rows] = await app2Conn.query("SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE INFO = 'SELECT SLEEP(30) AS s'");
    if (rows[0].n > 0) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  try {
    await appConn.query('KILL QUERY ' + c.threadId);
    out.killByOtherUser = 0;
  } catch (e) {
    out.killByOtherUser = e.errno;
  }
  await app2Conn.query('KILL QUERY ' + c.threadId);
  out.sleep = await sleeping;
  out.sleep.elapsedMs = Date.now() - t0;
  [rows] = await c.query('SELECT 7 AS v');
  out.afterKill = rows[0].v;
  await Promise.all([c.end(), appConn.end(), app2Conn.end()]);
  console.log(JSON.stringify(out));
  rl.close();
})().catch((e) => { console.error(e); process.exit(1); });
`

// node mysql2 through a whole leafproxy: changeUser, SET NAMES with
// session tracking, JSON columns via MariaDB's extended type metadata, and
// connection.threadId as the id KILL QUERY takes.
func TestMySQL2(t *testing.T) {
	dir := needMySQL2(t)
	cp := startClientProxy(t, "nodedb", nil)
	cp.b.Exec(t,
		"CREATE TABLE nodedb.u (id INT PRIMARY KEY, s VARCHAR(40) CHARACTER SET utf8mb4)",
		"CREATE TABLE nodedb.j (d JSON)",
		`INSERT INTO nodedb.j VALUES ('{"a": 1, "b": [true, "x"]}')`)
	script := filepath.Join(dir, "mysql2_check.js")
	if err := os.WriteFile(script, []byte(mysql2Script), 0o644); err != nil {
		t.Fatal(err)
	}
	node := startInteractive(t, 90*time.Second, dir, nil, "node", script, cp.host, cp.port)
	var stage struct {
		Stage    string
		ThreadID uint32
	}
	node.next(&stage)
	var users []string
	for _, si := range cp.lf.svc.Proxy.SessionList() {
		if si.ID == stage.ThreadID {
			users = append(users, si.User)
		}
	}
	if len(users) != 1 || users[0] != "app2" {
		t.Errorf("after changeUser the proxy lists session %d with users %v, want [app2]", stage.ThreadID, users)
	}
	node.send("go on")
	var got struct {
		Version      string
		ThreadID     uint32
		ConnectionID uint32
		AfterChange  struct {
			X  *int
			DB string
			ID uint32
		}
		ThreadIDAfterChange uint32
		Koi8r               struct {
			S, Cs, Stored string
			OK            bool
		}
		JSONText, JSONBinary struct {
			Type  string
			Value any
		}
		KillByOtherUser int
		Sleep           struct {
			Value     *int
			Errno     *int
			ElapsedMs int
		}
		AfterKill int
	}
	node.next(&got)
	node.wait()
	seen, _ := json.Marshal(got)
	t.Logf("mysql2 %s: %s", got.Version, seen)

	if got.ThreadID < 1<<30 {
		t.Errorf("connection.threadId %d is not a proxy session id (>= 2^30)", got.ThreadID)
	}
	if got.AfterChange.X != nil || got.AfterChange.DB != "nodedb" {
		t.Errorf("after changeUser: @x = %s, DATABASE() = %q; want NULL (a new session) and nodedb", seen, got.AfterChange.DB)
	}
	if got.AfterChange.ID == got.ConnectionID {
		t.Errorf("after changeUser CONNECTION_ID() is still %d: the backend session was not replaced", got.ConnectionID)
	}
	const word = "Привет, мир"
	if !got.Koi8r.OK || got.Koi8r.Cs != "koi8r" || got.Koi8r.Stored != word {
		t.Errorf("after SET NAMES koi8r: read back %q (charset %q), stored %q; want %q", got.Koi8r.S, got.Koi8r.Cs, got.Koi8r.Stored, word)
	}
	var stored string
	if err := sqlOpen(t, cp.b.DSN("nodedb")).QueryRow("SELECT s FROM u WHERE id = 1").Scan(&stored); err != nil || stored != word {
		t.Errorf("stored under koi8r, read directly: %q (%v), want %q", stored, err, word)
	}
	for name, j := range map[string]struct {
		Type  string
		Value any
	}{"query": got.JSONText, "execute": got.JSONBinary} {
		m, _ := j.Value.(map[string]any)
		if j.Type != "object" || m == nil || m["a"] != float64(1) {
			t.Errorf("JSON column via %s: %s %v, want an object with a = 1", name, j.Type, j.Value)
		}
	}
	if got.KillByOtherUser != 1094 {
		t.Errorf("KILL QUERY by another proxy user answered %d, want 1094", got.KillByOtherUser)
	}
	s := got.Sleep
	if s.ElapsedMs > 20000 || (s.Value == nil && s.Errno == nil) ||
		(s.Value != nil && *s.Value != 1) || (s.Errno != nil && *s.Errno != 1317) {
		t.Errorf("SLEEP(30) after KILL QUERY <threadId>: value %v errno %v after %d ms, want 1 or 1317 soon", s.Value, s.Errno, s.ElapsedMs)
	}
	if got.AfterKill != 7 {
		t.Errorf("the connection after KILL QUERY answered %d, want 7", got.AfterKill)
	}
}

// sqlOpen is a *sql.DB for dsn, closed at test end.
func sqlOpen(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
