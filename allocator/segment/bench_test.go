package segment

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
)

// benchServer is one MariaDB shared by all benchmarks of a run (a benchmark
// function is called several times while b.N ramps up). TestMain stops it.
type benchServer struct {
	once sync.Once
	srv  *testdb.Server
	err  error
	seq  atomic.Int64
}

var benchDB benchServer

func (s *benchServer) close() {
	if s.srv != nil {
		s.srv.Close()
	}
}

// rtCounter counts network round trips: a read after one or more writes is
// one round trip (COM_STMT_CLOSE is written without a reply and so folds
// into the next command's trip).
type rtCounter struct{ trips atomic.Int64 }

type countingConn struct {
	net.Conn
	c       *rtCounter
	pending bool
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.pending = true
	return c.Conn.Write(p)
}

func (c *countingConn) Read(p []byte) (int, error) {
	if c.pending {
		c.pending = false
		c.c.trips.Add(1)
	}
	return c.Conn.Read(p)
}

// benchStore returns a handle to a fresh database on the shared server with
// leaf_alloc holding tag at step, whose round trips land in the counter.
func benchStore(b *testing.B, tag string, step int64) (*sql.DB, *rtCounter) {
	b.Helper()
	benchDB.once.Do(func() { benchDB.srv, benchDB.err = testdb.New() })
	if benchDB.err != nil {
		testdb.Unavailable(b, benchDB.err)
	}
	name := fmt.Sprintf("bench%d", benchDB.seq.Add(1))
	openStore(b, benchDB.srv, name, map[string]int64{tag: step})
	cfg, err := mysql.ParseDSN(benchDB.srv.DSN(name))
	if err != nil {
		b.Fatal(err)
	}
	counter := &rtCounter{}
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &countingConn{Conn: conn, c: counter}, nil
	}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		b.Fatal(err)
	}
	db := sql.OpenDB(connector)
	b.Cleanup(func() { db.Close() })
	return db, counter
}

// BenchmarkNext: the single-goroutine fast path against a real store with a
// step of 1,000,000 (a fetch every million IDs), side by side with a bare
// atomic counter and a mutex-guarded counter as baselines.
func BenchmarkNext(b *testing.B) {
	ctx := context.Background()
	b.Run("segment", func(b *testing.B) {
		db, _ := benchStore(b, "bench", 1_000_000)
		a := New(NewMySQLStore(db), Options{})
		defer a.Close()
		if _, err := a.Next(ctx, "bench"); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		var sink int64
		for i := 0; i < b.N; i++ {
			id, err := a.Next(ctx, "bench")
			if err != nil {
				b.Fatal(err)
			}
			sink += id
		}
		_ = sink
	})
	b.Run("baseline-atomic", func(b *testing.B) {
		var n atomic.Int64
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			n.Add(1)
		}
	})
	b.Run("baseline-mutex", func(b *testing.B) {
		var (
			mu sync.Mutex
			n  int64
		)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			mu.Lock()
			n++
			mu.Unlock()
		}
	})
}

// BenchmarkNextParallel: the fast path from GOMAXPROCS goroutines (one
// contended atomic), with the same baselines.
func BenchmarkNextParallel(b *testing.B) {
	ctx := context.Background()
	b.Run("segment", func(b *testing.B) {
		db, _ := benchStore(b, "bench", 1_000_000)
		a := New(NewMySQLStore(db), Options{})
		defer a.Close()
		if _, err := a.Next(ctx, "bench"); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := a.Next(ctx, "bench"); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("baseline-atomic", func(b *testing.B) {
		var n atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				n.Add(1)
			}
		})
	})
	b.Run("baseline-mutex", func(b *testing.B) {
		var (
			mu sync.Mutex
			n  int64
		)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				mu.Lock()
				n++
				mu.Unlock()
			}
		})
	})
}

// BenchmarkRoundTripsPerMillion counts database round trips (on the wire)
// and store fetches per million IDs: the segment allocator at a fixed step
// of 1000, the same starting at 1000 with dynamic growth, and a
// ticket-server baseline (UPDATE ... LAST_INSERT_ID(id+1) then SELECT
// LAST_INSERT_ID() per ID) on the same server in the same run. ns/op is the
// wall time per ID.
func BenchmarkRoundTripsPerMillion(b *testing.B) {
	ctx := context.Background()
	perMillion := func(b *testing.B, n int64) float64 { return float64(n) * 1e6 / float64(b.N) }
	segment := func(maxStep int64) func(b *testing.B) {
		return func(b *testing.B) {
			db, rt := benchStore(b, "rt", 1000)
			store := &countingStore{Store: NewMySQLStore(db)}
			a := New(store, Options{MaxStep: maxStep})
			defer a.Close()
			b.ResetTimer()
			tripsBefore := rt.trips.Load()
			for i := 0; i < b.N; i++ {
				if _, err := a.Next(ctx, "rt"); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(perMillion(b, rt.trips.Load()-tripsBefore), "roundtrips/1M-IDs")
			b.ReportMetric(perMillion(b, store.fetches.Load()), "fetches/1M-IDs")
		}
	}
	b.Run("segment-step1000", segment(1000))
	b.Run("segment-dynamic", segment(1_000_000))
	b.Run("ticket-server", func(b *testing.B) {
		db, rt := benchStore(b, "unused", 1)
		if _, err := db.Exec("CREATE TABLE ticket (id bigint NOT NULL) ENGINE=InnoDB"); err != nil {
			b.Fatal(err)
		}
		if _, err := db.Exec("INSERT INTO ticket VALUES (0)"); err != nil {
			b.Fatal(err)
		}
		conn, err := db.Conn(ctx) // LAST_INSERT_ID() is per connection
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		b.ResetTimer()
		tripsBefore := rt.trips.Load()
		var last int64
		for i := 0; i < b.N; i++ {
			if _, err := conn.ExecContext(ctx, "UPDATE ticket SET id = LAST_INSERT_ID(id+1)"); err != nil {
				b.Fatal(err)
			}
			var id int64
			if err := conn.QueryRowContext(ctx, "SELECT LAST_INSERT_ID()").Scan(&id); err != nil {
				b.Fatal(err)
			}
			if id <= last {
				b.Fatalf("ticket %d after %d", id, last)
			}
			last = id
		}
		b.StopTimer()
		b.ReportMetric(perMillion(b, rt.trips.Load()-tripsBefore), "roundtrips/1M-IDs")
		b.ReportMetric(1e6, "fetches/1M-IDs")
	})
}
