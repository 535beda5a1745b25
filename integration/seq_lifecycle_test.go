package integration

import (
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/allocator"
	"github.com/leafproxy/leafproxy/allocator/snowflake"
	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
	"github.com/leafproxy/leafproxy/service"
)

// Issue 20, item 5: a tag's whole lifecycle in SQL, for admin accounts:
// CREATE (segment, or snowflake with a layout), ALTER ... STEP, DROP
// (refused while a table rule uses the tag), the store row saying who
// created the tag and how; snowflake tags created in SQL are served by
// every proxy sharing the store.
func TestSequenceLifecycleSQL(t *testing.T) {
	backend := testdb.Start(t)
	backend.Exec(t, "CREATE DATABASE shop")
	backend.Exec(t, "CREATE TABLE shop.orders (id BIGINT PRIMARY KEY, v INT)")
	cfg := layoutConfig(t, backend)
	cfg.Tables = []config.Table{{Table: "shop.orders", Column: "id", Tag: "order"}}
	a := startLeaf(t, cfg)
	app, ops := a.open(t, "", nil), opsDB(t, a)
	store := backend.Open(t, "leafproxy")
	fails := func(q string, code uint16, says ...string) {
		t.Helper()
		_, err := ops.Exec(q)
		if c, _ := myErr(err); c != code {
			t.Errorf("%s: %v, want error %d", q, err, code)
			return
		}
		for _, s := range says {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: %v, want it to say %q", q, err, s)
			}
		}
	}
	ok := func(q string) {
		t.Helper()
		if _, err := ops.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	next := func(tag string) (int64, error) {
		var v int64
		err := app.QueryRow("SELECT NEXTVAL('" + tag + "')").Scan(&v)
		return v, err
	}

	for _, q := range []string{"ALTER LEAFPROXY SEQUENCE order STEP 10", "DROP LEAFPROXY SEQUENCE order",
		"CREATE LEAFPROXY SEQUENCE x SNOWFLAKE LAYOUT js_safe"} {
		if _, err := app.Exec(q); err == nil || !strings.Contains(err.Error(), "1227") {
			t.Errorf("%s by a non-admin account: %v, want 1227", q, err)
		}
	}

	// A segment tag: created with who and how, its step altered, dropped.
	ok("CREATE LEAFPROXY SEQUENCE inv STEP 50")
	var desc string
	var step int64
	store.QueryRow("SELECT description, step FROM leaf_alloc WHERE biz_tag = 'inv'").Scan(&desc, &step)
	if !regexp.MustCompile(`^created by ops@127\.0\.0\.1 with CREATE LEAFPROXY SEQUENCE at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$`).MatchString(desc) || step != 50 {
		t.Errorf("inv's row: %q, step %d", desc, step)
	}
	if r := seqRow(t, ops, "inv"); r["description"] != desc {
		t.Errorf("SHOW row of inv: %v", r)
	}
	fails("CREATE LEAFPROXY SEQUENCE inv", 1050, "Table 'inv' already exists (leafproxy: a segment sequence")
	ok("CREATE LEAFPROXY SEQUENCE IF NOT EXISTS inv")
	ok("ALTER LEAFPROXY SEQUENCE inv STEP 500")
	if v, err := next("inv"); err != nil || v != 1 {
		t.Fatalf("NEXTVAL('inv'): %d %v", v, err)
	}
	var maxID int64
	store.QueryRow("SELECT max_id, step FROM leaf_alloc WHERE biz_tag = 'inv'").Scan(&maxID, &step)
	if step != 500 || maxID != 501 {
		t.Errorf("after ALTER ... STEP 500 and one NEXTVAL: max_id %d, step %d; want a 500-ID segment", maxID, step)
	}
	fails("ALTER LEAFPROXY SEQUENCE inv STEP 0", 1210, "Incorrect arguments to ALTER LEAFPROXY SEQUENCE: STEP 0")
	fails("ALTER LEAFPROXY SEQUENCE inv STEP 3000000000", 1210)
	fails("ALTER LEAFPROXY SEQUENCE nope STEP 10", 4091, "Unknown SEQUENCE: 'nope'")
	fails("ALTER LEAFPROXY SEQUENCE s STEP 10", 1235, "snowflake")
	fails("ALTER LEAFPROXY SEQUENCE inv", 1064)

	// DROP: refused for a rule's tag, naming the rule; for a configured tag.
	fails("DROP LEAFPROXY SEQUENCE order", 1235, "cannot drop sequence 'order': table rules fill keys from it: tables[0] (shop.orders, column id)")
	fails("DROP LEAFPROXY SEQUENCE web", 1235, "sequences.tags.web")
	if _, err := app.Exec("INSERT INTO shop.orders (v) VALUES (1)"); err != nil {
		t.Errorf("the rule's tag after the refused DROP: %v", err)
	}
	ok("DROP LEAFPROXY SEQUENCE inv")
	if _, err := next("inv"); err == nil || !strings.Contains(err.Error(), "4091") {
		t.Errorf("NEXTVAL of a dropped tag: %v, want 4091", err)
	}
	fails("DROP LEAFPROXY SEQUENCE inv", 4091, "Unknown SEQUENCE: 'inv'")
	ok("DROP LEAFPROXY SEQUENCE IF EXISTS inv")

	// A snowflake tag created in SQL: its layout, served here at once and
	// by another proxy sharing the store that has no configuration for it.
	ok("CREATE LEAFPROXY SEQUENCE js SNOWFLAKE LAYOUT js_safe")
	var jsDesc string
	var wb int
	store.QueryRow("SELECT description, worker_bits FROM leaf_snowflake_layout WHERE name = 'tag:js'").Scan(&jsDesc, &wb)
	if !strings.HasPrefix(jsDesc, "created by ops@127.0.0.1 with CREATE LEAFPROXY SEQUENCE ... SNOWFLAKE at ") || wb != 5 {
		t.Errorf("js's row: %q, worker bits %d", jsDesc, wb)
	}
	jsl := snowflake.JSSafeLayout()
	v, err := next("js")
	if err != nil || v >= 1<<53 || jsl.Decode(v).Worker != 0 {
		t.Fatalf("NEXTVAL('js') here: %d %v", v, err)
	}
	b := startLeafOpts(t, leafConfig(t, backend, nil), nil, service.WithAllocatorOptions(allocator.WithTagSync(50*time.Millisecond)))
	var vb int64
	if err := b.open(t, "", nil).QueryRow("SELECT NEXTVAL('js')").Scan(&vb); err != nil || vb >= 1<<53 || jsl.Decode(vb).Worker != 1 {
		t.Fatalf("NEXTVAL('js') through a proxy without it in its config: %d %v (worker %d); want js_safe worker 1", vb, err, jsl.Decode(vb).Worker)
	}
	if r := seqRow(t, ops, "js"); r["generator"] != "snowflake" || !strings.HasPrefix(r["layout"], "js_safe 41/5/7") || r["description"] != jsDesc || r["worker_id"] != "0" {
		t.Errorf("SHOW row of js: %v", r)
	}
	fails("CREATE LEAFPROXY SEQUENCE js SNOWFLAKE", 1050, "a snowflake sequence")
	fails("CREATE LEAFPROXY SEQUENCE js", 1050)
	fails("CREATE LEAFPROXY SEQUENCE s SNOWFLAKE", 1050, "configuration")
	ok("CREATE LEAFPROXY SEQUENCE IF NOT EXISTS js SNOWFLAKE LAYOUT default")

	// Explicit bits and epoch; bad ones are 1210.
	ok("CREATE LEAFPROXY SEQUENCE wide SNOWFLAKE LAYOUT (40, 8, 14) EPOCH '2024-01-01T00:00:00Z'")
	wide := snowflake.Layout{TimeBits: 40, WorkerBits: 8, SequenceBits: 14, Unit: jsl.Unit, Epoch: mustTime(t, "2024-01-01T00:00:00Z")}
	if v, err := next("wide"); err != nil || wide.Decode(v).Worker != 0 || wide.Decode(v).Time.Year() < 2025 {
		t.Errorf("NEXTVAL('wide'): %d %v %+v", v, err, wide.Decode(v))
	}
	fails("CREATE LEAFPROXY SEQUENCE bad SNOWFLAKE LAYOUT (50, 10, 12)", 1210, "at most 63")
	fails("CREATE LEAFPROXY SEQUENCE bad SNOWFLAKE LAYOUT js", 1210, "LAYOUT js is not js_safe or default")
	fails("CREATE LEAFPROXY SEQUENCE bad SNOWFLAKE EPOCH 'soon'", 1210, "EPOCH 'soon'")
	fails("CREATE LEAFPROXY SEQUENCE bad SNOWFLAKE LAYOUT (41, 5)", 1064)
	if _, err := next("bad"); err == nil || !strings.Contains(err.Error(), "4091") {
		t.Errorf("a refused CREATE made a tag: %v", err)
	}

	// Dropping a snowflake tag created in SQL: this proxy forgets it at
	// once, the other at its next comparison with the store; created again
	// with another layout, both serve the new one.
	ok("DROP LEAFPROXY SEQUENCE js")
	if _, err := next("js"); err == nil || !strings.Contains(err.Error(), "4091") {
		t.Errorf("NEXTVAL of a dropped snowflake tag: %v", err)
	}
	bdb := b.open(t, "", nil)
	testwait.For(t, "proxy b to forget js", func() bool {
		err := bdb.QueryRow("SELECT NEXTVAL('js')").Scan(&vb)
		return err != nil && strings.Contains(err.Error(), "4091")
	})
	ok("CREATE LEAFPROXY SEQUENCE js SNOWFLAKE LAYOUT default")
	def := snowflake.DefaultLayout()
	testwait.For(t, "proxy b to learn js again", func() bool { return bdb.QueryRow("SELECT NEXTVAL('js')").Scan(&vb) == nil })
	if vb < 1<<53 || def.Decode(vb).Time.Year() < 2025 {
		t.Errorf("js created again as default, through proxy b: %d", vb)
	}
	ok("DROP LEAFPROXY SEQUENCE js")

	// The same through the mariadb CLI.
	out := cliQuery(t, a.addr, "ops", "opspw",
		"CREATE LEAFPROXY SEQUENCE cli SNOWFLAKE LAYOUT js_safe; SELECT NEXTVAL('cli'); ALTER LEAFPROXY SEQUENCE order STEP 20; DROP LEAFPROXY SEQUENCE cli")
	if id, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64); err != nil || id >= 1<<53 || jsl.Decode(id).Worker != 0 {
		t.Errorf("CLI: %q", out)
	}
	store.QueryRow("SELECT step FROM leaf_alloc WHERE biz_tag = 'order'").Scan(&step)
	if step != 20 {
		t.Errorf("order's step after the CLI's ALTER: %d", step)
	}
	host, port, _ := net.SplitHostPort(a.addr)
	cmd := exec.Command("mariadb", "--no-defaults", "-h"+host, "-P"+port, "-uops", "-popspw", "-e", "DROP LEAFPROXY SEQUENCE order")
	o, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(o), "ERROR 1235 (42000)") || !strings.Contains(string(o), "tables[0] (shop.orders, column id)") {
		t.Errorf("CLI DROP of a rule's tag: %v\n%s", err, o)
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
