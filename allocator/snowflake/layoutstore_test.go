package snowflake

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/allocator/schema"
)

// TestLayoutRecordedThenChecked: a process with a
// 41/5/7 layout used to take a worker id and issue from a store whose
// other processes used 41/10/12. The first generator now records its
// layout in leaf_snowflake_layout, a second with the same layout starts,
// and one with another layout is refused before it takes a worker id,
// naming both layouts, who recorded the store's and the live holders.
func TestLayoutRecordedThenChecked(t *testing.T) {
	db := store(t, "sf_layout", 1)[0]
	ctx := context.Background()
	def := DefaultLayout()
	a := newGen(t, Options{Layout: def, Worker: NewMySQLLeaser(db, "host-a:11:0.0.0.0:3307", 10*time.Second)})
	b := newGen(t, Options{Layout: def, Worker: NewMySQLLeaser(db, "host-b:22:0.0.0.0:3307", 10*time.Second).Fixed(9)})
	if a.Worker() != 0 || b.Worker() != 9 {
		t.Fatalf("workers %d, %d", a.Worker(), b.Worker())
	}
	var by string
	var epoch, unit int64
	var tb, wb, sb int
	if err := db.QueryRow("SELECT recorded_by, epoch_ms, time_bits, worker_bits, sequence_bits, unit_ns FROM leaf_snowflake_layout WHERE name = 'default'").
		Scan(&by, &epoch, &tb, &wb, &sb, &unit); err != nil {
		t.Fatal(err)
	}
	if by != "host-a:11:0.0.0.0:3307" || epoch != DefaultEpoch.UnixMilli() || tb != 41 || wb != 10 || sb != 12 || unit != int64(time.Millisecond) {
		t.Fatalf("recorded %s %d %d/%d/%d %d", by, epoch, tb, wb, sb, unit)
	}

	for _, worker := range []WorkerSource{
		NewMySQLLeaser(db, "host-c:33:0.0.0.0:3307", 10*time.Second),
		NewMySQLLeaser(db, "host-c:33:0.0.0.0:3307", 10*time.Second).Fixed(3),
	} {
		_, err := New(ctx, Options{Layout: JSSafeLayout(), Worker: worker})
		var me *LayoutMismatchError
		if !errors.As(err, &me) || !errors.Is(err, ErrLayoutMismatch) {
			t.Fatalf("41/5/7 against a store with 41/10/12: %v", err)
		}
		msg := err.Error()
		for _, want := range []string{
			"41/5/7 x 1ms, epoch 2020-01-01T00:00:00Z (this proxy's snowflake config)",
			"41/10/12 x 1ms, epoch 2020-01-01T00:00:00Z recorded in the store (leaf_snowflake_layout 'default', by host-a:11:0.0.0.0:3307 at ",
			": worker_bits 5 vs 10, sequence_bits 7 vs 12; ",
			`0 by "host-a:11:0.0.0.0:3307" until `, `9 by "host-b:22:0.0.0.0:3307" until `,
			"DELETE FROM leaf_snowflake_layout WHERE name = 'default'",
		} {
			if !strings.Contains(msg, want) {
				t.Errorf("refusal does not say %q:\n%s", want, msg)
			}
		}
	}
	t.Logf("refusal: %v", func() error {
		_, err := New(ctx, Options{Layout: JSSafeLayout(), Worker: NewMySQLLeaser(db, "c", time.Second)})
		return err
	}())
	var n int
	db.QueryRow("SELECT COUNT(*) FROM leaf_worker WHERE owner LIKE 'host-c%' OR worker_id = 3").Scan(&n)
	if n != 0 {
		t.Errorf("a refused generator took a worker id (%d rows)", n)
	}
	// Another epoch or unit alone is a mismatch too.
	for _, l := range []Layout{
		{TimeBits: 41, WorkerBits: 10, SequenceBits: 12, Unit: time.Millisecond, Epoch: DefaultEpoch.Add(24 * time.Hour)},
		{TimeBits: 41, WorkerBits: 10, SequenceBits: 12, Unit: 10 * time.Millisecond, Epoch: DefaultEpoch},
	} {
		if _, err := New(ctx, Options{Layout: l, Worker: NewMySQLLeaser(db, "d", time.Second)}); !errors.Is(err, ErrLayoutMismatch) {
			t.Errorf("%s: %v", l, err)
		}
	}
	// With no live holder, the refusal says so.
	a.Close()
	b.Close()
	if _, err := New(ctx, Options{Layout: JSSafeLayout(), Worker: NewMySQLLeaser(db, "e", time.Second)}); err == nil ||
		!strings.Contains(err.Error(), "no worker id is held now") {
		t.Errorf("no holders: %v", err)
	}
}

// TestLayoutRecordedOnUpgrade: a store used before layouts were recorded
// (leaf_worker rows, no layout row) gets the running configuration's
// layout, and CheckLayout says how many rows were there already.
func TestLayoutRecordedOnUpgrade(t *testing.T) {
	db := store(t, "sf_layout_upgrade", 1)[0]
	if _, err := db.Exec("INSERT INTO leaf_worker (worker_id, owner, heartbeat, last_timestamp) VALUES (0, '', 0, 1700000000000), (40, '', 0, 1700000000000)"); err != nil {
		t.Fatal(err)
	}
	l := NewMySQLLeaser(db, "up:1:x", time.Second)
	chk, err := l.CheckLayout(context.Background(), JSSafeLayout())
	if err != nil {
		t.Fatal(err)
	}
	if !chk.Recorded || chk.PriorWorkers != 2 || chk.MaxPriorWorker != 40 || !SameLayout(chk.Record.Layout, JSSafeLayout()) || chk.Record.RecordedBy != "up:1:x" {
		t.Fatalf("upgrade check: %+v", chk)
	}
	chk, err = l.CheckLayout(context.Background(), JSSafeLayout())
	if err != nil || chk.Recorded || chk.PriorWorkers != 0 {
		t.Fatalf("second check: %+v %v", chk, err)
	}
	if _, err := l.CheckLayout(context.Background(), DefaultLayout()); !errors.Is(err, ErrLayoutMismatch) {
		t.Fatalf("other layout after the upgrade: %v", err)
	}
}

// TestLayoutFirstRecordersRace: processes with two layouts starting at
// once on an empty store: one layout wins, every process with it passes,
// every other is refused.
func TestLayoutFirstRecordersRace(t *testing.T) {
	dbs := store(t, "sf_layout_race", 4)
	layouts := []Layout{DefaultLayout(), JSSafeLayout()}
	var mu sync.Mutex
	passed := map[int]int{}
	refused := map[int]int{}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			l := NewMySQLLeaser(dbs[i%len(dbs)], "p", time.Second)
			_, err := l.CheckLayout(context.Background(), layouts[i%2])
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				passed[i%2]++
			case errors.Is(err, ErrLayoutMismatch):
				refused[i%2]++
			default:
				t.Errorf("check %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if !(passed[0] == 4 && refused[1] == 4 || passed[1] == 4 && refused[0] == 4) {
		t.Fatalf("passed %v refused %v", passed, refused)
	}
}

// TestLayoutTableMissingIsTransient: a store without the table (an old
// schema, no CREATE privilege) is not an answer about the layout: the
// caller retries, and nothing is leased meanwhile.
func TestLayoutTableMissingIsTransient(t *testing.T) {
	db := store(t, "sf_layout_missing", 1)[0]
	if _, err := db.Exec("DROP TABLE leaf_snowflake_layout"); err != nil {
		t.Fatal(err)
	}
	_, err := New(context.Background(), Options{Worker: NewMySQLLeaser(db, "m", time.Second)})
	if !errors.Is(err, ErrStoreUnavailable) || !strings.Contains(err.Error(), "leafproxy init") {
		t.Fatalf("missing table: %v", err)
	}
	var n int
	db.QueryRow("SELECT COUNT(*) FROM leaf_worker").Scan(&n)
	if n != 0 {
		t.Fatalf("%d worker ids taken without a layout check", n)
	}
	if err := schema.Create(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	newGen(t, Options{Worker: NewMySQLLeaser(db, "m", time.Second)})
}
