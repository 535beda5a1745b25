package segment

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/allocator/schema"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

func TestMain(m *testing.M) { testdb.Main(m, benchDB.close) }

// openStore creates leaf_alloc in a fresh database on srv with the given
// tags and returns a handle of its own (separate connection pool).
func openStore(t testing.TB, srv *testdb.Server, db string, tags map[string]int64) *sql.DB {
	t.Helper()
	conn := srv.Open(t, db)
	ctx := context.Background()
	if err := schema.Ensure(ctx, conn); err != nil {
		t.Fatal(err)
	}
	for tag, step := range tags {
		if _, err := schema.EnsureTag(ctx, conn, tag, step, "test"); err != nil {
			t.Fatal(err)
		}
	}
	return conn
}

// countingStore counts fetches (store round trips of the allocator).
type countingStore struct {
	Store
	fetches atomic.Int64
}

func (c *countingStore) Fetch(ctx context.Context, tag string, step, floor int64) (Range, error) {
	c.fetches.Add(1)
	return c.Store.Fetch(ctx, tag, step, floor)
}

// checkUnique sorts ids and fails on a duplicate or a non-positive ID.
func checkUnique(t *testing.T, ids []int64) {
	t.Helper()
	slices.Sort(ids)
	if len(ids) > 0 && ids[0] <= 0 {
		t.Fatalf("non-positive ID %d", ids[0])
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[i-1] {
			t.Fatalf("duplicate ID %d", ids[i])
		}
	}
}

func TestMySQLStore(t *testing.T) {
	ctx := context.Background()
	srv := testdb.Start(t)
	db := openStore(t, srv, "leaf", map[string]int64{"order": 1000})
	s := NewMySQLStore(db)

	r, err := s.Fetch(ctx, "order", 0, 0)
	if err != nil || r != (Range{Start: 1, End: 1001, TableStep: 1000}) {
		t.Fatalf("first fetch with the table step: %+v, %v; want [1, 1001)", r, err)
	}
	r, err = s.Fetch(ctx, "order", 5000, 1001)
	if err != nil || r != (Range{Start: 1001, End: 6001, TableStep: 1000}) {
		t.Fatalf("fetch of 5000: %+v, %v; want [1001, 6001)", r, err)
	}
	var maxID int64
	if err := db.QueryRow("SELECT max_id FROM leaf_alloc WHERE biz_tag = 'order'").Scan(&maxID); err != nil || maxID != 6001 {
		t.Fatalf("max_id = %d, %v", maxID, err)
	}
	for _, step := range []int64{0, 10} {
		_, err = s.Fetch(ctx, "missing", step, 0)
		var unk *UnknownTagError
		if !errors.As(err, &unk) || unk.Tag != "missing" {
			t.Fatalf("unknown tag (step %d): %v", step, err)
		}
	}
	if err := s.Create(ctx, "fresh", 77); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, "order", 1); err != nil { // existing row untouched
		t.Fatal(err)
	}
	if r, err := s.Fetch(ctx, "fresh", 0, 0); err != nil || r != (Range{Start: 1, End: 78, TableStep: 77}) {
		t.Fatalf("created tag: %+v, %v", r, err)
	}
	if r, err := s.Fetch(ctx, "order", 0, 6001); err != nil || r.Start != 6001 || r.TableStep != 1000 {
		t.Fatalf("Create must leave an existing row alone: %+v, %v", r, err)
	}
	// A floor above max_id (7001): the store moved back below what the
	// caller reserved. Nothing is taken, whatever the step.
	for _, step := range []int64{0, 500} {
		_, err = s.Fetch(ctx, "order", step, 9000)
		var moved *MovedBackError
		if !errors.As(err, &moved) || moved.MaxID != 7001 || moved.Floor != 9000 || moved.Tag != "order" {
			t.Fatalf("fetch (step %d) below the floor: %v, want a MovedBackError at 7001", step, err)
		}
	}
	if err := db.QueryRow("SELECT max_id FROM leaf_alloc WHERE biz_tag = 'order'").Scan(&maxID); err != nil || maxID != 7001 {
		t.Fatalf("max_id = %d, %v after refused fetches, want 7001 (unchanged)", maxID, err)
	}
	if r, err := s.Fetch(ctx, "order", 500, 7001); err != nil || r != (Range{Start: 7001, End: 7501, TableStep: 1000}) {
		t.Fatalf("fetch at the floor: %+v, %v", r, err)
	}
}

// TestMySQLUnknownTagAndAutoCreate: the error MariaDB itself would give,
// and auto-create through the real store.
func TestMySQLUnknownTagAndAutoCreate(t *testing.T) {
	ctx := context.Background()
	srv := testdb.Start(t)
	db := openStore(t, srv, "leaf", map[string]int64{"order": 100})

	store := &countingStore{Store: NewMySQLStore(db)}
	a := New(store, Options{})
	defer a.Close()
	for i := 0; i < 20; i++ {
		_, err := a.Next(ctx, "nope")
		var unk *UnknownTagError
		if !errors.As(err, &unk) || err.Error() != "Unknown SEQUENCE: 'nope'" || unk.Code() != ErrCodeUnknownSequence || unk.SQLState() != "42S02" {
			t.Fatalf("unknown tag: %v", err)
		}
	}
	if n := store.fetches.Load(); n != 1 {
		t.Errorf("%d fetches for 20 lookups of an unknown tag within the miss TTL, want 1", n)
	}

	b := New(NewMySQLStore(db), Options{AutoCreate: true, DefaultStep: 30, MaxStep: 30})
	defer b.Close()
	ids, err := b.NextN(ctx, "auto", 75, nil)
	if err != nil {
		t.Fatalf("auto-create: %v", err)
	}
	if ids[0] < 1 || ids[74] != ids[0]+74 || !slices.IsSorted(ids) {
		t.Fatalf("auto-created tag gave %d..%d, want 75 consecutive IDs", ids[0], ids[74])
	}
	var step int64
	if err := db.QueryRow("SELECT step FROM leaf_alloc WHERE biz_tag = 'auto'").Scan(&step); err != nil || step != 30 {
		t.Fatalf("auto-created row step %d, %v", step, err)
	}
}

// TestMySQLNextNSpansSegments: one batch larger than a segment is one
// run of consecutive IDs (issue 38).
func TestMySQLNextNSpansSegments(t *testing.T) {
	ctx := context.Background()
	srv := testdb.Start(t)
	db := openStore(t, srv, "leaf", map[string]int64{"order": 100})
	a := New(NewMySQLStore(db), Options{MaxStep: 100})
	defer a.Close()
	ids, err := a.NextN(ctx, "order", 250, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		if id != ids[0]+int64(i) || ids[0] < 1 {
			t.Fatalf("ids[%d] = %d: want 250 consecutive IDs from %d", i, id, ids[0])
		}
	}
	ids, err = a.NextN(ctx, "order", 1000, ids)
	if err != nil || len(ids) != 1250 || !slices.IsSorted(ids) || ids[1249] != ids[250]+999 {
		t.Fatalf("second batch: %d ids, %v: want 1000 consecutive IDs above the first 250", len(ids), err)
	}
	checkUnique(t, ids)
}

// TestMySQLUniqueness: 4 allocators, each with its own connection pool, x
// 16 goroutines, step 100 (growth capped so segments keep switching), over
// one leaf_alloc row: at least 1,000,000 IDs, all distinct and positive, and
// each goroutine's IDs increasing.
func TestMySQLUniqueness(t *testing.T) {
	ctx := context.Background()
	srv := testdb.Start(t)
	openStore(t, srv, "leaf", map[string]int64{"order": 100})
	const (
		instances = 4
		workers   = 16
		perWorker = 1_000_000/(instances*workers) + 1
	)
	var (
		wg      sync.WaitGroup
		out     = make([][]int64, instances*workers)
		fetches atomic.Int64
	)
	start := time.Now()
	for i := 0; i < instances; i++ {
		db := srv.Open(t, "leaf") // a pool of its own, like another proxy
		db.SetMaxOpenConns(4)
		store := &countingStore{Store: NewMySQLStore(db)}
		a := New(store, Options{MaxStep: 100, WaitTimeout: 30 * time.Second})
		defer func() { fetches.Add(store.fetches.Load()); a.Close() }()
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(slot int) {
				defer wg.Done()
				ids := make([]int64, 0, perWorker)
				for len(ids) < perWorker {
					// Mostly single IDs; every 8th call a small batch, which
					// keeps the run short under -race and exercises NextN
					// across segment boundaries.
					if len(ids)%8 == 0 {
						var err error
						if ids, err = a.NextN(ctx, "order", min(37, perWorker-len(ids)), ids); err != nil {
							t.Errorf("NextN: %v", err)
							return
						}
						continue
					}
					id, err := a.Next(ctx, "order")
					if err != nil {
						t.Errorf("Next: %v", err)
						return
					}
					ids = append(ids, id)
				}
				out[slot] = ids
			}(i*workers + w)
		}
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	var all []int64
	for slot, ids := range out {
		if !slices.IsSorted(ids) {
			t.Fatalf("goroutine %d: IDs from one allocator not increasing", slot)
		}
		all = append(all, ids...)
	}
	if len(all) < 1_000_000 {
		t.Fatalf("only %d IDs", len(all))
	}
	checkUnique(t, all)
	t.Logf("%d IDs in %v, %d..%d", len(all), time.Since(start), all[0], all[len(all)-1])
}

// TestMySQLStoreOutage stops the database mid-load: buffered IDs keep
// coming, then requests fail within the timeout with an error naming the tag
// and the cause; after a restart allocation resumes, with no duplicates and
// nothing at or below what was served before.
func TestMySQLStoreOutage(t *testing.T) {
	ctx := context.Background()
	srv := testdb.Start(t)
	db := openStore(t, srv, "leaf", map[string]int64{"order": 1000})
	const wait = time.Second
	a := New(NewMySQLStore(db), Options{MaxStep: 1000, WaitTimeout: wait})
	defer a.Close()

	before, err := a.NextN(ctx, "order", 500, nil)
	if err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "prefetch", func() bool { st, _ := a.Stats("order"); return st.NextReady })
	st, _ := a.Stats("order")
	buffered := st.Remaining + (st.Next.End - st.Next.Start)
	srv.Stop(t)

	// Everything buffered is served with the store down.
	var during []int64
	for i := int64(0); i < buffered; i++ {
		id, err := a.Next(ctx, "order")
		if err != nil {
			t.Fatalf("ID %d of %d buffered, with the store down: %v", i, buffered, err)
		}
		during = append(during, id)
	}
	// Then a clear error within the timeout (never a hang).
	for i := 0; i < 3; i++ {
		begin := time.Now()
		_, err := a.Next(ctx, "order")
		took := time.Since(begin)
		var ex *ExhaustedError
		if !errors.As(err, &ex) {
			t.Fatalf("with the store down and the buffers empty: %v, want ExhaustedError", err)
		}
		if took > wait+5*time.Second {
			t.Fatalf("error after %v with a %v timeout", took, wait)
		}
		if ex.LastErr == nil || !strings.Contains(err.Error(), `"order"`) {
			t.Errorf("error should name the tag and the store failure: %v", err)
		}
		t.Logf("outage error after %v: %v", took.Round(time.Millisecond), err)
	}

	srv.Restart(t)
	var after []int64
	testwait.For(t, "allocation to resume", func() bool {
		id, err := a.Next(ctx, "order")
		if err == nil {
			after = append(after, id)
		}
		return err == nil
	})
	after, err = a.NextN(ctx, "order", 3000, after)
	if err != nil {
		t.Fatal(err)
	}
	served := append(append(slices.Clone(before), during...), after...)
	if !slices.IsSorted(served) {
		t.Fatal("IDs from one allocator went backwards across the outage")
	}
	high := during[len(during)-1]
	for _, id := range after {
		if id <= high {
			t.Fatalf("after the restart served %d, not above %d served before", id, high)
		}
	}
	checkUnique(t, served)
	// A fresh allocator (the proxy restarted too) also stays clear of them.
	b := New(NewMySQLStore(srv.Open(t, "leaf")), Options{})
	defer b.Close()
	if id, err := b.Next(ctx, "order"); err != nil || id <= served[len(served)-1] {
		t.Fatalf("new allocator after the outage: %d, %v", id, err)
	}
}

// TestMySQLRestart: a new allocator on the same table never issues an ID an
// earlier one issued, whether the earlier one was closed or just abandoned.
func TestMySQLRestart(t *testing.T) {
	ctx := context.Background()
	srv := testdb.Start(t)
	openStore(t, srv, "leaf", map[string]int64{"order": 100})
	var issued []int64
	for gen := 0; gen < 4; gen++ {
		a := New(NewMySQLStore(srv.Open(t, "leaf")), Options{})
		ids, err := a.NextN(ctx, "order", 150+gen*70, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(issued) > 0 && ids[0] <= issued[len(issued)-1] {
			t.Fatalf("generation %d starts at %d, not above %d issued before", gen, ids[0], issued[len(issued)-1])
		}
		issued = append(issued, ids...)
		if gen%2 == 0 {
			a.Close()
		} // odd generations are abandoned mid-segment, like a crash
	}
	checkUnique(t, issued)
}

// TestMySQLStaleReplica moves max_id back by hand, as a failover to a stale
// replica would: the allocator refuses the segments that overlap what it
// already reserved, reports them, and never serves an ID twice.
func TestMySQLStaleReplica(t *testing.T) {
	ctx := context.Background()
	srv := testdb.Start(t)
	db := openStore(t, srv, "leaf", map[string]int64{"order": 100})
	a := New(NewMySQLStore(db), Options{MaxStep: 100, WaitTimeout: 2 * time.Second})
	defer a.Close()
	served, err := a.NextN(ctx, "order", 1500, nil)
	if err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "prefetch", func() bool { st, _ := a.Stats("order"); return st.NextReady })
	st, _ := a.Stats("order")
	hwm := st.HighWater
	// Back by 3.5 steps: four fetches overlap what this allocator reserved.
	if _, err := db.Exec("UPDATE leaf_alloc SET max_id = ? WHERE biz_tag = 'order'", hwm-350); err != nil {
		t.Fatal(err)
	}
	// Consume until the allocator has refused at least one segment and has
	// recovered (each refused fetch still advances max_id, so the store
	// eventually passes the high-water mark).
	sawStale := false
	for i := 0; i < 100_000; i++ {
		id, err := a.Next(ctx, "order")
		if err != nil {
			if !errors.As(err, new(*ExhaustedError)) {
				t.Fatalf("unexpected error: %v", err)
			}
			sawStale = sawStale || errors.As(err, new(*StaleSegmentError))
			continue
		}
		served = append(served, id)
		if st, _ := a.Stats("order"); st.Refused > 0 && id > hwm+500 {
			break
		}
	}
	st, _ = a.Stats("order")
	if st.Refused == 0 {
		t.Fatal("no segment refused after max_id moved back")
	}
	t.Logf("refused %d segments (high-water %d); exhausted error seen: %v", st.Refused, hwm, sawStale)
	if !slices.IsSorted(served) {
		t.Fatal("IDs went backwards after max_id moved back")
	}
	checkUnique(t, served)
	if served[len(served)-1] <= hwm {
		t.Fatal("did not recover once the store passed the high-water mark")
	}
}

// TestMySQLFetchUsesTableStepFloor: a table step above MaxStep wins, and
// the allocator learns it from the row on its first fetch.
func TestMySQLFetchUsesTableStepFloor(t *testing.T) {
	ctx := context.Background()
	srv := testdb.Start(t)
	db := openStore(t, srv, "leaf", map[string]int64{"order": 500})
	a := New(NewMySQLStore(db), Options{MaxStep: 100}) // table step above MaxStep wins
	defer a.Close()
	ids, err := a.NextN(ctx, "order", 1200, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkUnique(t, ids)
	st, _ := a.Stats("order")
	if st.Step != 500 || st.TableStep != 500 {
		t.Errorf("step %d table step %d, want 500/500", st.Step, st.TableStep)
	}
}
