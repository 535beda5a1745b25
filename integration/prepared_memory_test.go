package integration

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

// Prepared INSERTs into a rule table keep their plan while they are open
// (issue 29): 10,000 prepares of a 1,000-row (?) INSERT on one session
// grew the proxy by 2 GB (~205 bytes a row, kept for the session's life).
// Now a kept plan is a slot and a parameter entry per row (~80 bytes) and
// the plans are charged to limits.session_prepared_memory (8 MiB) and
// limits.prepared_memory (256 MiB): 2,000 such prepares on one session
// keep ~110 of them and get 1461 for the rest, the proxy grows less than
// 64 MiB, and the session goes on.

func preparedEnv(t *testing.T, global, session int64) *sql.DB {
	backend := testdb.Start(t)
	backend.Exec(t, "CREATE DATABASE IF NOT EXISTS app",
		"CREATE TABLE app.orders (id BIGINT PRIMARY KEY, v INT)")
	cfg := leafConfig(t, backend, nil)
	cfg.Tables = []config.Table{{Table: "orders", Column: "id", Tag: "order"}}
	cfg.Limits.PreparedMemory = config.ByteSize(global)
	cfg.Limits.SessionPreparedMemory = config.ByteSize(session)
	lf := startLeaf(t, cfg)
	return lf.open(t, "app", nil)
}

func rowsInsert(rows int) string {
	return "INSERT INTO orders (v) VALUES (?)" + strings.Repeat(", (?)", rows-1)
}

func TestPreparedPlansBounded(t *testing.T) {
	db := preparedEnv(t, 0, 0) // the defaults
	ctx := context.Background()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	text := rowsInsert(1000)
	args := make([]any, 1000)
	for i := range args {
		args[i] = i
	}
	debug.FreeOSMemory()
	rss := startRSS(t)
	var kept []*sql.Stmt
	refused := 0
	for i := 0; i < 2000; i++ {
		st, err := c.PrepareContext(ctx, text)
		if err != nil {
			code, state := myErr(err)
			if code != 1461 || state != "42000" || !strings.Contains(err.Error(), "can't keep more than limits.session_prepared_memory") ||
				!strings.Contains(err.Error(), "current value: 8MiB") {
				t.Fatalf("prepare %d: %v, want 1461 naming limits.session_prepared_memory", i, err)
			}
			refused++
			continue
		}
		kept = append(kept, st)
	}
	grew := rss.growth()
	t.Logf("2,000 prepares of a 1,000-row INSERT on one session: %d kept, %d refused with 1461; peak RSS growth %.1f MiB",
		len(kept), refused, float64(grew)/(1<<20))
	if grew > 64<<20 {
		t.Errorf("RSS grew %.1f MiB, bound 64 MiB", float64(grew)/(1<<20))
	}
	if len(kept) < 100 || refused == 0 {
		t.Fatalf("%d kept, %d refused: want ~110 kept under 8 MiB, the rest refused", len(kept), refused)
	}
	// The session goes on: a kept statement executes, a text INSERT fills.
	if _, err := kept[0].ExecContext(ctx, args...); err != nil {
		t.Fatalf("execute a kept statement: %v", err)
	}
	if _, err := c.ExecContext(ctx, "INSERT INTO orders (v) VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	// Closing statements gives their memory back.
	for _, st := range kept[len(kept)-10:] {
		st.Close()
	}
	st, err := c.PrepareContext(ctx, text)
	if err != nil {
		t.Fatalf("prepare after closing 10: %v", err)
	}
	if _, err := st.ExecContext(ctx, args...); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := c.QueryRowContext(ctx, "SELECT COUNT(*) FROM orders").Scan(&n); err != nil || n != 2001 {
		t.Fatalf("rows: %d, %v; want 2001", n, err)
	}
}

// All sessions together: limits.prepared_memory.
func TestPreparedPlansGlobalBudget(t *testing.T) {
	db := preparedEnv(t, 1<<20, 1<<20)
	ctx := context.Background()
	text := rowsInsert(1000)
	var conns []*sql.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	kept := 0
	for s := 0; s < 4; s++ {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		for {
			_, err := c.PrepareContext(ctx, text)
			if err == nil {
				kept++
				continue
			}
			if code, _ := myErr(err); code != 1461 {
				t.Fatalf("session %d: %v, want 1461", s, err)
			}
			if s > 0 && !strings.Contains(err.Error(), "limits.prepared_memory") {
				t.Fatalf("session %d: %v, want the global budget named", s, err)
			}
			break
		}
	}
	t.Logf("1 MiB in all: %d statements kept", kept)
	// A session's end gives its plans back (ErrBadConn from Raw closes
	// the connection rather than pooling it).
	conns[0].Raw(func(any) error { return driver.ErrBadConn })
	conns = conns[1:]
	testwait.For(t, "the first session's plans released", func() bool {
		c, err := db.Conn(ctx)
		if err != nil {
			return false
		}
		defer c.Close()
		st, err := c.PrepareContext(ctx, text)
		if err == nil {
			st.Close()
		}
		return err == nil
	})
}
