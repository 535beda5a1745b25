package allocator

import (
	"context"
	"database/sql"
	"errors"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/allocator/segment"
	"github.com/leafproxy/leafproxy/allocator/snowflake"
)

// The allocation store as Sequences sees it: two interfaces, so that a
// test can put an in-memory fake (internal/testkit/fakestore) where Open puts the
// MySQL store over Config.StoreDSN (WithStores). The SQL lives in the MySQL
// implementations (segment.MySQLStore, snowflake.MySQLLeaser and the two
// adapters below); Sequences knows none of it.

// SegmentStore is leaf_alloc: the segment allocator's store (segment.Store,
// and the optional segment.Raiser, Describer, Starter and Bounder, which
// the segment allocator looks for) and the rows the admin SQL reads,
// alters and deletes.
type SegmentStore interface {
	segment.Store
	// Has says tag has a row.
	Has(ctx context.Context, tag string) (bool, error)
	// Rows reads every tag's row.
	Rows(ctx context.Context) (map[string]StoreRow, error)
	// SetStep sets tag's step; found is false when it has no row.
	SetStep(ctx context.Context, tag string, step int64) (found bool, err error)
	// Delete deletes tag's row; found is false when there was none.
	Delete(ctx context.Context, tag string) (found bool, err error)
	// SetCreateFloor sets what creating a tag asks for the largest ID
	// already in use for it (the largest key of the tables it fills: a
	// tag starts above it). Called once, before the store is used.
	SetCreateFloor(f func(ctx context.Context, tag string) (int64, error))
}

// SnowflakeStore is leaf_snowflake_layout (the global layout and each
// snowflake tag's) and the worker-id spaces of the layouts.
type SnowflakeStore interface {
	snowflake.LayoutChecker
	CheckTagLayout(ctx context.Context, tag string, l snowflake.Layout, description, source string, global snowflake.Layout) (snowflake.LayoutCheck, error)
	TagLayout(ctx context.Context, tag string) (snowflake.LayoutRecord, bool, error)
	TagLayouts(ctx context.Context) (map[string]snowflake.LayoutRecord, error)
	DeleteTagLayout(ctx context.Context, tag string) (bool, error)
	// Workers is where a generator of layout l takes its worker id: the
	// space of l (leaf_worker when l is global, the store's global
	// layout), leased, or the fixed id registered there when lease is
	// false.
	Workers(l, global snowflake.Layout, lease bool, fixed int64) snowflake.WorkerSource
}

// WithStores makes Open use these stores instead of the MySQL store over
// Config.StoreDSN (tests: internal/testkit/fakestore). WithInitStore needs the
// MySQL store.
func WithStores(segments SegmentStore, snowflakes SnowflakeStore) Option {
	return func(o *options) { o.segStore, o.snowStore = segments, snowflakes }
}

// WithKeyServers sets the servers whose rule tables' largest keys a tag
// starts above (adopt.go), instead of the backend and the store read with
// SQL (tests).
func WithKeyServers(servers ...KeyServer) Option {
	return func(o *options) { o.keyServers, o.keyServersSet = servers, true }
}

// mysqlSegments is the SegmentStore over leaf_alloc in db.
type mysqlSegments struct {
	*segment.MySQLStore
	db *sql.DB
}

func (m mysqlSegments) Has(ctx context.Context, tag string) (bool, error) {
	var one int
	err := m.db.QueryRowContext(ctx, "SELECT 1 FROM leaf_alloc WHERE biz_tag = ?", tag).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

func (m mysqlSegments) Rows(ctx context.Context) (map[string]StoreRow, error) {
	rows, err := m.db.QueryContext(ctx, "SELECT biz_tag, max_id, step, COALESCE(description, ''), COALESCE(max_value, 0) FROM leaf_alloc")
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == 1054 {
		// A leaf_alloc without max_value (its account could not add it).
		rows, err = m.db.QueryContext(ctx, "SELECT biz_tag, max_id, step, COALESCE(description, ''), 0 FROM leaf_alloc")
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]StoreRow{}
	for rows.Next() {
		var tag string
		var r StoreRow
		if err := rows.Scan(&tag, &r.MaxID, &r.Step, &r.Description, &r.MaxValue); err != nil {
			return nil, err
		}
		out[tag] = r
	}
	return out, rows.Err()
}

func (m mysqlSegments) SetCreateFloor(f func(ctx context.Context, tag string) (int64, error)) {
	m.CreateFloor = f
}

// mysqlSnowflakes is the SnowflakeStore over leaf_snowflake_layout,
// leaf_worker and leaf_worker_layout.
type mysqlSnowflakes struct{ *snowflake.MySQLLeaser }

func (m mysqlSnowflakes) Workers(l, global snowflake.Layout, lease bool, fixed int64) snowflake.WorkerSource {
	leaser := m.LeaserOf(l, global)
	if lease {
		return leaser
	}
	// Registered in the layout's lease table like a leased id, so two
	// processes configured with the same id (or an id an auto process
	// leased) cannot both issue under it.
	return leaser.Fixed(fixed)
}
