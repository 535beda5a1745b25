package segment

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/allocator/schema"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

// runOutCode is err's MySQL code when it is a 4084, else 0.
func runOutCode(err error) uint16 {
	var pe *PastEndError
	if errors.As(err, &pe) && pe.RunOut {
		return pe.Code()
	}
	return 0
}

// TestMySQLMaxValue: two allocators with connection pools of their own
// (two proxies) share a tag with MAXVALUE 25 and step 10: together they
// hand out exactly 1..25, then both answer 4084 with MariaDB's text, and
// a block is refused; a raised MAXVALUE serves again (here at once, on
// the other within UnknownTTL); one below what was handed out is 4085.
func TestMySQLMaxValue(t *testing.T) {
	ctx := context.Background()
	srv := testdb.Start(t)
	db := openStore(t, srv, "leaf", nil)
	s := NewMySQLStore(db)
	if err := s.CreateBounded(ctx, "mx", 10, 30, 25, "test"); err == nil || !errors.As(err, new(*OptionsError)) {
		t.Fatalf("START 30 above MAXVALUE 25: %v, want 4085", err)
	}
	if err := s.CreateBounded(ctx, "mx", 10, 1, 25, "test"); err != nil {
		t.Fatal(err)
	}
	opts := Options{UnknownTTL: 20 * time.Millisecond, MaxStep: 10}
	a := New(NewMySQLStore(db), opts)
	defer a.Close()
	b := New(NewMySQLStore(srv.Open(t, "leaf")), opts)
	defer b.Close()

	var (
		mu  sync.Mutex
		ids []int64
		wg  sync.WaitGroup
	)
	for _, al := range []*Allocator{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				id, err := al.Next(ctx, "mx")
				if err != nil {
					if runOutCode(err) != ErrCodeRunOut {
						t.Errorf("Next: %v, want 4084", err)
					}
					return
				}
				mu.Lock()
				ids = append(ids, id)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	slices.Sort(ids)
	if len(ids) > 25 || (len(ids) > 0 && ids[len(ids)-1] > 25) {
		t.Fatalf("IDs past MAXVALUE 25: %d IDs, the last %d", len(ids), ids[len(ids)-1])
	}
	checkUnique(t, ids)
	_, err := a.Next(ctx, "mx")
	if want := "Sequence 'mx' has run out (leafproxy: "; err == nil || len(err.Error()) < len(want) || err.Error()[:len(want)] != want {
		t.Fatalf("after MAXVALUE: %v, want %q...", err, want)
	}
	if _, err := b.Block(ctx, "mx", 3); runOutCode(err) != ErrCodeRunOut {
		t.Fatalf("Block past MAXVALUE: %v, want 4084", err)
	}

	if err := a.SetMaxValue(ctx, "mx", 5); !errors.As(err, new(*OptionsError)) {
		t.Fatalf("MAXVALUE 5 below IDs handed out: %v, want 4085", err)
	}
	if err := a.SetMaxValue(ctx, "nope", 50); !errors.As(err, new(*UnknownTagError)) {
		t.Fatalf("unknown tag: %v", err)
	}
	maxID, err := a.MaxID(ctx, "mx")
	if err != nil {
		t.Fatal(err)
	}
	top := maxID + 99 // room for both proxies (segments of 10)
	if err := a.SetMaxValue(ctx, "mx", top); err != nil {
		t.Fatal(err)
	}
	id, err := a.Next(ctx, "mx")
	if err != nil || id < maxID || id > top {
		t.Fatalf("after raising MAXVALUE to %d: %d %v", top, id, err)
	}
	// The other proxy asks the store again once UnknownTTL has passed.
	testwait.For(t, "the other proxy to see the raised MAXVALUE", func() bool {
		id, err := b.Next(ctx, "mx")
		if err == nil && (id <= 25 || id > top) || err != nil && runOutCode(err) != ErrCodeRunOut {
			t.Fatalf("other proxy after the raise: %d %v", id, err)
		}
		return err == nil
	})
	for _, al := range []*Allocator{a, b} {
		for {
			id, err := al.Next(ctx, "mx")
			if err != nil {
				if runOutCode(err) != ErrCodeRunOut {
					t.Fatal(err)
				}
				break
			}
			if id > top {
				t.Fatalf("ID %d past MAXVALUE %d", id, top)
			}
		}
	}
	if err := a.SetMaxValue(ctx, "mx", 0); err != nil { // NOMAXVALUE
		t.Fatal(err)
	}
	if _, err := a.Next(ctx, "mx"); err != nil {
		t.Fatalf("after NOMAXVALUE: %v", err)
	}
}

// TestMigrateMaxValue: Leaf's own leaf_alloc gets max_value in place,
// rows kept, once; before that, fetches work without it.
func TestMigrateMaxValue(t *testing.T) {
	ctx := context.Background()
	srv := testdb.Start(t)
	srv.Exec(t, "CREATE DATABASE old",
		"CREATE TABLE old.leaf_alloc (biz_tag varchar(128) NOT NULL DEFAULT '', max_id bigint(20) NOT NULL DEFAULT '1', "+
			"step int(11) NOT NULL, description varchar(256) DEFAULT NULL, update_time timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP, "+
			"PRIMARY KEY (biz_tag)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
		"INSERT INTO old.leaf_alloc (biz_tag, max_id, step) VALUES ('leaf', 501, 100)")
	db := srv.Open(t, "old")
	// A Leaf client's fetch works before the migration, and after it.
	leafFetch := func() {
		t.Helper()
		if _, err := db.ExecContext(ctx, "UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = 'leaf'"); err != nil {
			t.Fatal(err)
		}
	}
	leafFetch()
	// Before the migration (an account that cannot ALTER it), the proxy
	// fetches with Leaf's statements.
	if r, err := NewMySQLStore(db).Fetch(ctx, "leaf", 0, 0); err != nil || r.Start != 601 || r.End != 701 || r.MaxValue != 0 {
		t.Fatalf("fetch before the migration: %+v %v", r, err)
	}
	conv, err := schema.Migrate(ctx, db)
	if err != nil || !slices.Contains(conv, "leaf_alloc (max_value column)") {
		t.Fatalf("migrate: %v %v", conv, err)
	}
	if conv, err := schema.Migrate(ctx, db); err != nil || len(conv) != 0 {
		t.Fatalf("migrate again: %v %v", conv, err)
	}
	leafFetch()
	r, err := NewMySQLStore(db).Fetch(ctx, "leaf", 0, 0)
	if err != nil || r.Start != 801 || r.MaxValue != 0 {
		t.Fatalf("fetch after the migration: %+v %v", r, err)
	}
}
