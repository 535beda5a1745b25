package integration

import (
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"

	gormmysql "gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
)

// GORM through the proxy. GORM treats a primary key named ID as
// auto-increment: it leaves a zero ID out of the INSERT (so the proxy fills
// it) and reads the key back in one of two ways, depending on the driver
// configuration:
//
//   - RETURNING (gorm.io/driver/mysql's default when the server says
//     MariaDB >= 10.5, as the backend behind the proxy does, since SELECT
//     VERSION() is relayed): GORM sends `INSERT ... RETURNING id` and reads
//     each model's ID from its row of the result. The proxy fills the keys
//     before RETURNING and the server returns the stored keys, so every
//     model gets its own stored key, for any tag and any batch size
//     (TestKeyfillGormReturning, including a snowflake batch that crosses
//     millisecond ticks).
//   - LastInsertId (DisableWithReturning, SkipInitializeWithVersion, or a
//     MySQL backend): GORM sets the model's ID from Result.LastInsertId()
//     and, for a slice sent as one multi-row INSERT, assigns
//     LastInsertId()+i to the i-th model, which is right only when the
//     statement's keys are consecutive (see below).
//
// Consecutive keys in one statement, which only LastInsertId needs
// (issue 38 item 2; README "How generated keys come back"):
//
//   - segment: one statement's IDs are one run (NextN), always, also
//     through several proxies sharing a store (a run that does not fit
//     what is left of the buffered segment takes one contiguous range).
//     TestKeyfillGorm asserts it for one proxy, TestKeyfillGormFleet for
//     CreateInBatches through two proxies on one store with step 10.
//   - snowflake: up to one tick's sequence space (4,096 with the default
//     layout) a statement's IDs are one run in one tick; a larger batch
//     is one run per tick, and GORM assigns IDs that are NOT the stored
//     keys past the first 4,096. TestKeyfillGormSnowflakeBatchLimit
//     asserts both. Keep snowflake batches at or below 4,096
//     (CreateInBatches) or, on MariaDB, RETURNING on (the default).

type gormOrder struct {
	ID  int64  `gorm:"primaryKey;autoIncrement"`
	SKU string `gorm:"column:sku"`
	Qty int
}

func (gormOrder) TableName() string { return "orders" }

type gormMessage struct {
	ID   uint64 `gorm:"primaryKey;autoIncrement"`
	Body string
}

func (gormMessage) TableName() string { return "messages" }

// gormEnv: a backend with app.orders (segment tag "order", step 100000)
// and app.messages (snowflake tag "msg", fixed worker 5), a proxy in front.
func gormEnv(t *testing.T) (*testdb.Server, *leaf, *sql.DB) {
	backend := testdb.Start(t)
	direct := backend.Open(t, "app")
	backend.Exec(t,
		"CREATE TABLE app.orders (id BIGINT PRIMARY KEY, sku VARCHAR(64) NOT NULL UNIQUE, qty INT NOT NULL)",
		"CREATE TABLE app.messages (id BIGINT UNSIGNED PRIMARY KEY, body VARCHAR(64) NOT NULL UNIQUE)",
	)
	cfg := leafConfig(t, backend, nil)
	cfg.Sequences.Tags = map[string]config.Tag{
		"order": {Generator: "segment", Step: 100000},
		"msg":   {Generator: "snowflake"},
	}
	cfg.Snowflake.WorkerID = "5"
	cfg.Tables = []config.Table{
		{Table: "orders", Column: "id", Tag: "order"},
		{Table: "messages", Column: "id", Tag: "msg"},
	}
	return backend, startLeaf(t, cfg), direct
}

func openGorm(t *testing.T, lf *leaf, params map[string]string, prepare, returning bool) *gorm.DB {
	t.Helper()
	db, err := gorm.Open(gormmysql.New(gormmysql.Config{
		DSN:                  lf.dsn("app", params),
		DisableWithReturning: !returning,
	}), &gorm.Config{PrepareStmt: prepare, Logger: logger.Discard})
	if err != nil {
		t.Fatalf("gorm open: %v", err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sqlDB.Close() })
	return db
}

// storedID reads the key of the row whose unique column col is val, on the
// backend directly.
func storedID(t *testing.T, direct *sql.DB, table, col, val string) int64 {
	t.Helper()
	var id int64
	q := fmt.Sprintf("SELECT id FROM %s WHERE %s = ?", table, col)
	if err := direct.QueryRow(q, val).Scan(&id); err != nil {
		t.Fatalf("%s [%s]: %v", q, val, err)
	}
	return id
}

var gormModes = []struct {
	name    string
	params  map[string]string
	prepare bool
}{
	// text protocol: arguments interpolated by the driver.
	{"text", map[string]string{"interpolateParams": "true"}, false},
	// GORM's PrepareStmt: server-side prepared statements, cached and
	// re-executed (each EXECUTE must get fresh IDs).
	{"prepared", nil, true},
}

// TestKeyfillGorm: with RETURNING disabled (LastInsertId), db.Create with
// a zero ID leaves the model's ID set to the key stored on the backend, for
// one model and for a slice (each model gets its own stored key), segment
// (int64 ID) and snowflake (uint64 ID, one model per statement), text and
// prepared.
func TestKeyfillGorm(t *testing.T) {
	_, lf, direct := gormEnv(t)
	for _, mode := range gormModes {
		t.Run(mode.name, func(t *testing.T) {
			db := openGorm(t, lf, mode.params, mode.prepare, false)
			seen := map[int64]bool{}
			for i := range 3 {
				o := gormOrder{SKU: fmt.Sprintf("%s-one-%d", mode.name, i), Qty: i}
				if err := db.Create(&o).Error; err != nil {
					t.Fatalf("create: %v", err)
				}
				want := storedID(t, direct, "orders", "sku", o.SKU)
				if o.ID == 0 || o.ID != want {
					t.Fatalf("model ID %d, stored key %d", o.ID, want)
				}
				if seen[o.ID] {
					t.Fatalf("ID %d reused", o.ID)
				}
				seen[o.ID] = true
			}

			// A batch: one multi-row INSERT; GORM assigns LastInsertId()+i.
			// The prepared statement for a 20-row batch is executed twice.
			for round := range 2 {
				batch := make([]gormOrder, 20)
				for i := range batch {
					batch[i] = gormOrder{SKU: fmt.Sprintf("%s-batch%d-%02d", mode.name, round, i), Qty: i}
				}
				res := db.Create(&batch)
				if res.Error != nil {
					t.Fatalf("create batch: %v", res.Error)
				}
				if res.RowsAffected != int64(len(batch)) {
					t.Fatalf("RowsAffected %d, want %d", res.RowsAffected, len(batch))
				}
				for i, o := range batch {
					want := storedID(t, direct, "orders", "sku", o.SKU)
					if o.ID == 0 || o.ID != want {
						t.Fatalf("batch %d model %d (%s): ID %d, stored key %d", round, i, o.SKU, o.ID, want)
					}
					if seen[o.ID] {
						t.Fatalf("ID %d reused", o.ID)
					}
					seen[o.ID] = true
					if i > 0 && o.ID != batch[i-1].ID+1 {
						t.Fatalf("segment batch keys not consecutive: %d then %d", batch[i-1].ID, o.ID)
					}
				}
			}

			// Snowflake, uint64 ID, one model per statement: always right.
			for i := range 3 {
				m := gormMessage{Body: fmt.Sprintf("%s-msg-%d", mode.name, i)}
				if err := db.Create(&m).Error; err != nil {
					t.Fatalf("create message: %v", err)
				}
				want := storedID(t, direct, "messages", "body", m.Body)
				if m.ID == 0 || m.ID != uint64(want) {
					t.Fatalf("message ID %d, stored key %d", m.ID, want)
				}
				if want < 1<<22 {
					t.Fatalf("message key %d does not look like a snowflake", want)
				}
			}

			// An explicit ID is kept, not replaced by a generated one.
			// Apart per mode: an explicit key moves the tag past it.
			o := gormOrder{ID: 42_000_000_000 + 1_000_000*int64(len(mode.name)), SKU: mode.name + "-explicit"}
			if err := db.Create(&o).Error; err != nil {
				t.Fatalf("create explicit: %v", err)
			}
			if got := storedID(t, direct, "orders", "sku", o.SKU); got != o.ID {
				t.Fatalf("explicit ID %d stored as %d", o.ID, got)
			}
		})
	}
}

// TestKeyfillGormSnowflakeBatchLimit documents a limit, not a wish: with
// RETURNING disabled, a GORM batch Create into a snowflake table of more
// rows than a tick's sequence space (4,096) gets model IDs that are not the
// stored keys past the first 4,096, because GORM assumes LastInsertId()+i
// and the keys are one run per tick. The first model is always right
// (LAST_INSERT_ID is the first row's key). The same rows sent with
// CreateInBatches(rows, 4096) get every ID right: each statement's keys
// are one run in one tick. Without RETURNING (MySQL backends), keep
// snowflake batches at or below 4,096; on MariaDB keep RETURNING on
// (TestKeyfillGormReturning).
func TestKeyfillGormSnowflakeBatchLimit(t *testing.T) {
	_, lf, direct := gormEnv(t)
	db := openGorm(t, lf, map[string]string{"interpolateParams": "true"}, false, false)
	batch := make([]gormMessage, 5000)
	for i := range batch {
		batch[i] = gormMessage{Body: fmt.Sprintf("limit-%04d", i)}
	}
	if err := db.Create(&batch).Error; err != nil {
		t.Fatalf("create batch: %v", err)
	}
	stored := map[string]int64{}
	rows, err := direct.Query("SELECT body, id FROM messages WHERE body LIKE 'limit-%'")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var b string
		var id int64
		if err := rows.Scan(&b, &id); err != nil {
			t.Fatal(err)
		}
		stored[b] = id
	}
	rows.Close()
	if len(stored) != len(batch) {
		t.Fatalf("%d rows stored, want %d", len(stored), len(batch))
	}
	gaps, wrong := 0, 0
	for i, m := range batch {
		if i > 0 && stored[m.Body] != stored[batch[i-1].Body]+1 {
			gaps++
		}
		if i > 0 && stored[m.Body] <= stored[batch[i-1].Body] {
			t.Fatalf("keys not ascending in row order: row %d %d then %d", i, stored[batch[i-1].Body], stored[m.Body])
		}
		if m.ID != uint64(stored[m.Body]) {
			wrong++
		}
	}
	if batch[0].ID != uint64(stored[batch[0].Body]) {
		t.Fatalf("first model ID %d, stored key %d", batch[0].ID, stored[batch[0].Body])
	}
	t.Logf("snowflake batch of %d: %d gaps between consecutive rows' keys, %d model IDs differ from the stored key (GORM limitation)", len(batch), gaps, wrong)
	if gaps == 0 || wrong == 0 {
		t.Fatalf("expected a tick crossing to break GORM's LastInsertId+i assignment (gaps %d, wrong %d): the limitation documented here no longer holds, update the docs", gaps, wrong)
	}

	// Batches of a tick's worth: every model ID is its stored key.
	batch = make([]gormMessage, 5000)
	for i := range batch {
		batch[i] = gormMessage{Body: fmt.Sprintf("tick-%04d", i)}
	}
	for round := range 3 {
		for i := range batch {
			batch[i].ID = 0
			batch[i].Body = fmt.Sprintf("tick%d-%04d", round, i)
		}
		if err := db.CreateInBatches(&batch, 4096).Error; err != nil {
			t.Fatalf("CreateInBatches(5000, 4096): %v", err)
		}
		for _, m := range batch {
			if want := storedID(t, direct, "messages", "body", m.Body); m.ID != uint64(want) {
				t.Fatalf("CreateInBatches(5000, 4096) round %d: %s model ID %d, stored key %d", round, m.Body, m.ID, want)
			}
		}
	}
}

// TestKeyfillGormReturning: GORM's default configuration against MariaDB
// >= 10.5 sends INSERT ... RETURNING `id` and reads each model's ID from
// the result. Through the proxy every model gets its stored key: one model,
// segment batches, and snowflake batches (uint64 IDs) whose keys cross
// millisecond ticks, which LastInsertId()+i gets wrong
// (TestKeyfillGormSnowflakeBatchLimit). Text and prepared.
func TestKeyfillGormReturning(t *testing.T) {
	_, lf, direct := gormEnv(t)
	for _, mode := range gormModes {
		t.Run(mode.name, func(t *testing.T) {
			db := openGorm(t, lf, mode.params, mode.prepare, true)
			seen := map[int64]bool{}
			check := func(id int64, table, col, val string) {
				t.Helper()
				if want := storedID(t, direct, table, col, val); id == 0 || id != want {
					t.Fatalf("RETURNING: %s model ID %d, stored key %d", val, id, want)
				}
				if seen[id] {
					t.Fatalf("ID %d reused", id)
				}
				seen[id] = true
			}
			for i := range 3 {
				o := gormOrder{SKU: fmt.Sprintf("%s-ret-one-%d", mode.name, i), Qty: i}
				if err := db.Create(&o).Error; err != nil {
					t.Fatalf("create: %v", err)
				}
				check(o.ID, "orders", "sku", o.SKU)
			}
			// Segment batches; the prepared 20-row statement runs twice.
			for round := range 2 {
				batch := make([]gormOrder, 20)
				for i := range batch {
					batch[i] = gormOrder{SKU: fmt.Sprintf("%s-ret-batch%d-%02d", mode.name, round, i), Qty: i}
				}
				res := db.Create(&batch)
				if res.Error != nil {
					t.Fatalf("create batch: %v", res.Error)
				}
				if res.RowsAffected != int64(len(batch)) {
					t.Fatalf("RowsAffected %d, want %d", res.RowsAffected, len(batch))
				}
				for _, o := range batch {
					check(o.ID, "orders", "sku", o.SKU)
				}
			}
			m := gormMessage{Body: mode.name + "-ret-msg"}
			if err := db.Create(&m).Error; err != nil {
				t.Fatalf("create message: %v", err)
			}
			check(int64(m.ID), "messages", "body", m.Body)

			// A snowflake batch that must cross a millisecond tick (5000 >
			// 4096 sequence values): the keys have gaps, and with RETURNING
			// every model still gets its own stored key. GORM splits
			// nothing here (no CreateBatchSize): one statement.
			batch := make([]gormMessage, 5000)
			for i := range batch {
				batch[i] = gormMessage{Body: fmt.Sprintf("%s-ret-snow-%04d", mode.name, i)}
			}
			if err := db.Create(&batch).Error; err != nil {
				t.Fatalf("create snowflake batch: %v", err)
			}
			stored := map[string]int64{}
			rows, err := direct.Query("SELECT body, id FROM messages WHERE body LIKE ?", mode.name+"-ret-snow-%")
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var b string
				var id int64
				if err := rows.Scan(&b, &id); err != nil {
					t.Fatal(err)
				}
				stored[b] = id
			}
			rows.Close()
			if len(stored) != len(batch) {
				t.Fatalf("%d rows stored, want %d", len(stored), len(batch))
			}
			gaps := 0
			for i, m := range batch {
				want := stored[m.Body]
				if m.ID == 0 || m.ID != uint64(want) {
					t.Fatalf("snowflake batch model %d (%s): ID %d, stored key %d", i, m.Body, m.ID, want)
				}
				if i > 0 && want != stored[batch[i-1].Body]+1 {
					gaps++
				}
			}
			if gaps == 0 {
				t.Fatalf("a 5000-row snowflake batch has consecutive keys: it should cross a tick")
			}
			t.Logf("snowflake batch of %d with RETURNING: %d gaps between consecutive keys, every model ID is its stored key", len(batch), gaps)
		})
	}
}

// TestKeyfillGormFleet (issue 38 item 2): GORM's CreateInBatches with
// RETURNING disabled (each batch one multi-row INSERT, row i's ID set to
// LastInsertId()+i) through two proxies sharing one store, a segment tag
// with step 10, four clients at once (text and prepared on each proxy),
// batches of 7 to 47: every model's ID is its stored row's key.
func TestKeyfillGormFleet(t *testing.T) {
	backend := testdb.Start(t)
	direct := backend.Open(t, "app")
	backend.Exec(t, "CREATE TABLE app.orders (id BIGINT PRIMARY KEY, sku VARCHAR(64) NOT NULL UNIQUE, qty INT NOT NULL)")
	var proxies [2]*leaf
	for i := range proxies {
		cfg := leafConfig(t, backend, nil)
		cfg.Sequences.WaitTimeout = config.Duration(10 * time.Second) // a loaded 2-core machine
		cfg.Sequences.Tags = map[string]config.Tag{"order": {Generator: "segment", Step: 10}}
		cfg.Tables = []config.Table{{Table: "orders", Column: "id", Tag: "order"}}
		proxies[i] = startLeaf(t, cfg)
	}
	type client struct {
		name string
		db   *gorm.DB
	}
	var clients []client
	for i, p := range proxies {
		for _, mode := range gormModes {
			clients = append(clients, client{fmt.Sprintf("proxy%d-%s", i, mode.name), openGorm(t, p, mode.params, mode.prepare, false)})
		}
	}
	sizes := []int{7, 23, 47, 11, 31}
	var wg sync.WaitGroup
	results := make([][]gormOrder, len(clients))
	errs := make(chan error, len(clients))
	for c, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round, size := range sizes {
				batch := make([]gormOrder, 4*size+3)
				for i := range batch {
					batch[i] = gormOrder{SKU: fmt.Sprintf("%s-%d-%03d", cl.name, round, i), Qty: i}
				}
				if err := cl.db.CreateInBatches(&batch, size).Error; err != nil {
					errs <- fmt.Errorf("%s: CreateInBatches(%d rows, %d): %w", cl.name, len(batch), size, err)
					return
				}
				results[c] = append(results[c], batch...)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	stored := map[string]int64{}
	rows, err := direct.Query("SELECT sku, id FROM orders")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var sku string
		var id int64
		if err := rows.Scan(&sku, &id); err != nil {
			t.Fatal(err)
		}
		stored[sku] = id
	}
	rows.Close()
	wrong, total := 0, 0
	for _, models := range results {
		for _, o := range models {
			total++
			if want, ok := stored[o.SKU]; !ok || o.ID != want {
				if wrong++; wrong <= 3 {
					t.Errorf("%s: model ID %d, stored key %d", o.SKU, o.ID, want)
				}
			}
		}
	}
	if wrong != 0 || total != len(stored) {
		t.Fatalf("%d of %d model IDs are not their stored rows' keys (%d rows stored)", wrong, total, len(stored))
	}
	t.Logf("GORM CreateInBatches through two proxies on one store (step 10): %d models, every ID its stored row's key", total)
}
