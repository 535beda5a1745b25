package segment

import (
	"context"
	"database/sql"
	"log/slog"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

// Store write conflicts as MariaDB and Galera answer them.
var (
	errDeadlock = &mysql.MySQLError{Number: 1213, SQLState: [5]byte{'4', '0', '0', '0', '1'},
		Message: "WSREP detected deadlock/conflict and aborted the transaction. Try restarting the transaction"}
	errNotReady = &mysql.MySQLError{Number: 1047, SQLState: [5]byte{'0', '8', 'S', '0', '1'},
		Message: "WSREP has not yet prepared node for application use"}
)

// A store write conflict met by a block request (a range of its own) and
// by the loader (a NEXTVAL with both buffers empty) is tried again: the
// caller gets its IDs, the conflicts are counted apart from fetch errors,
// the store is not reported down and nothing is logged at error level.
func TestConflictsRetried(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
	}{{"deadlock", errDeadlock}, {"node not ready", errNotReady}} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			var logs testdb.LockedBuffer
			st := newMemStore(map[string]int64{"t": 100})
			a := New(st, Options{WatchEvery: -1, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
			defer a.Close()

			st.set(func(s *memStore) { s.conflicts, s.conflictErr = 3, c.err })
			if id, err := a.Next(ctx, "t"); err != nil || id != 1 {
				t.Fatalf("NEXTVAL through 3 conflicts: %d, %v; want 1", id, err)
			}
			st.set(func(s *memStore) { s.conflicts = 5 })
			first, err := a.Block(ctx, "t", 5000)
			if err != nil {
				t.Fatalf("block of 5000 through 5 conflicts: %v", err)
			}
			if first < 101 {
				t.Fatalf("block at %d overlaps the first segment", first)
			}
			s, _ := a.Stats("t")
			if s.Conflicts != 8 || s.FetchErrors != 0 {
				t.Fatalf("conflicts %d, fetch errors %d; want 8 and 0", s.Conflicts, s.FetchErrors)
			}
			if a.StoreFailing() {
				t.Fatal("store reported failing after conflicts")
			}
			if out := logs.String(); strings.Contains(out, "level=ERROR") || strings.Contains(out, "allocation store down") ||
				!strings.Contains(out, "met a store write conflict; retrying") {
				t.Fatalf("log: want the conflicts at debug level, nothing at error level:\n%s", out)
			}
		})
	}
}

// A block request gives up on conflicts that do not stop once it has
// tried conflictTries times and its wait is over: it returns the
// conflict, counted as such.
func TestBlockConflictsBounded(t *testing.T) {
	st := newMemStore(map[string]int64{"t": 100})
	a := New(st, Options{WatchEvery: -1, WaitTimeout: 1})
	defer a.Close()
	// The tag's step known first: a block larger than it fetches a range
	// of its own (a tag's very first block waits for its first segment
	// instead, bounded by WaitTimeout, as NEXTVAL does: issue 40).
	testwait.For(t, "the tag's first segment", func() bool {
		_, err := a.Next(context.Background(), "t")
		return err == nil
	})
	st.set(func(s *memStore) { s.conflicts, s.conflictErr = 1<<30, errDeadlock })
	_, err := a.Block(context.Background(), "t", 5000)
	if err == nil || !strings.Contains(err.Error(), "1213") {
		t.Fatalf("block through endless conflicts: %v, want the deadlock", err)
	}
	// The loader the block started meets them too.
	if s, _ := a.Stats("t"); s.Conflicts < conflictTries || s.FetchErrors != 0 {
		t.Fatalf("conflicts %d, fetch errors %d; want at least %d and 0", s.Conflicts, s.FetchErrors, conflictTries)
	}
}

// On MariaDB: a block request whose fetch waits on the tag's row lock,
// held by another transaction past innodb_lock_wait_timeout (1 s here),
// gets 1205 from the server; it is retried and succeeds once the lock is
// gone, counted as a conflict, not a fetch error.
func TestBlockLockWaitRetriedOnMariaDB(t *testing.T) {
	ctx := context.Background()
	srv := testdb.Start(t)
	openStore(t, srv, "leaf", map[string]int64{"t": 100})
	cfg, err := mysql.ParseDSN(srv.DSN("leaf"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Params = map[string]string{"innodb_lock_wait_timeout": "1"}
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	a := New(NewMySQLStore(db), Options{WatchEvery: -1, WaitTimeout: 30e9})
	defer a.Close()

	holder := srv.Open(t, "leaf")
	tx, err := holder.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "SELECT max_id FROM leaf_alloc WHERE biz_tag = 't' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	type result struct {
		first int64
		err   error
	}
	done := make(chan result, 1)
	go func() {
		first, err := a.Block(ctx, "t", 5000)
		done <- result{first, err}
	}()
	testwait.For(t, "the block's fetch to meet the lock wait timeout", func() bool {
		s, _ := a.Stats("t")
		return s.Conflicts >= 1
	})
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.first < 1 {
		t.Fatalf("block after the lock was released: %d, %v", r.first, r.err)
	}
	if s, _ := a.Stats("t"); s.FetchErrors != 0 {
		t.Fatalf("fetch errors %d, want 0 (conflicts %d)", s.FetchErrors, s.Conflicts)
	}
}
