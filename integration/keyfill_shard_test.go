package integration

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
)

// The sharded deployment: two backends (shards), each behind its own proxy,
// both proxies allocating from one shared store (a third server). The same
// table names exist on both shards; half the tables take snowflake keys
// (worker IDs leased from the store), half segment keys.

var (
	shardSnowTables    = []string{"snow_a", "snow_b"}
	shardSegmentTables = []string{"seg_a", "seg_b"}
)

type shardEnv struct {
	shards  [2]*testdb.Server
	proxies [2]*leaf
	direct  [2]*sql.DB
}

func startShardEnv(t *testing.T) *shardEnv {
	t.Helper()
	env := &shardEnv{}
	store := testdb.Start(t)
	for i := range env.shards {
		env.shards[i] = testdb.Start(t)
		env.direct[i] = env.shards[i].Open(t, "app")
		for _, tb := range append(append([]string{}, shardSnowTables...), shardSegmentTables...) {
			env.shards[i].Exec(t, "CREATE TABLE app."+tb+" (id BIGINT PRIMARY KEY, src VARCHAR(64) NOT NULL)")
		}
	}
	for i := range env.proxies {
		cfg := leafConfig(t, env.shards[i], store)
		cfg.Snowflake.WorkerID = "auto"
		cfg.Sequences.Tags = map[string]config.Tag{
			"snow_a": {Generator: "snowflake"},
			"snow_b": {Generator: "snowflake"},
			"seg_a":  {Generator: "segment", Step: 1000},
			// A small step: both proxies fetch segments from the store
			// often, interleaved.
			"seg_b": {Generator: "segment", Step: 50},
		}
		for tag := range cfg.Sequences.Tags {
			cfg.Tables = append(cfg.Tables, config.Table{Table: tag, Column: "id", Tag: tag})
		}
		env.proxies[i] = startLeaf(t, cfg)
	}
	return env
}

// keys reads every key of table on shard i directly from the backend.
func (env *shardEnv) keys(t *testing.T, i int, table string) []int64 {
	t.Helper()
	rows, err := env.direct[i].Query("SELECT id FROM " + table)
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

// TestKeyfillShards: 32 connections per proxy (half text protocol, half
// server-side prepared statements) insert single rows without a key into
// all four tables for 10 s (3 s with -short). Afterwards, read directly
// from both shards: every stored key is one a client got back as
// LastInsertId() on that shard and table (and vice versa), the union of
// all keys on both shards is distinct, segment keys are small and snowflake
// keys carry one leased worker per proxy, different between the proxies.
func TestKeyfillShards(t *testing.T) {
	env := startShardEnv(t)
	dur := 10 * time.Second
	if testing.Short() {
		dur = 3 * time.Second
	}
	const conns = 32
	tables := append(append([]string{}, shardSnowTables...), shardSegmentTables...)

	type key struct {
		shard int
		table string
	}
	var (
		mu       sync.Mutex
		returned = map[key][]int64{}
		failures atomic.Int64
		wg       sync.WaitGroup
	)
	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	for s := range env.proxies {
		textDB := env.proxies[s].open(t, "app", map[string]string{"interpolateParams": "true"})
		prepDB := env.proxies[s].open(t, "app", nil)
		for _, db := range []*sql.DB{textDB, prepDB} {
			db.SetMaxOpenConns(conns)
			db.SetMaxIdleConns(conns)
		}
		for w := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				db, prepared := textDB, w%2 == 1
				if prepared {
					db = prepDB
				}
				conn, err := db.Conn(context.Background())
				if err != nil {
					failures.Add(1)
					t.Errorf("shard %d worker %d: conn: %v", s, w, err)
					return
				}
				defer conn.Close()
				stmts := map[string]*sql.Stmt{}
				if prepared {
					for _, tb := range tables {
						st, err := conn.PrepareContext(context.Background(), "INSERT INTO "+tb+" (src) VALUES (?)")
						if err != nil {
							failures.Add(1)
							t.Errorf("shard %d worker %d: prepare: %v", s, w, err)
							return
						}
						defer st.Close()
						stmts[tb] = st
					}
				}
				local := map[key][]int64{}
				defer func() {
					mu.Lock()
					for k, v := range local {
						returned[k] = append(returned[k], v...)
					}
					mu.Unlock()
				}()
				for n := 0; ctx.Err() == nil; n++ {
					tb := tables[(n+w)%len(tables)]
					src := fmt.Sprintf("p%d-w%d-%d", s, w, n)
					var res sql.Result
					if prepared {
						res, err = stmts[tb].Exec(src)
					} else {
						res, err = conn.ExecContext(context.Background(), "INSERT INTO "+tb+" (src) VALUES (?)", src)
					}
					if err != nil {
						if failures.Add(1) <= 5 {
							t.Errorf("shard %d worker %d: insert into %s: %v", s, w, tb, err)
						}
						return
					}
					id, err := res.LastInsertId()
					if err != nil || id <= 0 {
						if failures.Add(1) <= 5 {
							t.Errorf("shard %d worker %d: LastInsertId %d, %v", s, w, id, err)
						}
						return
					}
					local[key{s, tb}] = append(local[key{s, tb}], id)
				}
			}()
		}
	}
	wg.Wait()
	if failures.Load() > 0 {
		t.Fatalf("%d failed inserts", failures.Load())
	}

	// Every tag is its own number space: seg_a and seg_b both start at 1,
	// so the union over different segment tags is not distinct, by design.
	// What sharding needs: a table's keys are distinct across both shards.
	// snow_a and snow_b share each proxy's generator, so all snowflake keys
	// together are distinct too, and segment keys (< 2^40) never meet
	// snowflake keys (>= 2^40): the union of each table's keys with all
	// snowflake keys is distinct.
	total := 0
	var snowAll []int64
	perTable := map[string][]int64{}
	workers := [2]map[int64]int{{}, {}}
	for s := range env.shards {
		for _, tb := range tables {
			stored := env.keys(t, s, tb)
			got := returned[key{s, tb}]
			if len(stored) != len(got) {
				t.Fatalf("shard %d %s: %d rows stored, %d LastInsertIds returned", s, tb, len(stored), len(got))
			}
			set := make(map[int64]bool, len(stored))
			for _, id := range stored {
				set[id] = true
			}
			for _, id := range got {
				if !set[id] {
					t.Fatalf("shard %d %s: LastInsertId %d is not a stored key", s, tb, id)
				}
			}
			snow := tb == "snow_a" || tb == "snow_b"
			for _, id := range stored {
				switch {
				case snow && id < 1<<40:
					t.Fatalf("shard %d %s: key %d is not a snowflake", s, tb, id)
				case !snow && id >= 1<<40:
					t.Fatalf("shard %d %s: segment key %d is huge", s, tb, id)
				}
				if snow {
					workers[s][(id>>12)&1023]++
				}
			}
			t.Logf("shard %d %s: %d rows", s, tb, len(stored))
			total += len(stored)
			perTable[tb] = append(perTable[tb], stored...)
			if snow {
				snowAll = append(snowAll, stored...)
			}
		}
	}
	// 2 proxies x 32 connections for dur must insert far more than a trickle.
	if total < 1000 {
		t.Fatalf("only %d rows inserted in %s", total, dur)
	}
	for _, tb := range tables {
		union := append(append([]int64{}, perTable[tb]...), snowAll...)
		if tb == "snow_a" || tb == "snow_b" {
			union = append([]int64{}, snowAll...)
		}
		assertDistinct(t, union)
	}
	t.Logf("%d rows on 2 shards in %s (%.0f rows/s), keys distinct per table across shards and over all snowflake tables; snowflake workers shard0 %v shard1 %v",
		total, dur, float64(total)/dur.Seconds(), workers[0], workers[1])
	for w := range workers[0] {
		if _, ok := workers[1][w]; ok {
			t.Fatalf("both proxies issued snowflake keys with worker %d", w)
		}
	}
	if len(workers[0]) != 1 || len(workers[1]) != 1 {
		t.Fatalf("each proxy should use one leased worker: %v %v", workers[0], workers[1])
	}
}

// TestKeyfillShardSpread: at low traffic (one insert per 5 ms, so each key
// is the first of its millisecond) snowflake keys split between even and
// odd within 45%-55%, because each millisecond's sequence starts at a
// random offset in [0,100); without it every key would be even and
// `id % 2` sharding would put every row on one shard.
//
// Statistics: p = 0.5, 400 rows give a standard deviation of 10 rows, so
// 45-55% is only +-2 sigma (about 1 run in 20 would fail). One stream per
// proxy runs at the same time (each proxy has its own generator), 400 rows
// each under -short (800 rows, +-2.8 sigma) and 1000 otherwise (2000 rows,
// +-4.5 sigma, about 5-8 s); the bound stays 45-55% on the union, and each
// stream's own percentage is logged.
func TestKeyfillShardSpread(t *testing.T) {
	env := startShardEnv(t)
	rows := 1000 // per proxy
	if testing.Short() {
		rows = 400
	}
	var (
		wg    sync.WaitGroup
		count [2]int
		even  [2]int
		seqs  [2]map[int64]bool
		errs  [2]error
	)
	for s := range env.proxies {
		db := env.proxies[s].open(t, "app", map[string]string{"interpolateParams": "true"})
		db.SetMaxOpenConns(1)
		if _, err := db.Exec("INSERT INTO snow_a (src) VALUES ('warm-up')"); err != nil {
			t.Fatal(err)
		}
		seqs[s] = map[int64]bool{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(5 * time.Millisecond)
			defer tick.Stop()
			for n := range rows {
				<-tick.C
				res, err := db.Exec("INSERT INTO snow_a (src) VALUES (?)", fmt.Sprintf("spread-%d", n))
				if err != nil {
					errs[s] = err
					return
				}
				id, err := res.LastInsertId()
				if err != nil {
					errs[s] = err
					return
				}
				count[s]++
				if id%2 == 0 {
					even[s]++
				}
				seqs[s][id&4095] = true
			}
		}()
	}
	wg.Wait()
	for s := range errs {
		if errs[s] != nil {
			t.Fatalf("proxy %d: %v", s, errs[s])
		}
	}

	// The keys as stored (directly from the shards), not only as returned.
	total, evenStored := 0, 0
	for s := range env.shards {
		var n, e int
		if err := env.direct[s].QueryRow("SELECT COUNT(*), COALESCE(SUM(id % 2 = 0), 0) FROM snow_a WHERE src LIKE 'spread-%'").Scan(&n, &e); err != nil {
			t.Fatal(err)
		}
		if n != count[s] || e != even[s] {
			t.Fatalf("shard %d: stored %d rows (%d even), client saw %d (%d even)", s, n, e, count[s], even[s])
		}
		t.Logf("proxy %d: %d rows, %.1f%% even, %d distinct sequence starts", s, n, 100*float64(e)/float64(n), len(seqs[s]))
		// Random starts: many different low-bit values, not one.
		if len(seqs[s]) < 20 {
			t.Fatalf("proxy %d: only %d distinct sequence values over %d rows: no random start", s, len(seqs[s]), n)
		}
		total += n
		evenStored += e
	}
	if total != 2*rows {
		t.Fatalf("%d rows, want %d", total, 2*rows)
	}
	pct := 100 * float64(evenStored) / float64(total)
	t.Logf("low traffic: %d snowflake rows, %.1f%% even / %.1f%% odd", total, pct, 100-pct)
	if pct < 45 || pct > 55 {
		t.Fatalf("id %% 2: %.1f%% even over %d rows, want 45%%-55%%", pct, total)
	}
}
