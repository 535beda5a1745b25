package allocator

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/allocator/schema"
	"github.com/leafproxy/leafproxy/allocator/snowflake"
)

// InitStore creates the allocation schema (and, for the default store, its
// database `leafproxy` on the backend), converts store tables without
// utf8mb4 (schema.Migrate), and creates every configured segment tag that
// is missing, including tags named only by table rules when auto_create is
// on (without it such a tag must exist: an *UndeclaredTagError names
// every rule whose tag does not, before any tag is created). A tag that fills
// rule tables starts above their largest existing key on the backend and
// the store (adoption of tables with rows), and an existing tag below that
// key is raised to it: keys written around the proxy since (an import, a
// second shard adopted later) are never handed out again. Idempotent:
// max_id only ever moves up. report, if set, hears one line per tag.
// What it decides is prepareStore's (initstore.go); opts may put another
// store (WithTagStore) and key readers (WithKeyServers) in place of SQL.
func InitStore(ctx context.Context, cfg *Config, report func(format string, args ...any), opts ...Option) error {
	if report == nil {
		report = func(string, ...any) {}
	}
	var o options
	for _, f := range opts {
		f(&o)
	}
	c := cfg.WithDefaults()
	cfg = &c
	dsn := cfg.StoreDSN
	mc, err := mysql.ParseDSN(dsn)
	if err != nil && o.tagStore == nil {
		return fmt.Errorf("sequences.store: %w", err)
	}
	if err != nil {
		mc = mysql.NewConfig()
	}
	ts := o.tagStore
	var db *sql.DB
	if ts == nil {
		if cfg.CreateStoreDatabase {
			if err := createDatabase(ctx, mc); err != nil {
				return err
			}
		}
		if db, err = cfg.openStore(); err != nil {
			return err
		}
		defer db.Close()
		ts = mysqlTagStore{db}
	}
	floors, closeFloors, err := newKeyFloors(cfg, db)
	if err != nil {
		return err
	}
	defer closeFloors()
	if o.keyServersSet {
		floors.servers = o.keyServers
	}
	if err := prepareStore(ctx, cfg, ts, floors, mc.Addr, report); err != nil {
		return err
	}
	report("allocation store ready on %s/%s", mc.Addr, mc.DBName)
	return nil
}

// CheckTags reports (as an *UndeclaredTagError) the table rules whose tag
// is neither declared in sequences.tags nor in the store's leaf_alloc, with
// auto_create off, changing nothing: a store whose database or leaf_alloc
// does not exist yet holds no tag. opts may put another store in place of
// the MySQL one (WithTagStore).
func CheckTags(ctx context.Context, cfg *Config, opts ...Option) error {
	if cfg.AutoCreate {
		return nil
	}
	var o options
	for _, f := range opts {
		f(&o)
	}
	if o.tagStore != nil {
		return undeclaredTags(ctx, cfg, o.tagStore)
	}
	db, err := cfg.openStore()
	if err != nil {
		return err
	}
	defer db.Close()
	err = undeclaredTags(ctx, cfg, mysqlTagStore{db})
	var me *mysql.MySQLError
	if errors.As(err, &me) && (me.Number == 1049 || me.Number == 1146) { // no database, no table
		return undeclaredTags(ctx, cfg, nil)
	}
	return err
}

// mysqlTagStore is the TagStore over the store's database: the SQL of
// InitStore and CheckTags.
type mysqlTagStore struct{ db *sql.DB }

func (m mysqlTagStore) CreateSchema(ctx context.Context) ([]string, error) {
	if err := schema.Create(ctx, m.db); err != nil {
		return nil, err
	}
	return schema.Migrate(ctx, m.db)
}

func (m mysqlTagStore) HasTag(ctx context.Context, tag string) (bool, error) {
	var one int
	err := m.db.QueryRowContext(ctx, "SELECT 1 FROM leaf_alloc WHERE biz_tag = ?", tag).Scan(&one)
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return false, err
	}
	// A snowflake tag created in SQL has no leaf_alloc row (a store
	// without the layout table has none such).
	return m.db.QueryRowContext(ctx, "SELECT 1 FROM leaf_snowflake_layout WHERE name = ?", "tag:"+tag).Scan(&one) == nil, nil
}

func (m mysqlTagStore) SegmentTags(ctx context.Context) ([]string, error) {
	rows, err := m.db.QueryContext(ctx, "SELECT biz_tag FROM leaf_alloc")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var t string
		if rows.Scan(&t) == nil {
			out = append(out, t)
		}
	}
	return out, nil
}

func (m mysqlTagStore) TagLayouts(ctx context.Context) (map[string]snowflake.LayoutRecord, error) {
	return snowflake.NewMySQLLeaser(m.db, "", 0).TagLayouts(ctx)
}

func (m mysqlTagStore) EnsureTag(ctx context.Context, tag string, step, first int64, description string) (bool, error) {
	return schema.EnsureTagAt(ctx, m.db, tag, step, first, description)
}

func (m mysqlTagStore) RaiseTag(ctx context.Context, tag string, first int64) (before, after int64, err error) {
	before, after, _, err = schema.RaiseTag(ctx, m.db, tag, first)
	return before, after, err
}

func createDatabase(ctx context.Context, mc *mysql.Config) error {
	root := *mc
	root.DBName = ""
	db, err := sql.Open("mysql", root.FormatDSN())
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS `"+mc.DBName+"`"); err != nil {
		return fmt.Errorf("create database %s on %s: %w", mc.DBName, mc.Addr, err)
	}
	return nil
}
