package integration

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
)

// The Sequelize release (and the MariaDB Node connector its mariadb
// dialect uses) that TestSequelizeBulkCreateTwoProxies installs with npm;
// LEAFPROXY_SEQUELIZE_VERSION overrides the first.
const (
	sequelizeVersion   = "6.37.8"
	mariadbNodeVersion = "3.5.4"
)

var sequelizePkgs npmPackages

// needSequelize returns a directory whose node_modules holds sequelize
// and mariadb (npmPackages).
func needSequelize(t *testing.T) string {
	t.Helper()
	ver := sequelizeVersion
	if v := os.Getenv("LEAFPROXY_SEQUELIZE_VERSION"); v != "" {
		ver = v
	}
	return sequelizePkgs.need(t, "sequelize-"+ver+"-mariadb-"+mariadbNodeVersion, "sequelize@"+ver, "mariadb@"+mariadbNodeVersion)
}

// sequelizeScript: two Sequelize instances (argv: portA portB batches
// rows), each on its own proxy, bulkCreate batches of rows in turn and
// concurrently; it prints every instance's name and the id Sequelize gave
// it (on MariaDB without RETURNING: the insert id plus the row's index).
const sequelizeScript = `
const { Sequelize, DataTypes } = require('sequelize');
const [portA, portB, batches, rows] = process.argv.slice(2).map(Number);
const open = (port) => new Sequelize('app', 'app', 'secret', {
  host: '127.0.0.1', port, dialect: 'mariadb', logging: false,
  pool: { max: 4 }, dialectOptions: { connectTimeout: 10000 },
});
(async () => {
  const out = {};
  const seqs = [open(portA), open(portB)];
  const models = seqs.map((s) => s.define('Item', {
    id: { type: DataTypes.BIGINT, primaryKey: true, autoIncrement: true },
    name: { type: DataTypes.STRING(64), allowNull: false },
  }, { tableName: 'items', timestamps: false }));
  const work = [];
  for (let b = 0; b < batches; b++) {
    const m = models[b % 2];
    const recs = [];
    for (let i = 0; i < rows; i++) recs.push({ name: 'b' + b + '-' + i });
    work.push(m.bulkCreate(recs).then((made) => { for (const x of made) out[x.name] = String(x.id); }));
  }
  await Promise.all(work);
  console.log(JSON.stringify(out));
  await Promise.all(seqs.map((s) => s.close()));
})().catch((e) => { console.error(e); process.exit(1); });
`

// TestSequelizeBulkCreateTwoProxies (issue 38 item 2): Sequelize's
// bulkCreate on MariaDB counts every row's id from the insert id (insert
// id + i), which InnoDB's AUTO_INCREMENT guarantees for a multi-row
// INSERT. Through two proxies on one store with a small step, so that
// many statements cross the end of a segment, every id Sequelize hands
// the application must be its own stored row's.
func TestSequelizeBulkCreateTwoProxies(t *testing.T) {
	dir := needSequelize(t)
	backend := testdb.Start(t)
	backend.Open(t, "app")
	backend.Exec(t, "CREATE TABLE app.items (id BIGINT PRIMARY KEY, name VARCHAR(64) NOT NULL UNIQUE)")
	store := testdb.Start(t)
	var ports [2]string
	for i := range ports {
		cfg := leafConfig(t, backend, store)
		cfg.Sequences.Tags = map[string]config.Tag{"item": {Generator: "segment", Step: 10}}
		cfg.Tables = []config.Table{{Table: "app.items", Column: "id", Tag: "item"}}
		lf := startLeaf(t, cfg)
		_, ports[i], _ = net.SplitHostPort(lf.addr)
	}
	const batches, rows = 120, 47
	script := filepath.Join(dir, "bulk.js")
	if err := os.WriteFile(script, []byte(sequelizeScript), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", script, ports[0], ports[1], fmt.Sprint(batches), fmt.Sprint(rows))
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("sequelize: %v\n%s", err, stderr)
	}
	var got map[string]string
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("sequelize output: %v\n%s", err, out)
	}
	stored := map[string]string{}
	db := backend.Open(t, "app")
	rs, err := db.Query("SELECT name, CAST(id AS CHAR) FROM items")
	if err != nil {
		t.Fatal(err)
	}
	for rs.Next() {
		var n, id string
		if err := rs.Scan(&n, &id); err != nil {
			t.Fatal(err)
		}
		stored[n] = id
	}
	rs.Close()
	if len(stored) != batches*rows || len(got) != batches*rows {
		t.Fatalf("%d rows stored, %d ids from Sequelize, want %d", len(stored), len(got), batches*rows)
	}
	var wrong []string
	for n, id := range got {
		if stored[n] != id {
			wrong = append(wrong, fmt.Sprintf("%s: Sequelize %s, stored %s", n, id, stored[n]))
		}
	}
	if len(wrong) > 0 {
		t.Fatalf("%d of %d ids Sequelize handed out are not their rows' keys, e.g. %s", len(wrong), len(got), strings.Join(wrong[:min(5, len(wrong))], "; "))
	}
}
