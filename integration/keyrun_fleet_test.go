package integration

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/leafproxy/leafproxy/config"
)

// TestKeyRunFleet (issue 38 item 2): two proxies on one store, a segment
// tag with step 10, six clients (three per proxy, text and prepared)
// sending multi-row INSERTs of 7 to 47 rows at once. Every statement's
// keys, read back from the table, are insert_id + i for its i-th row (as
// InnoDB's AUTO_INCREMENT keys of a multi-row INSERT, which ORMs without
// RETURNING count on), and no key is stored twice. Before the fix a
// statement whose rows crossed the end of a segment jumped to the next
// segment, which the other proxy's fetches had moved away.
func TestKeyRunFleet(t *testing.T) {
	backend := newBackend(t)
	backend.Exec(t, "CREATE DATABASE IF NOT EXISTS app",
		"CREATE TABLE app.runs (id BIGINT PRIMARY KEY, stmt INT NOT NULL, pos INT NOT NULL, UNIQUE KEY (stmt, pos))")
	var proxies [2]*leaf
	for i := range proxies {
		cfg := leafConfig(t, backend, nil)
		cfg.Sequences.WaitTimeout = config.Duration(10e9) // a loaded 2-core machine
		cfg.Sequences.Tags = map[string]config.Tag{"run": {Generator: "segment", Step: 10}}
		cfg.Tables = []config.Table{{Table: "runs", Column: "id", Tag: "run"}}
		proxies[i] = startLeaf(t, cfg)
	}
	const (
		clients    = 6
		statements = 60
	)
	type sent struct {
		stmt, rows int
		insertID   int64
	}
	var (
		mu   sync.Mutex
		all  []sent
		wg   sync.WaitGroup
		errs = make(chan error, clients)
	)
	for c := range clients {
		params := map[string]string{"interpolateParams": "true"}
		if c%3 == 2 {
			params = nil // server-side prepared statements
		}
		db := proxies[c%2].open(t, "app", params)
		db.SetMaxOpenConns(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 38))
			for s := range statements {
				stmt := c*1000 + s
				n := 7 + rng.IntN(41)
				q := "INSERT INTO runs (stmt, pos) VALUES " + strings.TrimSuffix(strings.Repeat("(?, ?),", n), ",")
				args := make([]any, 0, 2*n)
				for i := range n {
					args = append(args, stmt, i)
				}
				res, err := db.Exec(q, args...)
				if err != nil {
					errs <- fmt.Errorf("client %d statement %d (%d rows): %w", c, s, n, err)
					return
				}
				id, err := res.LastInsertId()
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				all = append(all, sent{stmt: stmt, rows: n, insertID: id})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	direct := backend.Open(t, "app")
	wrong, rows := 0, 0
	for _, s := range all {
		got := readRun(t, direct, s.stmt)
		if len(got) != s.rows {
			t.Fatalf("statement %d: %d rows stored, want %d", s.stmt, len(got), s.rows)
		}
		for i, id := range got {
			rows++
			if id != s.insertID+int64(i) {
				wrong++
				if wrong <= 3 {
					t.Errorf("statement %d row %d: key %d, insert id %d + %d = %d", s.stmt, i, id, s.insertID, i, s.insertID+int64(i))
				}
			}
		}
	}
	var stored, distinct int
	if err := direct.QueryRow("SELECT COUNT(*), COUNT(DISTINCT id) FROM runs").Scan(&stored, &distinct); err != nil {
		t.Fatal(err)
	}
	if wrong != 0 || stored != rows || distinct != rows {
		t.Fatalf("%d of %d rows' keys are not insert_id + i; %d rows stored, %d distinct keys", wrong, rows, stored, distinct)
	}
	var maxID int64
	if err := direct.QueryRow("SELECT max_id FROM leafproxy.leaf_alloc WHERE biz_tag = 'run'").Scan(&maxID); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d statements, %d rows through two proxies (step 10): every key is insert_id + i, 0 duplicates; leaf_alloc.max_id %d", len(all), rows, maxID)
}

// readRun is the keys of statement stmt's rows in row order.
func readRun(t *testing.T, db *sql.DB, stmt int) []int64 {
	t.Helper()
	rows, err := db.Query("SELECT id FROM runs WHERE stmt = ? ORDER BY pos", stmt)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}
