package engine

import (
	"context"
	"database/sql"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/proxy"
	"github.com/leafproxy/leafproxy/rewriter"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// lockedCounter is counter for sessions on several goroutines.
type lockedCounter struct {
	mu sync.Mutex
	counter
}

func (c *lockedCounter) NextN(ctx context.Context, tag string, n int, dst []int64) ([]int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counter.NextN(ctx, tag, n, dst)
}

// cachedAt says when the column cache read db.table's columns, if it holds them.
func (c *columnCache) cachedAt(db, table string) (time.Time, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.entries[colKey{db, table}]
	return e.loadedAt, ok
}

// DDL through the proxy drops the cached columns of the tables it names and
// no others; a ';' inside a string is no statement boundary, so an INSERT
// of such text keeps the cache; and a DDL that moves a rule table's key
// column is seen by the next INSERT without a column list, which still
// fills the key. On the goroutine path and on an event loop.
func TestDDLForgetsOnlyTheTablesItNames(t *testing.T) {
	backend := testdb.Start(t)
	for _, loops := range []int{-1, 1} {
		t.Run(map[int]string{-1: "goroutines", 1: "event loop"}[loops], func(t *testing.T) {
			testDDLForgets(t, backend, loops)
		})
	}
}

func testDDLForgets(t *testing.T, backend *testdb.Server, loops int) {
	backend.Exec(t, "DROP DATABASE IF EXISTS shop", "DROP DATABASE IF EXISTS shop2", "CREATE DATABASE shop", "CREATE DATABASE shop2",
		"CREATE TABLE shop.notes (id BIGINT PRIMARY KEY, body TEXT)",
		"CREATE TABLE shop.other (id BIGINT PRIMARY KEY, v INT)",
		"CREATE TABLE shop2.notes (id BIGINT PRIMARY KEY, body TEXT)")
	rules, err := rewriter.NewRules([]rewriter.Rule{{Table: "notes", Column: "id", Tag: "note"}, {Table: "other", Column: "id", Tag: "other"}})
	if err != nil {
		t.Fatal(err)
	}
	e := New(&lockedCounter{counter: counter{next: 1000}}, rules)
	e.columns = newColumnCache(time.Hour) // entries change only when DDL drops them
	db := serveEngine(t, e, backend, loops, "shop")
	ctx := context.Background()
	// One connection: once a later statement is answered, the session has
	// finished with the DDL before it, invalidation included.
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	exec := func(q string) {
		t.Helper()
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		var one int
		if err := conn.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
			t.Fatal(err)
		}
	}
	cached := func(db, table string) time.Time {
		t.Helper()
		at, ok := e.columns.cachedAt(db, table)
		if !ok {
			e.columns.mu.RLock()
			defer e.columns.mu.RUnlock()
			t.Fatalf("%s.%s is not in the column cache: %v", db, table, e.columns.entries)
		}
		return at
	}

	exec("INSERT INTO notes VALUES (NULL, 'first')")
	exec("INSERT INTO other VALUES (NULL, 1)")
	exec("INSERT INTO shop2.notes VALUES (NULL, 'elsewhere')")
	notesAt, otherAt, notes2At := cached("shop", "notes"), cached("shop", "other"), cached("shop2", "notes")

	exec("INSERT INTO notes (body) VALUES ('see you; create later')")
	exec("INSERT INTO notes (body) VALUES ('it''s; DROP TABLE other; -- no')")
	if cached("shop", "notes") != notesAt || cached("shop", "other") != otherAt || cached("shop2", "notes") != notes2At {
		t.Fatal("an INSERT with ';' inside a string dropped column cache entries")
	}
	var ids int
	if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM notes WHERE id > 1000 AND body LIKE '%;%'").Scan(&ids); err != nil || ids != 2 {
		t.Fatalf("filled rows with ';' in the body: %d, %v; want 2", ids, err)
	}

	exec("ALTER TABLE other ADD COLUMN extra INT")
	if _, ok := e.columns.cachedAt("shop", "other"); ok {
		t.Error("ALTER TABLE other left other's columns in the cache")
	}
	if cached("shop", "notes") != notesAt || cached("shop2", "notes") != notes2At {
		t.Error("ALTER TABLE other dropped the cached columns of the notes tables")
	}

	// The key column moves: the next INSERT without a column list must
	// fill the second column.
	exec("ALTER TABLE notes ADD COLUMN pre INT FIRST")
	if _, ok := e.columns.cachedAt("shop", "notes"); ok {
		t.Error("ALTER TABLE notes left its old columns in the cache")
	}
	exec("INSERT INTO notes VALUES (7, NULL, 'moved')")
	var pre int
	var id int64
	if err := conn.QueryRowContext(ctx, "SELECT pre, id FROM notes WHERE body = 'moved'").Scan(&pre, &id); err != nil || pre != 7 || id <= 1000 {
		t.Fatalf("after the ALTER: pre %d, id %d, %v; want pre 7 and a generated id", pre, id, err)
	}
	exec("ALTER TABLE shop.notes ADD COLUMN post INT AFTER id")
	exec("INSERT INTO notes VALUES (8, NULL, 9, 'qualified')")
	if err := conn.QueryRowContext(ctx, "SELECT pre, id FROM notes WHERE body = 'qualified' AND post = 9").Scan(&pre, &id); err != nil || pre != 8 || id <= 1000 {
		t.Fatalf("after ALTER TABLE shop.notes: pre %d, id %d, %v; want pre 8 and a generated id", pre, id, err)
	}

	// DROP DATABASE drops the entries of its tables only.
	exec("INSERT INTO other VALUES (NULL, 2, 3)")
	notesAt, otherAt = cached("shop", "notes"), cached("shop", "other")
	exec("DROP DATABASE shop2")
	if _, ok := e.columns.cachedAt("shop2", "notes"); ok {
		t.Error("DROP DATABASE shop2 left shop2.notes in the cache")
	}
	if cached("shop", "notes") != notesAt || cached("shop", "other") != otherAt {
		t.Error("DROP DATABASE shop2 dropped shop's entries")
	}
}

// serveEngine runs a proxy with e as its interceptor in front of backend
// (loops event-loop runners; -1: none) until the test ends, and opens a
// go-sql-driver pool to it as app, on database dbName.
func serveEngine(t *testing.T, e *Engine, backend *testdb.Server, loops int, dbName string) *sql.DB {
	t.Helper()
	srv, err := proxy.NewServer(proxy.Config{
		Listen:     "127.0.0.1:0",
		Backend:    proxy.Backend{Addr: backend.Addr, User: "root"},
		Users:      []proxy.Account{{Name: "app", Password: "secret"}},
		EventLoops: loops,
	}, proxy.WithInterceptor(e), proxy.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	db, err := sql.Open("mysql", "app:secret@tcp("+l.Addr().String()+")/"+dbName)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
