package integration

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/config"
)

// The insert ids PyMySQL and node mysql2 read from the OK packet
// (cursor.lastrowid, insertId), for generated keys, explicit keys (which
// the proxy writes into the OK packet, as MariaDB reports them for an
// AUTO_INCREMENT column) and, with mysql2's execute, bound keys: through
// the proxy into a rule table as directly into an AUTO_INCREMENT twin.
// Keys are relative to each side's first generated key.

const insertIDPy = `
import json, sys
import pymysql
host, port, user, pw, table = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
c = pymysql.connect(host=host, port=port, user=user, password=pw, database="iddb", autocommit=True)
cur = c.cursor()
cur.execute("INSERT INTO %s (b) VALUES ('first')" % table)
f = cur.lastrowid
out = []
for q in ["INSERT INTO {T} (b) VALUES ('g')",
          "INSERT INTO {T} (id, b) VALUES ({F5}, 'x')",
          "INSERT INTO {T} (id, b) VALUES ({F9}, 'a'), ({F7}, 'b')",
          "INSERT IGNORE INTO {T} (id, b) VALUES ({F5}, 'dup')",
          "INSERT INTO {T} (b) VALUES ('h')"]:
    cur.execute(q.replace("{T}", table).replace("{F5}", str(f + 5)).replace("{F9}", str(f + 9)).replace("{F7}", str(f + 7)))
    out.append(cur.lastrowid - f if cur.lastrowid else 0)
print(json.dumps(out))
`

const insertIDJS = `
const mysql = require('mysql2/promise');
(async () => {
  const [host, port, user, password, table] = process.argv.slice(2);
  const c = await mysql.createConnection({host, port: +port, user, password, database: 'iddb'});
  const [r0] = await c.query('INSERT INTO ' + table + " (b) VALUES ('first')");
  const f = r0.insertId;
  const rel = (r) => (r.insertId ? r.insertId - f : 0);
  const out = [];
  out.push(rel((await c.query('INSERT INTO ' + table + ' (id, b) VALUES (?, ?)', [f + 5, 'x']))[0]));
  out.push(rel((await c.execute('INSERT INTO ' + table + ' (id, b) VALUES (?, ?)', [f + 9, 'bound']))[0]));
  out.push(rel((await c.execute('INSERT INTO ' + table + ' (id, b) VALUES (?, ?)', [null, 'bound null']))[0]));
  out.push(rel((await c.execute('INSERT INTO ' + table + ' (id, b) VALUES (' + (f + 20) + ', ?)', ['literal']))[0]));
  out.push(rel((await c.execute('INSERT INTO ' + table + ' (b) VALUES (?)', ['gen']))[0]));
  console.log(JSON.stringify(out));
  await c.end();
})().catch((e) => { console.error(e); process.exit(1); });
`

func insertIDEnv(t *testing.T) (cp *clientProxy, bhost, bport string) {
	cp = startClientProxy(t, "iddb", func(cfg *config.Config) {
		cfg.Sequences.Tags = map[string]config.Tag{"idt": {Generator: "segment", Step: 100000}}
		cfg.Tables = []config.Table{{Table: "iddb.r", Column: "id", Tag: "idt"}}
	})
	cp.b.Exec(t, "CREATE TABLE iddb.a (id BIGINT AUTO_INCREMENT PRIMARY KEY, b VARCHAR(20))",
		"CREATE TABLE iddb.r (id BIGINT PRIMARY KEY, b VARCHAR(20))")
	bhost, bport, _ = net.SplitHostPort(cp.b.Addr)
	return cp, bhost, bport
}

func TestInsertIDsPyMySQL(t *testing.T) {
	needPyMySQL(t)
	cp, bhost, bport := insertIDEnv(t)
	script := writeScript(t, "insertid.py", insertIDPy)
	var direct, proxied []int64
	runJSON(t, 60*time.Second, &direct, "", nil, systemPython, script, bhost, bport, "root", "", "a")
	runJSON(t, 60*time.Second, &proxied, "", nil, systemPython, script, cp.host, cp.port, "app", "secret", "r")
	if len(direct) == 0 || !slices.Equal(direct, proxied) {
		t.Fatalf("cursor.lastrowid relative to the first key: directly %v, through the proxy %v", direct, proxied)
	}
	t.Logf("lastrowid (relative): %v", direct)
}

func TestInsertIDsMySQL2(t *testing.T) {
	dir := needMySQL2(t)
	cp, bhost, bport := insertIDEnv(t)
	script := filepath.Join(dir, "insertid_check.js")
	if err := os.WriteFile(script, []byte(insertIDJS), 0o644); err != nil {
		t.Fatal(err)
	}
	var direct, proxied []int64
	runJSON(t, 60*time.Second, &direct, dir, nil, "node", script, bhost, bport, "root", "", "a")
	runJSON(t, 60*time.Second, &proxied, dir, nil, "node", script, cp.host, cp.port, "app", "secret", "r")
	if len(direct) == 0 || fmt.Sprint(direct) != fmt.Sprint(proxied) {
		t.Fatalf("insertId relative to the first key: directly %v, through the proxy %v", direct, proxied)
	}
	t.Logf("insertId (relative): %v", direct)
}
