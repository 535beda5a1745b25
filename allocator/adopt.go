package allocator

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/config"
)

// Adopting a table that already holds keys (AUTO_INCREMENT rows, an
// import) must not hand out those keys again: a tag that starts at 1 over
// a table with 3,000 rows makes the first INSERT through the proxy fail
// with 1062. So a tag is created, and raised by init, just above the
// largest key of every rule table (config tables:) it fills, on every
// server the proxy can see: its backend, and the store when that is
// another server (e.g. the unsharded database the tables came from).

// keyFloors reads the largest existing keys of the rule tables.
type keyFloors struct {
	rules   []config.Table
	snow    map[string]bool // snowflake tags: time-based IDs, no floor
	servers []floorServer
}

type floorServer struct {
	addr string
	db   *sql.DB
}

// newKeyFloors opens (lazily: sql.Open does not connect) the backend with
// the proxy's backend account, and reuses store, the allocation store's
// pool, when the store is another server. close releases what it opened.
func newKeyFloors(cfg *config.Config, store *sql.DB) (k *keyFloors, close func(), err error) {
	k = &keyFloors{rules: cfg.Tables, snow: map[string]bool{}}
	for name, t := range cfg.Sequences.Tags {
		if t.Generator == "snowflake" {
			k.snow[name] = true
		}
	}
	close = func() {}
	if len(k.rules) == 0 {
		return k, close, nil
	}
	backend, err := sql.Open("mysql", backendDSN(cfg))
	if err != nil {
		return nil, nil, fmt.Errorf("backend %s: %w", cfg.Backend.Addr, err)
	}
	backend.SetMaxOpenConns(2)
	close = func() { backend.Close() }
	k.servers = append(k.servers, floorServer{addr: cfg.Backend.Addr, db: backend})
	if mc, err := mysql.ParseDSN(cfg.StoreDSN()); err == nil && mc.Addr != cfg.Backend.Addr && store != nil {
		k.servers = append(k.servers, floorServer{addr: mc.Addr, db: store})
	}
	return k, close, nil
}

// backendDSN reaches the backend as the proxy's backend account, with no
// default database (rule tables are found in information_schema).
func backendDSN(cfg *config.Config) string {
	mc := mysql.NewConfig()
	mc.Net = config.Network(cfg.Backend.Addr)
	mc.Addr = cfg.Backend.Addr
	mc.User = cfg.Backend.User
	mc.Passwd = cfg.Backend.Password
	mc.Timeout = cfg.Backend.ConnectTimeout.D()
	return mc.FormatDSN()
}

// floor returns the largest key in use among the tables whose rule names
// tag, on every server (0 when there is none, e.g. a tag only NEXTVAL
// uses, or tables not created yet), and where it was found ("" for 0). A
// server that cannot be read is an error: creating the tag at 1 could
// hand out keys that exist.
func (k *keyFloors) floor(ctx context.Context, tag string) (floor int64, where string, err error) {
	if k == nil || k.snow[tag] {
		return 0, "", nil
	}
	for _, r := range k.rules {
		if r.Tag != tag {
			continue
		}
		for _, s := range k.servers {
			v, at, err := tableFloor(ctx, s.db, r)
			if err != nil {
				return 0, "", fmt.Errorf("read the largest %s of table %s on %s (tag %q starts above it): %w", r.Column, r.Table, s.addr, tag, err)
			}
			if v > floor {
				floor, where = v, at+" on "+s.addr
			}
		}
	}
	return floor, where, nil
}

// systemSchemas never hold application tables.
const systemSchemas = "'mysql','information_schema','performance_schema','sys'"

// tableFloor is MAX(key) over the tables rule r matches on one server: one
// table for db.table, that name in every database for a bare table name
// (as the rule matches it). Tables the account cannot see, or whose key
// column is not an integer, count as empty.
func tableFloor(ctx context.Context, db *sql.DB, r config.Table) (floor int64, where string, err error) {
	schemaName, table, qualified := strings.Cut(r.Table, ".")
	if !qualified {
		table, schemaName = schemaName, ""
	}
	rows, err := db.QueryContext(ctx, "SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME FROM information_schema.COLUMNS"+
		" WHERE TABLE_NAME = ? AND COLUMN_NAME = ? AND (? = '' OR TABLE_SCHEMA = ?)"+
		" AND TABLE_SCHEMA NOT IN ("+systemSchemas+")"+
		" AND DATA_TYPE IN ('tinyint','smallint','mediumint','int','integer','bigint','decimal','numeric')",
		table, r.Column, schemaName, schemaName)
	if err != nil {
		return 0, "", fmt.Errorf("find the table in information_schema: %w", err)
	}
	type found struct{ db, table, col string }
	var tables []found
	for rows.Next() {
		var f found
		if err := rows.Scan(&f.db, &f.table, &f.col); err != nil {
			rows.Close()
			return 0, "", err
		}
		tables = append(tables, f)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, "", err
	}
	for _, f := range tables {
		name := quoteIdent(f.db) + "." + quoteIdent(f.table)
		var v sql.NullString
		// MAX of an indexed key is one index dive, also on 334k rows.
		if err := db.QueryRowContext(ctx, "SELECT MAX("+quoteIdent(f.col)+") FROM "+name).Scan(&v); err != nil {
			return 0, "", fmt.Errorf("SELECT MAX(%s) FROM %s: %w", f.col, name, err)
		}
		if !v.Valid {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSuffix(v.String, ".0"), 10, 64)
		if err != nil {
			var ne *strconv.NumError
			if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) && !strings.HasPrefix(v.String, "-") {
				return 0, "", fmt.Errorf("the largest %s of %s, %s, is beyond the IDs a tag can issue (BIGINT)", f.col, name, v.String)
			}
			continue // negative or fractional: no ID >= 1 can collide with it
		}
		if n > floor {
			floor, where = n, f.db+"."+f.table+"."+f.col
		}
	}
	return floor, where, nil
}

func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }
