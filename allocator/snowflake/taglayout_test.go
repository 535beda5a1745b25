package snowflake

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/allocator/schema"
)

// TestNamedLayouts: js_safe keeps every ID below 2^53 until its time bits
// end; the names come back from the bits.
func TestNamedLayouts(t *testing.T) {
	js, ok := NamedLayout(LayoutNameJSSafe, DefaultEpoch)
	if !ok || !SameLayout(js, JSSafeLayout()) || js.Name() != "js_safe" || js.MaxID() != 1<<53-1 {
		t.Fatalf("js_safe: %v %v %s max %d", js, ok, js.Name(), js.MaxID())
	}
	if d, _ := NamedLayout(LayoutNameDefault, DefaultEpoch); d.Name() != "default" || d.MaxID() != 1<<63-1 {
		t.Fatalf("default: %s max %d", d.Name(), d.MaxID())
	}
	if _, ok := NamedLayout("js", DefaultEpoch); ok {
		t.Fatal("unknown name accepted")
	}
	custom := Layout{TimeBits: 42, WorkerBits: 8, SequenceBits: 13, Unit: time.Millisecond, Epoch: DefaultEpoch}
	if custom.Name() != "custom" || LayoutKey(custom) != "42/8/13/1000000/1577836800000" {
		t.Fatalf("custom: %s %s", custom.Name(), LayoutKey(custom))
	}
	// Same bits, another epoch: another layout, another key.
	later := js
	later.Epoch = DefaultEpoch.Add(time.Hour)
	if LayoutKey(later) == LayoutKey(js) || later.Name() != "js_safe" {
		t.Fatalf("epoch not in the key: %s", LayoutKey(later))
	}
}

// TestTagLayoutRows: a tag's layout is recorded in its
// own row; a process giving the tag another layout is refused, naming the
// tag, both layouts, who recorded the row, and the live holders of the
// recorded layout's worker ids (in that layout's own lease space).
func TestTagLayoutRows(t *testing.T) {
	db := store(t, "sf_tag_layout", 1)[0]
	ctx := context.Background()
	a := NewMySQLLeaser(db, "host-a:1:0.0.0.0:3307", 10*time.Second)
	chk, err := a.CheckTagLayout(ctx, "web", JSSafeLayout(), "from the configuration: sequences.tags.web", "this proxy's sequences.tags.web", DefaultLayout())
	if err != nil || !chk.Recorded {
		t.Fatalf("first record: %+v %v", chk, err)
	}
	// A tag named like the global row is a row of its own.
	if _, err := a.CheckTagLayout(ctx, "default", JSSafeLayout(), "d", "s", DefaultLayout()); err != nil {
		t.Fatalf("tag 'default': %v", err)
	}
	if _, err := a.CheckLayout(ctx, DefaultLayout()); err != nil {
		t.Fatalf("global row beside a tag named default: %v", err)
	}
	// A holder of a js_safe worker id, in js_safe's space.
	g := newGen(t, Options{Layout: JSSafeLayout(), Worker: a.LeaserOf(JSSafeLayout(), DefaultLayout())})
	if g.Worker() != 0 {
		t.Fatalf("js_safe worker %d", g.Worker())
	}

	b := NewMySQLLeaser(db, "host-b:2:0.0.0.0:3307", 10*time.Second)
	if chk, err := b.CheckTagLayout(ctx, "web", JSSafeLayout(), "x", "y", DefaultLayout()); err != nil || chk.Recorded {
		t.Fatalf("same layout again: %+v %v", chk, err)
	}
	_, err = b.CheckTagLayout(ctx, "web", DefaultLayout(), "x", "this proxy's snowflake section, which sequences.tags.web uses", DefaultLayout())
	var me *LayoutMismatchError
	if !errors.As(err, &me) || me.Tag != "web" {
		t.Fatalf("another layout for web: %v", err)
	}
	for _, want := range []string{
		"tag 'web': snowflake layout 41/10/12 x 1ms, epoch 2020-01-01T00:00:00Z (this proxy's snowflake section, which sequences.tags.web uses)",
		"differs from 41/5/7 x 1ms, epoch 2020-01-01T00:00:00Z recorded in the store (leaf_snowflake_layout 'tag:web', by host-a:1:0.0.0.0:3307 at ",
		`worker ids held now: 0 by "host-a:1:0.0.0.0:3307" until `,
		"give tag 'web' the recorded layout in sequences.tags.web",
		"DELETE FROM leaf_snowflake_layout WHERE name = 'tag:web'",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal does not say %q:\n%v", want, err)
		}
	}

	recs, err := b.TagLayouts(ctx)
	if err != nil || len(recs) != 2 || !SameLayout(recs["web"].Layout, JSSafeLayout()) ||
		recs["web"].Description != "from the configuration: sequences.tags.web" || recs["web"].RecordedBy != "host-a:1:0.0.0.0:3307" {
		t.Fatalf("tag rows: %+v %v", recs, err)
	}
	if found, err := b.DeleteTagLayout(ctx, "default"); !found || err != nil {
		t.Fatalf("delete: %v %v", found, err)
	}
	if _, ok, err := b.TagLayout(ctx, "default"); ok || err != nil {
		t.Fatalf("deleted row still read: %v %v", ok, err)
	}
	if _, ok, _ := b.readLayout(ctx, DefaultLayoutName, false); !ok {
		t.Fatal("deleting tag 'default' deleted the global row")
	}
}

// TestLeaseSpacesPerLayout: worker ids of the global layout (leaf_worker)
// and of another layout (leaf_worker_layout) are separate spaces, each
// unique: two processes of one layout never share an id, whatever the
// other layout's leases are; a fixed id is registered per layout.
func TestLeaseSpacesPerLayout(t *testing.T) {
	db := store(t, "sf_lease_spaces", 1)[0]
	def, js := DefaultLayout(), JSSafeLayout()
	p1 := NewMySQLLeaser(db, "p1", 10*time.Second)
	p2 := NewMySQLLeaser(db, "p2", 10*time.Second)
	g1d := newGen(t, Options{Layout: def, Worker: p1.LeaserOf(def, def)})
	g1j := newGen(t, Options{Layout: js, Worker: p1.LeaserOf(js, def)})
	g2j := newGen(t, Options{Layout: js, Worker: p2.LeaserOf(js, def)})
	if g1d.Worker() != 0 || g1j.Worker() != 0 || g2j.Worker() != 1 {
		t.Fatalf("workers: default %d, js_safe %d and %d", g1d.Worker(), g1j.Worker(), g2j.Worker())
	}
	var n int
	db.QueryRow("SELECT COUNT(*) FROM leaf_worker_layout WHERE layout = ?", LayoutKey(js)).Scan(&n)
	if n != 2 {
		t.Fatalf("%d js_safe lease rows", n)
	}
	// A fixed id held in js_safe's space is refused there, not in the global one.
	_, err := New(context.Background(), Options{Layout: js, Worker: p2.LeaserOf(js, def).Fixed(0)})
	if !errors.Is(err, ErrWorkerHeld) || !strings.Contains(err.Error(), "leaf_worker_layout (layout 41/5/7/1000000/1577836800000)") {
		t.Fatalf("fixed 0 in js_safe's space: %v", err)
	}
	g2d := newGen(t, Options{Layout: def, Worker: p2.LeaserOf(def, def).Fixed(5)})
	if g2d.Worker() != 5 {
		t.Fatalf("fixed 5 in the global space: %d", g2d.Worker())
	}
	// A js_safe leaser does not check the global row (the tags' rows are
	// checked instead): its layout is not the global one.
	if _, err := p1.LeaserOf(js, def).CheckLayout(context.Background(), js); err != nil {
		t.Fatalf("scoped CheckLayout: %v", err)
	}
	// Released on close, renewals kept to the own space.
	g1j.Close()
	var owner string
	db.QueryRow("SELECT owner FROM leaf_worker_layout WHERE layout = ? AND worker_id = 0", LayoutKey(js)).Scan(&owner)
	if owner != "" {
		t.Fatalf("js_safe worker 0 not released: %q", owner)
	}
	db.QueryRow("SELECT owner FROM leaf_worker WHERE worker_id = 0").Scan(&owner)
	if !strings.HasPrefix(owner, "p1#") {
		t.Fatalf("global worker 0 now %q", owner)
	}
}

// TestLayoutTableMigrated: a leaf_snowflake_layout of the first release
// (name varchar(128), no description) gets the wider name and the
// description, keeping its rows; the global row is read and written as
// before without them.
func TestLayoutTableMigrated(t *testing.T) {
	db := store(t, "sf_layout_migrate", 1)[0]
	ctx := context.Background()
	for _, q := range []string{
		"DROP TABLE leaf_snowflake_layout",
		"CREATE TABLE leaf_snowflake_layout (name varchar(128) NOT NULL, epoch_ms bigint NOT NULL, time_bits int NOT NULL, " +
			"worker_bits int NOT NULL, sequence_bits int NOT NULL, unit_ns bigint NOT NULL, recorded_by varchar(255) NOT NULL, " +
			"recorded_at datetime(3) NOT NULL, PRIMARY KEY (name)) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	old := NewMySQLLeaser(db, "old", time.Second)
	if _, err := old.CheckLayout(ctx, DefaultLayout()); err != nil {
		t.Fatalf("global row in the old table: %v", err)
	}
	if recs, err := old.TagLayouts(ctx); err != nil || len(recs) != 0 {
		t.Fatalf("tag rows of the old table: %v %v", recs, err)
	}
	// A store whose account cannot migrate it still records tags' layouts
	// (without a description) and reads them back.
	if chk, err := old.CheckTagLayout(ctx, "early", JSSafeLayout(), "made before the migration", "s", DefaultLayout()); err != nil || !chk.Recorded {
		t.Fatalf("tag row in the old table: %+v %v", chk, err)
	}
	if _, err := old.CheckTagLayout(ctx, "early", DefaultLayout(), "x", "s", DefaultLayout()); !errors.Is(err, ErrLayoutMismatch) {
		t.Fatalf("another layout for the tag in the old table: %v", err)
	}
	if recs, err := old.TagLayouts(ctx); err != nil || len(recs) != 1 || !SameLayout(recs["early"].Layout, JSSafeLayout()) {
		t.Fatalf("tag rows of the old table: %v %v", recs, err)
	}
	converted, err := schema.Migrate(ctx, db)
	if err != nil || len(converted) != 1 {
		t.Fatalf("migrate: %v %v", converted, err)
	}
	if converted, err := schema.Migrate(ctx, db); err != nil || len(converted) != 0 {
		t.Fatalf("migrate again: %v %v", converted, err)
	}
	long := strings.Repeat("标", schema.MaxTagChars)
	if _, err := old.CheckTagLayout(ctx, long, JSSafeLayout(), "made by a test", "s", DefaultLayout()); err != nil {
		t.Fatalf("longest tag after the migration: %v", err)
	}
	if rec, ok, err := old.TagLayout(ctx, long); !ok || err != nil || rec.Description != "made by a test" {
		t.Fatalf("read back: %+v %v %v", rec, ok, err)
	}
	if _, err := old.CheckLayout(ctx, DefaultLayout()); err != nil {
		t.Fatalf("global row after the migration: %v", err)
	}
}
