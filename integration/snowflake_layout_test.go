package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/allocator/schema"
	"github.com/leafproxy/leafproxy/allocator/snowflake"
	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

// Issue 19, item 8: a proxy configured with a 41/5/7 layout joined a store
// whose other proxies used 41/10/12, took a worker id and served IDs that
// can collide with theirs. The layout is now recorded in the store
// (leaf_snowflake_layout) and a proxy with another one does not issue.

// jsSafe sets cfg's snowflake layout to 41/5/7.
func jsSafe(cfg *config.Config) *config.Config {
	cfg.Snowflake.TimeBits, cfg.Snowflake.WorkerBits, cfg.Snowflake.SequenceBits = 41, 5, 7
	return cfg
}

// TestSnowflakeLayoutMismatchRefused: two proxies with the same layout
// both start; a third with 41/5/7 is refused at start, naming both
// layouts, who recorded the store's and the live holders of worker ids,
// and takes no worker id; the others keep issuing.
func TestSnowflakeLayoutMismatchRefused(t *testing.T) {
	t.Parallel()
	backend := testdb.Start(t)
	a := startLeaf(t, snowConfig(t, backend, nil, "auto"))
	b := startLeaf(t, snowConfig(t, backend, nil, "auto"))
	if wa, wb := a.svc.Sequences.Snowflake().Worker(), b.svc.Sequences.Snowflake().Worker(); wa != 0 || wb != 1 {
		t.Fatalf("workers %d %d", wa, wb)
	}
	host, _ := os.Hostname()
	me := fmt.Sprintf("%s:%d:127.0.0.1:0", host, os.Getpid())
	for _, worker := range []string{"auto", "7"} {
		_, err := newLeaf(t, jsSafe(snowConfig(t, backend, nil, worker)))
		if !errors.Is(err, snowflake.ErrLayoutMismatch) {
			t.Fatalf("worker_id %s, 41/5/7 against 41/10/12: %v", worker, err)
		}
		for _, want := range []string{
			"snowflake layout 41/5/7 x 1ms, epoch 2020-01-01T00:00:00Z (this proxy's snowflake config) differs from 41/10/12 x 1ms, epoch 2020-01-01T00:00:00Z",
			"by " + me + " at ",
			`worker ids held now: 0 by "` + me + `" until `, `1 by "` + me + `" until `,
			"set snowflake.time_bits, worker_bits, sequence_bits, time_unit and epoch to the recorded layout",
		} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("refusal does not say %q:\n%v", want, err)
			}
		}
		t.Logf("refused: %v", err)
	}
	db := backend.Open(t, "leafproxy")
	var n int
	db.QueryRow("SELECT COUNT(*) FROM leaf_worker").Scan(&n)
	if n != 2 {
		t.Errorf("%d leaf_worker rows, want the 2 of the proxies that run", n)
	}
	var id int64
	if err := a.open(t, "", nil).QueryRow("SELECT NEXTVAL('s')").Scan(&id); err != nil {
		t.Fatal(err)
	}
	if w := snowflake.DefaultLayout().Decode(id).Worker; w != 0 {
		t.Errorf("id %d decodes to worker %d", id, w)
	}
}

// TestSnowflakeLayoutUpgrade: a store used by leafproxy before layouts
// were recorded (leaf_alloc and leaf_worker with rows, no layout table)
// gets the running configuration's layout; a proxy with another layout is
// refused from then on.
func TestSnowflakeLayoutUpgrade(t *testing.T) {
	t.Parallel()
	backend := testdb.Start(t)
	old := backend.Open(t, "leafproxy")
	for _, q := range []string{schema.LeafAlloc, schema.LeafWorker,
		"INSERT INTO leaf_worker (worker_id, owner, heartbeat, last_timestamp) VALUES (0, '', 0, 1700000000000), (1, '', 0, 1700000000000)"} {
		if _, err := old.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	a := startLeaf(t, jsSafe(snowConfig(t, backend, nil, "auto")))
	var tb, wb, sb int
	var by string
	if err := old.QueryRow("SELECT time_bits, worker_bits, sequence_bits, recorded_by FROM leaf_snowflake_layout WHERE name = 'default'").
		Scan(&tb, &wb, &sb, &by); err != nil {
		t.Fatal(err)
	}
	if tb != 41 || wb != 5 || sb != 7 || !strings.Contains(by, fmt.Sprintf(":%d:", os.Getpid())) {
		t.Fatalf("recorded %d/%d/%d by %s", tb, wb, sb, by)
	}
	var id int64
	if err := a.open(t, "", nil).QueryRow("SELECT NEXTVAL('s')").Scan(&id); err != nil {
		t.Fatal(err)
	}
	if _, err := newLeaf(t, snowConfig(t, backend, nil, "auto")); !errors.Is(err, snowflake.ErrLayoutMismatch) ||
		!strings.Contains(err.Error(), "41/10/12 x 1ms, epoch 2020-01-01T00:00:00Z (this proxy's snowflake config) differs from 41/5/7") {
		t.Fatalf("41/10/12 after the upgrade recorded 41/5/7: %v", err)
	}
}

// TestSnowflakeLayoutMismatchAfterStoreDown: a proxy that starts while the
// store is down checks the layout when it reaches the store, before it
// takes a worker id. With a mismatch it issues no snowflake ID: NEXTVAL
// answers 1105 naming both layouts and the holder, /healthz says why, no
// worker id is taken; relay and segment tags go on.
func TestSnowflakeLayoutMismatchAfterStoreDown(t *testing.T) {
	t.Parallel()
	backend := testdb.Start(t)
	store := testdb.Start(t)
	cfg := jsSafe(snowConfig(t, backend, store, "auto")) // creates leafstore
	sdb := store.Open(t, "leafstore")
	if err := schema.Ensure(context.Background(), sdb); err != nil {
		t.Fatal(err)
	}
	const other = "db-7:4242:0.0.0.0:3307"
	for _, q := range []string{
		"INSERT INTO leaf_snowflake_layout (name, epoch_ms, time_bits, worker_bits, sequence_bits, unit_ns, recorded_by, recorded_at) VALUES ('default', 1577836800000, 41, 10, 12, 1000000, '" + other + "', UTC_TIMESTAMP(3))",
		"INSERT INTO leaf_worker VALUES (0, '" + other + "#1f2e', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000, 0)",
	} {
		if _, err := sdb.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	store.Stop(t)
	cfg.Backend.ConnectTimeout = config.Duration(time.Second)
	cfg.Snowflake.LeaseTTL = config.Duration(time.Minute) // the seeded holder stays live
	lf, err := newLeaf(t, cfg)
	if err != nil {
		t.Fatalf("did not start with the store down: %v", err)
	}
	db := lf.open(t, "", nil)
	var v int64
	if err := db.QueryRow("SELECT NEXTVAL('s')").Scan(&v); err == nil || !strings.Contains(err.Error(), "fenced") {
		t.Fatalf("NEXTVAL('s') with the store down: %v", err)
	}

	store.Restart(t)
	testwait.For(t, "the layout mismatch after the store came back", func() bool {
		_, err := lf.svc.Sequences.SnowflakePending()
		return errors.Is(err, snowflake.ErrLayoutMismatch)
	}, testwait.Detail(func() string { _, err := lf.svc.Sequences.SnowflakePending(); return fmt.Sprint(err) }))
	err = db.QueryRow("SELECT NEXTVAL('s')").Scan(&v)
	if code, state := myErr(err); code != 1105 || state != "HY000" {
		t.Fatalf("NEXTVAL('s') under a mismatched layout: %v (id %d)", err, v)
	}
	for _, want := range []string{"snowflake sequence 's'", "41/5/7 x 1ms", "41/10/12 x 1ms", "by " + other + " at ",
		`0 by "` + other + `"`, "restarted"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("NEXTVAL error does not say %q:\n%v", want, err)
		}
	}
	t.Logf("NEXTVAL('s'): %v", err)
	if lf.svc.Sequences.Snowflake() != nil {
		t.Fatal("a generator was started under a mismatched layout")
	}
	var n int
	sdb.QueryRow("SELECT COUNT(*) FROM leaf_worker").Scan(&n)
	if n != 1 {
		t.Errorf("%d leaf_worker rows: the proxy took a worker id", n)
	}
	if h := lf.svc.Health(context.Background()); h.OK || !strings.HasPrefix(h.Reason, "snowflake: snowflake layout 41/5/7") {
		t.Errorf("health under a mismatched layout: %+v", h)
	}
	if err := db.QueryRow("SELECT NEXTVAL('t')").Scan(&v); err != nil {
		t.Errorf("segment tag: %v", err)
	}
}
