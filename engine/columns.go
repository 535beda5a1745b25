package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leafproxy/leafproxy/rewriter"
)

// colKey is a cached table: database and table name as the statement named them.
type colKey struct{ db, table string }

// columnCache remembers tables' column order for INSERT without a column
// list. Entries expire (DDL through another proxy is not seen) and are
// dropped on DDL seen here.
type columnCache struct {
	ttl        time.Duration
	mu         sync.RWMutex
	entries    map[colKey]colEntry
	generation atomic.Uint64 // bumped under mu by every change to entries: see colMemo
}

// colMemo is one session's last fresh hit in the cache. A session inserts
// into the same table statement after statement; found here, the entry
// costs no shared lock (whose reader count would move between the cores
// on every INSERT) and no hash. It is used while the cache has not changed
// since (generation) and the entry has not expired.
type colMemo struct {
	db, table  string // owned copies
	entry      colEntry
	generation uint64
}

type colEntry struct {
	cols  []string
	types []colType // parallel to cols
	maxes []int64   // parallel to cols: the largest value each holds, 0 for no integer type (colMax)
	// keys: per column, what information_schema says of its key and
	// default (parallel to cols); pri: how many columns the primary key has.
	keys []colKeyFacts
	pri  int
	// visible: cols without INVISIBLE ones (MariaDB 10.3+, MySQL 8.0.23+),
	// which INSERT and LOAD DATA without a column list leave out.
	visible  []string
	loadedAt time.Time
	// refreshing: a session is re-reading this expired entry; the others
	// keep using it meanwhile instead of all asking information_schema.
	refreshing bool
}

// colKeyFacts is what information_schema says of a column as a key.
type colKeyFacts struct {
	primary, autoIncrement bool
	def                    string // COLUMN_DEFAULT ("" for none, also for MariaDB's 'NULL')
}

// colType is what information_schema says of a column's type.
type colType struct {
	dataType   string // e.g. bigint, varchar
	columnType string // e.g. bigint(20) unsigned
	precision  int64  // NUMERIC_PRECISION (decimal)
	scale      int64  // NUMERIC_SCALE (decimal)
}

func newColumnCache(ttl time.Duration) *columnCache {
	return &columnCache{ttl: ttl, entries: map[colKey]colEntry{}}
}

// invalidate drops every entry.
func (c *columnCache) invalidate() {
	c.mu.Lock()
	clear(c.entries)
	c.generation.Add(1)
	c.mu.Unlock()
}

// forget drops the entries refs name: a table in one database or, with no
// database, in every one; with no table, every table of the database.
// Names compare without regard to case, as the server's may
// (lower_case_table_names): dropping one entry too many only costs a
// re-read. The generation moves (and sessions' memos go stale) only when
// an entry is dropped.
func (c *columnCache) forget(refs []rewriter.SchemaRef) {
	if len(refs) == 0 {
		return
	}
	c.mu.Lock()
	dropped := false
	for key := range c.entries {
		for _, r := range refs {
			if (r.DB == "" || strings.EqualFold(r.DB, key.db)) && (r.Table == "" || strings.EqualFold(r.Table, key.table)) {
				delete(c.entries, key)
				dropped = true
				break
			}
		}
	}
	if dropped {
		c.generation.Add(1)
	}
	c.mu.Unlock()
}

func (c *columnCache) get(ctx context.Context, s Session, db, table string) ([]string, error) {
	e, err := c.entry(ctx, s, nil, db, table)
	if err != nil {
		return nil, err
	}
	if len(e.cols) == 0 {
		return nil, fmt.Errorf("table %s.%s not found", db, table)
	}
	return e.visible, nil
}

// entry returns the table's columns and types, from the cache or from
// information_schema. A table that is not there (or not visible to the
// backend account) gives an entry with no columns. memo, if not nil, is
// the session's colMemo: read first, updated on a fresh hit.
func (c *columnCache) entry(ctx context.Context, s Session, memo *colMemo, db, table string) (colEntry, error) {
	gen := c.generation.Load() // before the map is read: a change after it makes the memo stale, never wrong
	if memo != nil && memo.generation == gen && memo.db == db && memo.table == table && time.Since(memo.entry.loadedAt) < c.ttl {
		return memo.entry, nil
	}
	// A struct key is looked up without building a string per statement;
	// db and table may borrow the packet buffer, so a stored key is cloned.
	key := colKey{db, table}
	c.mu.RLock()
	e, ok := c.entries[key]
	c.mu.RUnlock()
	if ok && time.Since(e.loadedAt) < c.ttl {
		if memo != nil {
			*memo = colMemo{db: strings.Clone(db), table: strings.Clone(table), entry: e, generation: gen}
		}
		return e, nil
	}
	if db == "" {
		return colEntry{}, errors.New("no database selected")
	}
	if ok && len(e.cols) > 0 {
		c.mu.Lock()
		cur, still := c.entries[key]
		if still && cur.refreshing {
			c.mu.Unlock()
			return cur, nil
		}
		if still {
			cur.refreshing = true
			c.entries[owned(key)] = cur // not key: assigning would store its borrowed strings
			c.generation.Add(1)
		}
		c.mu.Unlock()
	}
	var rows [][]*string
	bs, err := s.Blocking(ctx)
	if err == nil {
		rows, err = bs.BackendQuery(ctx, "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, NUMERIC_PRECISION, NUMERIC_SCALE, EXTRA, COLUMN_KEY, COLUMN_DEFAULT"+
			" FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "+quote(db)+" AND TABLE_NAME = "+quote(table)+
			" ORDER BY ORDINAL_POSITION")
	}
	if err != nil {
		c.mu.Lock()
		if cur, still := c.entries[key]; still && cur.refreshing {
			cur.refreshing = false // the next statement tries again
			c.entries[owned(key)] = cur
			c.generation.Add(1)
		}
		c.mu.Unlock()
		return colEntry{}, fmt.Errorf("read columns of %s.%s: %w", db, table, err)
	}
	e = columnsOf(rows)
	c.mu.Lock()
	if len(c.entries) > 10000 {
		clear(c.entries)
	}
	c.entries[owned(key)] = e
	c.generation.Add(1)
	c.mu.Unlock()
	return e, nil
}

// columnsOf reads information_schema.COLUMNS rows (COLUMN_NAME,
// DATA_TYPE, COLUMN_TYPE, NUMERIC_PRECISION, NUMERIC_SCALE, EXTRA,
// COLUMN_KEY, COLUMN_DEFAULT, in ordinal order) into a cache entry loaded
// now. Rows too short or without a name are skipped.
func columnsOf(rows [][]*string) colEntry {
	e := colEntry{cols: make([]string, 0, len(rows)), types: make([]colType, 0, len(rows)), loadedAt: time.Now()}
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	for _, r := range rows {
		if len(r) < 5 || r[0] == nil {
			continue
		}
		t := colType{dataType: strings.ToLower(str(r[1])), columnType: strings.ToLower(str(r[2]))}
		t.precision, _ = strconv.ParseInt(str(r[3]), 10, 64)
		t.scale, _ = strconv.ParseInt(str(r[4]), 10, 64)
		e.cols = append(e.cols, *r[0])
		e.types = append(e.types, t)
		mx, _ := colMax(t)
		e.maxes = append(e.maxes, mx)
		if len(r) < 6 || !strings.Contains(strings.ToUpper(str(r[5])), "INVISIBLE") {
			e.visible = append(e.visible, *r[0])
		}
		var k colKeyFacts
		if len(r) >= 8 {
			k.primary = strings.EqualFold(str(r[6]), "PRI")
			k.autoIncrement = strings.Contains(strings.ToLower(str(r[5])), "auto_increment")
			if d := str(r[7]); r[7] != nil && d != "NULL" {
				k.def = d
			}
		}
		if k.primary {
			e.pri++
		}
		e.keys = append(e.keys, k)
	}
	return e
}

// owned is key with its strings copied: the statement's may borrow the
// client's packet buffer.
func owned(key colKey) colKey {
	return colKey{strings.Clone(key.db), strings.Clone(key.table)}
}

// quote makes a string literal that is safe whatever the sql_mode: no
// backslash is needed when quotes are doubled, and backslashes are avoided
// by hex-encoding any string that holds one.
func quote(s string) string {
	if strings.ContainsAny(s, "\\\x00") {
		return fmt.Sprintf("X'%x'", s)
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// checkKeys refuses a statement whose generated keys would go into a
// column that cannot hold them: a VARCHAR key would silently get a number,
// an INT key a snowflake ID that the server truncates or rejects. Tables
// information_schema does not show (temporary tables, no privilege) are
// left to the server.
func (e *Engine) checkKeys(ctx context.Context, s Session, memo *colMemo, filled []rewriter.Filled) error {
	for _, f := range filled {
		ent, err := e.columns.entry(ctx, s, memo, f.DB, f.Table)
		if err != nil {
			return err
		}
		for i, c := range ent.cols {
			if !strings.EqualFold(c, f.Column) {
				continue
			}
			gen := e.idSource.Generator(f.Tag)
			if why := keyTypeProblem(ent.types[i], gen); why != "" {
				return &notSupportedError{msg: fmt.Sprintf("leafproxy: cannot fill %s.%s.%s with IDs from tag %q (%s): column type %s %s",
					f.DB, f.Table, f.Column, f.Tag, gen, ent.types[i].columnType, why)}
			}
		}
	}
	return nil
}

// keyTypeProblem says why a column of type t cannot hold IDs from gen, or "".
func keyTypeProblem(t colType, gen string) string {
	switch t.dataType {
	case "bigint":
		return ""
	case "tinyint", "smallint", "mediumint", "int", "integer":
		if gen == "snowflake" {
			return "is too narrow for 64-bit snowflake IDs; use BIGINT"
		}
		return "" // segment IDs fit until the column's maximum, where the server reports an error
	case "decimal", "numeric":
		if t.scale != 0 {
			return "has a fractional part; use BIGINT"
		}
		if gen == "snowflake" && t.precision < 19 {
			return "is too narrow for 64-bit snowflake IDs; use BIGINT"
		}
		return ""
	}
	return "is not an integer type; the generator produces BIGINT IDs"
}

// tableKey is what the backend says of db.table's column (Env.TableKey):
// from the column cache, so one read per table and TTL.
func (c *columnCache) tableKey(ctx context.Context, s Session, memo *colMemo, db, table, column string) (rewriter.TableKey, error) {
	ent, err := c.entry(ctx, s, memo, db, table)
	if err != nil {
		return rewriter.TableKey{}, err
	}
	k := rewriter.TableKey{Known: len(ent.cols) > 0}
	for i, name := range ent.cols {
		if !strings.EqualFold(name, column) {
			continue
		}
		k.Column, k.Type = true, ent.types[i].columnType
		k.Integer = keyTypeProblem(ent.types[i], "segment") == ""
		if i < len(ent.keys) {
			f := ent.keys[i]
			k.Key = f.primary && ent.pri == 1
			k.AutoIncrement = f.autoIncrement
			k.Default = f.def
		}
		break
	}
	return k, nil
}
