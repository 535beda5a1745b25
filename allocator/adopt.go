package allocator

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/internal/sqltext"
	"github.com/leafproxy/leafproxy/internal/tablematch"
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
	rules         atomic.Pointer[[]Rule] // the rules in force (SetRules on reload)
	snowflakeTags map[string]bool        // time-based IDs: no floor
	servers       []KeyServer
}

// KeyServer is one server whose rule tables' largest keys a tag starts
// above.
type KeyServer struct {
	Addr string
	Keys KeyReader
}

// KeyReader reads the largest key of the tables rule r matches on one
// server (0 and "" when there is none), and where it is (db.table.column).
// The SQL one is sqlKeys; tests fake it (WithKeyServers).
type KeyReader interface {
	LargestKey(ctx context.Context, r Rule) (key int64, where string, err error)
}

// sqlKeys reads the largest keys with SQL (tableFloor).
type sqlKeys struct{ db *sql.DB }

func (k sqlKeys) LargestKey(ctx context.Context, r Rule) (int64, string, error) {
	return tableFloor(ctx, k.db, r)
}

// newKeyFloors opens (lazily: sql.Open does not connect) the backend with
// the proxy's backend account, and reuses store, the allocation store's
// pool, when the store is another server. close releases what it opened.
func newKeyFloors(cfg *Config, store *sql.DB) (k *keyFloors, close func(), err error) {
	k = &keyFloors{snowflakeTags: map[string]bool{}}
	rules := slices.Clone(cfg.Rules)
	k.rules.Store(&rules)
	for name, t := range cfg.Tags {
		if t.Generator == GeneratorSnowflake {
			k.snowflakeTags[name] = true
		}
	}
	close = func() {}
	if len(rules) == 0 {
		return k, close, nil
	}
	backend, err := sql.Open("mysql", cfg.BackendDSN)
	if err != nil {
		return nil, nil, fmt.Errorf("backend %s: %w", cfg.BackendAddr, err)
	}
	backend.SetMaxOpenConns(2)
	backend.SetConnMaxIdleTime(BackendIdle) // read when a tag is made, then closed
	close = func() { backend.Close() }
	k.servers = append(k.servers, KeyServer{Addr: cfg.BackendAddr, Keys: sqlKeys{backend}})
	if mc, err := mysql.ParseDSN(cfg.StoreDSN); err == nil && mc.Addr != cfg.BackendAddr && store != nil {
		k.servers = append(k.servers, KeyServer{Addr: mc.Addr, Keys: sqlKeys{store}})
	}
	return k, close, nil
}

// floor returns the largest key in use among the tables whose rule names
// tag, on every server (0 when there is none, e.g. a tag only NEXTVAL
// uses, or tables not created yet), and where it was found ("" for 0). A
// server that cannot be read is an error: creating the tag at 1 could
// hand out keys that exist.
func (k *keyFloors) floor(ctx context.Context, tag string) (floor int64, where string, err error) {
	if k == nil || k.snowflakeTags[tag] {
		return 0, "", nil
	}
	for _, r := range *k.rules.Load() {
		if pr, ok := perTableRule(r, tag); ok {
			r = pr // this table's own tag: its largest key alone
		} else if r.Tag != tag {
			continue
		}
		for _, s := range k.servers {
			v, at, err := s.Keys.LargestKey(ctx, r)
			if err != nil {
				return 0, "", fmt.Errorf("read the largest %s of table %s on %s (tag %q starts above it): %w", r.Column, r.Table, s.Addr, tag, err)
			}
			if v > floor {
				floor, where = v, at+" on "+s.Addr
			}
		}
	}
	return floor, where, nil
}

// perTableRule is, when tag is one of the per-table tags of a per_table
// rule r (tablematch.PerTableTag), the exact rule for that one table.
func perTableRule(r Rule, tag string) (Rule, bool) {
	if !r.PerTable {
		return Rule{}, false
	}
	db, table, ok := tablematch.SplitPerTableTag(tag, r.Tag)
	if !ok {
		return Rule{}, false
	}
	name, err := tablematch.Parse(r.Table, tablematch.Fold)
	if err != nil || !name.Match(db, table) {
		return Rule{}, false
	}
	return Rule{Table: tablematch.Escape(db) + "." + tablematch.Escape(table), Column: r.Column, Tag: tag}, true
}

// perTable reports whether tag is a per-table tag of the rules in force.
func (k *keyFloors) perTable(tag string) bool {
	return k != nil && isPerTableTag(*k.rules.Load(), tag)
}

// isPerTableTag reports whether tag is a per-table tag of one of rules.
func isPerTableTag(rules []Rule, tag string) bool {
	for _, r := range rules {
		if _, ok := perTableRule(r, tag); ok {
			return true
		}
	}
	return false
}

// BackendIdle is how long a connection of the proxy's own to the backend
// (the rule tables' largest keys, the runway's column reads) stays open
// unused: not for good, since tests and operators count the server's
// sessions (docs/PROTOCOL.md).
const BackendIdle = 2 * time.Second

// StoreIdle is the same for the allocation store's pool.
const StoreIdle = 5 * time.Second

// NameCase is how the server behind db compares database and table names
// (its lower_case_table_names, a server global read once per call).
func NameCase(ctx context.Context, db *sql.DB) (tablematch.Case, int, error) {
	var n int
	if err := db.QueryRowContext(ctx, "SELECT @@lower_case_table_names").Scan(&n); err != nil {
		return tablematch.Exact, 0, err
	}
	return tablematch.CaseOf(n), n, nil
}

// RuleTable is one table a rule stands for, with its key column as the
// server names it and its type (information_schema's COLUMN_TYPE, e.g.
// "int(11) unsigned").
type RuleTable struct{ DB, Table, Column, Type string }

// MatchingTables lists the tables on the server behind db that rule r
// stands for, as the rewriter matches them (tablematch, with the server's
// case rule c) and whose column r.Column is an integer. Tables the account
// cannot see are not listed. information_schema is asked with LIKE on the
// names' literal starts (a superset: LIKE ignores case there; see
// tablematch.Name.Like), and the rows are matched here.
func MatchingTables(ctx context.Context, db *sql.DB, r Rule, c tablematch.Case) ([]RuleTable, error) {
	name, err := tablematch.Parse(r.Table, c)
	if err != nil {
		return nil, err // config validation refuses it first
	}
	q := "SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, COLUMN_TYPE FROM information_schema.COLUMNS WHERE COLUMN_NAME = ?" +
		" AND TABLE_SCHEMA NOT IN (" + tablematch.SystemSchemas + ")" +
		" AND DATA_TYPE IN ('tinyint','smallint','mediumint','int','integer','bigint','decimal','numeric')"
	args := []any{r.Column}
	q, args = name.FilterLike(q, args)
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("find the tables in information_schema: %w", err)
	}
	defer rows.Close()
	var out []RuleTable
	for rows.Next() {
		var t RuleTable
		if err := rows.Scan(&t.DB, &t.Table, &t.Column, &t.Type); err != nil {
			return nil, err
		}
		if name.Match(t.DB, t.Table) {
			out = append(out, t)
		}
	}
	return out, rows.Err()
}

// maxChunk is how many tables one statement reads the largest key of (a
// sharded family has thousands).
const maxChunk = 100

// tableFloor is MAX(key) over the tables rule r matches on one server:
// one table for db.table, that name in every database for a bare table
// name, every table a pattern matches (as the rule matches them, with the
// server's lower_case_table_names; when that cannot be read, names are
// compared case-insensitively, which can only find more tables). Tables
// the account cannot see, or whose key column is not an integer, count as
// empty.
func tableFloor(ctx context.Context, db *sql.DB, r Rule) (floor int64, where string, err error) {
	c, _, err := NameCase(ctx, db)
	if err != nil {
		c = tablematch.Fold
	}
	tables, err := MatchingTables(ctx, db, r, c)
	if err != nil {
		return 0, "", err
	}
	for len(tables) > 0 {
		chunk := tables[:min(maxChunk, len(tables))]
		tables = tables[len(chunk):]
		v, at, err := chunkFloor(ctx, db, chunk)
		if err != nil && len(chunk) > 1 {
			// One by one, to name the table that fails.
			v, at, err = 0, "", nil
			for _, t := range chunk {
				tv, tat, terr := chunkFloor(ctx, db, []RuleTable{t})
				if terr != nil {
					return 0, "", terr
				}
				if tv > v {
					v, at = tv, tat
				}
			}
		}
		if err != nil {
			return 0, "", err
		}
		if v > floor {
			floor, where = v, at
		}
	}
	return floor, where, nil
}

// chunkFloor is the largest key of the tables, in one statement (MAX of
// an indexed key is one index dive, also on 334k rows).
func chunkFloor(ctx context.Context, db *sql.DB, tables []RuleTable) (floor int64, where string, err error) {
	var q strings.Builder
	for i, t := range tables {
		if i > 0 {
			q.WriteString(" UNION ALL ")
		}
		fmt.Fprintf(&q, "SELECT %d, MAX(%s) FROM %s.%s", i, sqltext.QuoteIdent(t.Column), sqltext.QuoteIdent(t.DB), sqltext.QuoteIdent(t.Table))
	}
	rows, err := db.QueryContext(ctx, q.String())
	if err != nil {
		if len(tables) == 1 {
			t := tables[0]
			return 0, "", fmt.Errorf("SELECT MAX(%s) FROM %s.%s: %w", t.Column, sqltext.QuoteIdent(t.DB), sqltext.QuoteIdent(t.Table), err)
		}
		return 0, "", err
	}
	defer rows.Close()
	for rows.Next() {
		var i int
		var v sql.NullString
		if err := rows.Scan(&i, &v); err != nil {
			return 0, "", err
		}
		if !v.Valid || i < 0 || i >= len(tables) {
			continue
		}
		t := tables[i]
		n, err := strconv.ParseInt(strings.TrimSuffix(v.String, ".0"), 10, 64)
		if err != nil {
			var ne *strconv.NumError
			if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) && !strings.HasPrefix(v.String, "-") {
				return 0, "", fmt.Errorf("the largest %s of %s.%s, %s, is beyond the IDs a tag can issue (BIGINT)", t.Column, sqltext.QuoteIdent(t.DB), sqltext.QuoteIdent(t.Table), v.String)
			}
			continue // negative or fractional: no ID >= 1 can collide with it
		}
		if n > floor {
			floor, where = n, t.DB+"."+t.Table+"."+t.Column
		}
	}
	return floor, where, rows.Err()
}
