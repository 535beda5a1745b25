// Package schema holds the DDL of the allocation store: Leaf's leaf_alloc
// table for segments, leaf_worker and leaf_worker_layout for snowflake
// worker-id leases, and leaf_snowflake_layout for the snowflake bit
// layouts (global and per tag) the proxies sharing the store agreed on. The statements are idempotent; `leafproxy init`,
// start-up and the tests run them.
package schema

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Charset and Collation of the store tables. Tags are names a person
// writes in any script ('订单'): a table without a charset gets the
// server's default (latin1 on many installations), where such a tag can
// neither be stored nor compared (every fetch fails with "Illegal mix of
// collations" and is retried until wait_timeout). utf8mb4_bin compares tag
// names byte for byte, exactly as the proxy tells tags apart.
const (
	Charset   = "utf8mb4"
	Collation = "utf8mb4_bin"
)

// LeafAlloc is Leaf's table (same columns, so an existing Leaf deployment's
// table works as it is; Migrate converts its charset and adds max_value).
// The segment a fetch receives is [max_id-step, max_id).
//
// max_value is a tag's MAXVALUE (CREATE LEAFPROXY SEQUENCE ... MAXVALUE
// m), NULL for none: no proxy hands out an ID above it. It is a nullable
// column of the tag's own row rather than a table of its own because the
// fetch must honour it atomically with the advance of max_id, under the
// one row lock that orders every proxy's fetches (a fetch whose max_id is
// already past it takes nothing), and a column costs no second read.
// Leaf's servers and older proxies name their columns and never see it
// (they do not honour it either: a fleet that uses MAXVALUE upgrades
// first); its NULL default leaves their INSERTs valid.
const LeafAlloc = "CREATE TABLE IF NOT EXISTS `leaf_alloc` (\n" +
	"  `biz_tag` varchar(128) NOT NULL DEFAULT '',\n" +
	"  `max_id` bigint(20) NOT NULL DEFAULT '1',\n" +
	"  `step` int(11) NOT NULL,\n" +
	"  `description` varchar(256) DEFAULT NULL,\n" +
	"  `max_value` bigint(20) DEFAULT NULL COMMENT 'MAXVALUE: no ID above it is handed out; NULL: none',\n" +
	"  `update_time` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,\n" +
	"  PRIMARY KEY (`biz_tag`)\n" +
	") ENGINE=InnoDB DEFAULT CHARSET=" + Charset + " COLLATE=" + Collation

// LeafWorker holds snowflake worker-id leases: one row per worker id, owned
// by one process until its heartbeat is older than the TTL. last_timestamp
// is the highest time unit the owner issued, so whoever takes the id over
// never issues below it.
const LeafWorker = "CREATE TABLE IF NOT EXISTS `leaf_worker` (\n" +
	"  `worker_id` int NOT NULL,\n" +
	"  `owner` varchar(255) NOT NULL,\n" +
	"  `heartbeat` bigint NOT NULL COMMENT 'unix ms of the last renewal, by the database clock',\n" +
	"  `last_timestamp` bigint NOT NULL DEFAULT 0 COMMENT 'unix ms of the last issued tick',\n" +
	"  PRIMARY KEY (`worker_id`)\n" +
	") ENGINE=InnoDB DEFAULT CHARSET=" + Charset + " COLLATE=" + Collation

// LeafSnowflakeLayout records the snowflake bit layouts of the IDs issued
// through this store, so that a proxy configured with another one refuses
// to start instead of issuing IDs that can collide with the others'. One
// row per name: 'default' is the global layout (snowflake.* in the
// config); 'tag:<tag>' (TagLayoutName) is the layout of one snowflake tag,
// recorded for every snowflake tag, configured (sequences.tags) or created
// with CREATE LEAFPROXY SEQUENCE ... SNOWFLAKE. A tag's row also says that
// the tag exists and is a snowflake tag: that is how proxies without it in
// their config learn it. The prefix keeps a tag named 'default' apart from
// the global row; name is wide enough for "tag:" and the longest tag
// (MaxTagChars). The first proxy (or `leafproxy init`) that needs a row
// records its own; the proxy never updates a row. unit_ns is exact (a unit
// need not be a whole number of milliseconds); epoch_ms is exact to the
// millisecond, which is all the high-water marks that hand a worker id
// over resolve. description says who made a tag's row and how.
const LeafSnowflakeLayout = "CREATE TABLE IF NOT EXISTS `leaf_snowflake_layout` (\n" +
	"  `name` varchar(" + layoutNameChars + ") NOT NULL COMMENT '''default'': the global layout, ''tag:<tag>'': a snowflake tag''s',\n" +
	"  `epoch_ms` bigint NOT NULL COMMENT 'unix ms the time bits count from',\n" +
	"  `time_bits` int NOT NULL,\n" +
	"  `worker_bits` int NOT NULL,\n" +
	"  `sequence_bits` int NOT NULL,\n" +
	"  `unit_ns` bigint NOT NULL COMMENT 'length of one tick in ns (1000000 = 1ms)',\n" +
	"  `recorded_by` varchar(255) NOT NULL COMMENT 'host:pid:listen of the process that recorded it',\n" +
	"  `recorded_at` datetime(3) NOT NULL COMMENT 'UTC, by the database clock',\n" +
	"  `description` varchar(256) DEFAULT NULL COMMENT 'of a tag: who created it and how',\n" +
	"  PRIMARY KEY (`name`)\n" +
	") ENGINE=InnoDB DEFAULT CHARSET=" + Charset + " COLLATE=" + Collation

// layoutNameChars is leaf_snowflake_layout.name's width: "tag:" and the
// longest tag.
const layoutNameChars = "132"

// TagLayoutPrefix starts the leaf_snowflake_layout rows of snowflake tags.
const TagLayoutPrefix = "tag:"

// TagLayoutName is the leaf_snowflake_layout row of a snowflake tag.
func TagLayoutName(tag string) string { return TagLayoutPrefix + tag }

// LeafWorkerLayout holds the worker-id leases of snowflake layouts other
// than the store's global one, whose leases stay in leaf_worker (so stores
// used before per-tag layouts keep their rows and high-water marks): one
// row per layout and worker id, with leaf_worker's columns and rules.
// layout is the layout's identity (snowflake.LayoutKey: bits, unit,
// epoch), so every proxy issuing IDs under one layout, for whichever of
// its tags, draws its worker id from the same space: worker ids are unique
// per layout, hence for every tag that uses it.
const LeafWorkerLayout = "CREATE TABLE IF NOT EXISTS `leaf_worker_layout` (\n" +
	"  `layout` varchar(64) NOT NULL COMMENT 'time/worker/sequence bits/unit ns/epoch ms',\n" +
	"  `worker_id` int NOT NULL,\n" +
	"  `owner` varchar(255) NOT NULL,\n" +
	"  `heartbeat` bigint NOT NULL COMMENT 'unix ms of the last renewal, by the database clock',\n" +
	"  `last_timestamp` bigint NOT NULL DEFAULT 0 COMMENT 'unix ms of the last issued tick',\n" +
	"  PRIMARY KEY (`layout`, `worker_id`)\n" +
	") ENGINE=InnoDB DEFAULT CHARSET=" + Charset + " COLLATE=" + Collation

// All is every statement in order.
var All = []string{LeafAlloc, LeafWorker, LeafSnowflakeLayout, LeafWorkerLayout}

// tables are the store's tables, for Migrate.
var tables = []string{"leaf_alloc", "leaf_worker", "leaf_snowflake_layout", "leaf_worker_layout"}

// Ensure creates the tables that are missing and converts existing ones
// to utf8mb4 (see Migrate).
func Ensure(ctx context.Context, db *sql.DB) error {
	if err := Create(ctx, db); err != nil {
		return err
	}
	_, err := Migrate(ctx, db)
	return err
}

// Create creates the tables that are missing.
func Create(ctx context.Context, db *sql.DB) error {
	for _, q := range All {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("create allocation schema: %w", err)
		}
	}
	return nil
}

// Migrate converts store tables created without a charset (Leaf's own DDL,
// or leafproxy before utf8mb4) to utf8mb4_bin, so tags outside latin1 work.
// Idempotent: a table already in that collation is not touched, so a
// restart costs one information_schema read. Existing tags keep their
// rows: every latin1 string has a utf8mb4 form, and a case-insensitive
// primary key has no two rows that differ in case only. It returns the
// tables it converted.
func Migrate(ctx context.Context, db *sql.DB) (converted []string, err error) {
	for _, tb := range tables {
		var coll sql.NullString
		err := db.QueryRowContext(ctx,
			"SELECT TABLE_COLLATION FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", tb).Scan(&coll)
		if err == sql.ErrNoRows {
			continue
		}
		if err != nil {
			return converted, fmt.Errorf("read the collation of %s: %w", tb, err)
		}
		if coll.String == Collation {
			continue
		}
		if _, err := db.ExecContext(ctx, "ALTER TABLE `"+tb+"` CONVERT TO CHARACTER SET "+Charset+" COLLATE "+Collation); err != nil {
			return converted, fmt.Errorf("convert %s from %s to %s (tags outside latin1 need it): %w", tb, coll.String, Collation, err)
		}
		converted = append(converted, tb)
	}
	changed, err := migrateLayoutTable(ctx, db)
	if changed {
		converted = append(converted, "leaf_snowflake_layout (rows of snowflake tags)")
	}
	if err != nil {
		return converted, err
	}
	added, err := migrateMaxValue(ctx, db)
	if added {
		converted = append(converted, "leaf_alloc (max_value column)")
	}
	return converted, err
}

// migrateMaxValue adds leaf_alloc.max_value (NULL: no MAXVALUE) to a
// table made before it (Leaf's DDL, older leafproxy), in place: rows keep
// their values and have no MAXVALUE. Idempotent.
func migrateMaxValue(ctx context.Context, db *sql.DB) (bool, error) {
	var n int
	err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.COLUMNS "+
		"WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'leaf_alloc' AND COLUMN_NAME = 'max_value'").Scan(&n)
	if err != nil {
		return false, fmt.Errorf("read the columns of leaf_alloc: %w", err)
	}
	if n > 0 {
		return false, nil
	}
	var tables int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES "+
		"WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'leaf_alloc'").Scan(&tables); err != nil || tables == 0 {
		return false, err
	}
	if _, err := db.ExecContext(ctx, "ALTER TABLE `leaf_alloc` ADD COLUMN IF NOT EXISTS "+
		"`max_value` bigint(20) DEFAULT NULL COMMENT 'MAXVALUE: no ID above it is handed out; NULL: none'"); err != nil {
		return false, fmt.Errorf("add leaf_alloc.max_value (MAXVALUE of segment tags): %w", err)
	}
	return true, nil
}

// migrateLayoutTable gives a leaf_snowflake_layout made before per-tag
// layouts (name varchar(128), no description) what tag rows need, in one
// ALTER; rows stay as they are. Proxies of that time read only the
// 'default' row, by name, so they go on working beside it. Idempotent.
func migrateLayoutTable(ctx context.Context, db *sql.DB) (bool, error) {
	rows, err := db.QueryContext(ctx, "SELECT COLUMN_NAME, COALESCE(CHARACTER_MAXIMUM_LENGTH, 0) FROM information_schema.COLUMNS "+
		"WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'leaf_snowflake_layout' AND COLUMN_NAME IN ('name', 'description')")
	if err != nil {
		return false, fmt.Errorf("read the columns of leaf_snowflake_layout: %w", err)
	}
	width, described := int64(-1), false
	for rows.Next() {
		var col string
		var n int64
		if err := rows.Scan(&col, &n); err != nil {
			rows.Close()
			return false, fmt.Errorf("read the columns of leaf_snowflake_layout: %w", err)
		}
		if col == "name" {
			width = n
		} else {
			described = true
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return false, fmt.Errorf("read the columns of leaf_snowflake_layout: %w", err)
	}
	var alter []string
	if want, _ := strconv.ParseInt(layoutNameChars, 10, 64); width >= 0 && width < want {
		alter = append(alter, "MODIFY `name` varchar("+layoutNameChars+") NOT NULL")
	}
	if width >= 0 && !described {
		alter = append(alter, "ADD COLUMN `description` varchar(256) DEFAULT NULL")
	}
	if len(alter) == 0 {
		return false, nil
	}
	if _, err := db.ExecContext(ctx, "ALTER TABLE `leaf_snowflake_layout` "+strings.Join(alter, ", ")); err != nil {
		return false, fmt.Errorf("prepare leaf_snowflake_layout for the rows of snowflake tags (%s): %w", strings.Join(alter, ", "), err)
	}
	return true, nil
}

// EnsureTag inserts tag with the given initial step when it is missing.
// Existing rows are left alone: their max_id is history that must not move back.
func EnsureTag(ctx context.Context, db *sql.DB, tag string, step int64, description string) (created bool, err error) {
	return EnsureTagAt(ctx, db, tag, step, 1, description)
}

// EnsureTagAt is EnsureTag with the tag's first ID: a new row gets max_id
// first, so the first segment is [first, first+step). Adopting a table
// that already holds keys starts its tag above them.
func EnsureTagAt(ctx context.Context, db *sql.DB, tag string, step, first int64, description string) (created bool, err error) {
	if err := CheckTag(tag); err != nil {
		return false, err
	}
	res, err := db.ExecContext(ctx,
		"INSERT IGNORE INTO leaf_alloc (biz_tag, max_id, step, description) VALUES (?, ?, ?, ?)",
		tag, max(first, 1), step, description)
	if err != nil {
		return false, fmt.Errorf("create tag %q in leaf_alloc: %w", tag, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// RaiseTag moves tag's max_id up to first when it is lower, in one
// conditional UPDATE (concurrent fetches by other proxies serialise on the
// row lock, and max_id never moves back). It returns max_id as it was and
// as it is now; found is false when the tag has no row.
func RaiseTag(ctx context.Context, db *sql.DB, tag string, first int64) (before, after int64, found bool, err error) {
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return 0, 0, false, fmt.Errorf("raise tag %q: begin: %w", tag, err)
	}
	defer tx.Rollback()
	// The row lock taken here makes the value read the one the UPDATE
	// compares against, so the caller can say exactly what it found.
	if err := tx.QueryRowContext(ctx, "SELECT max_id FROM leaf_alloc WHERE biz_tag = ? FOR UPDATE", tag).Scan(&before); err != nil {
		if err == sql.ErrNoRows {
			return 0, 0, false, nil
		}
		return 0, 0, false, fmt.Errorf("raise tag %q: read max_id: %w", tag, err)
	}
	after = before
	if before < first {
		if _, err := tx.ExecContext(ctx, "UPDATE leaf_alloc SET max_id = ? WHERE biz_tag = ? AND max_id < ?", first, tag, first); err != nil {
			return 0, 0, true, fmt.Errorf("raise tag %q: set max_id to %d: %w", tag, first, err)
		}
		after = first
	}
	if err := tx.Commit(); err != nil {
		return 0, 0, true, fmt.Errorf("raise tag %q: commit: %w", tag, err)
	}
	return before, after, true, nil
}

// MaxTagChars is leaf_alloc.biz_tag's width in characters.
const MaxTagChars = 128

// Error codes of TagNameError, as MySQL reports the same faults in names.
const (
	ErrCodeWrongName   = 1103 // ER_WRONG_TABLE_NAME, 42000
	ErrCodeTooLongName = 1059 // ER_TOO_LONG_IDENT, 42000
	ErrCodeInvalidChar = 1300 // ER_INVALID_CHARACTER_STRING, HY000
)

// TagNameError is a tag name that cannot be stored in leaf_alloc.biz_tag.
// It is refused before any store query, so a bad name costs nothing and
// never becomes a metrics label.
type TagNameError struct {
	Tag  string
	code uint16
}

func (e *TagNameError) Error() string {
	switch e.code {
	case ErrCodeWrongName:
		return "Incorrect table name '' (leafproxy: a sequence (tag) name must not be empty)"
	case ErrCodeTooLongName:
		return fmt.Sprintf("Identifier name '%s...' is too long (leafproxy: a sequence (tag) name has at most %d characters (leaf_alloc.biz_tag), this one %d)",
			truncateRunes(e.Tag, 64), MaxTagChars, utf8.RuneCountInString(e.Tag))
	}
	return fmt.Sprintf("Invalid utf8mb4 character string: '%s' (leafproxy: a sequence (tag) name must be valid UTF-8)", escapeInvalid(e.Tag, 64))
}

func (e *TagNameError) Code() uint16 { return e.code }

func (e *TagNameError) SQLState() string {
	if e.code == ErrCodeInvalidChar {
		return "HY000"
	}
	return "42000"
}

// CheckTag says whether tag can be a row of leaf_alloc: non-empty, valid
// UTF-8, at most MaxTagChars characters. The error is a *TagNameError.
func CheckTag(tag string) error {
	switch {
	case tag == "":
		return &TagNameError{code: ErrCodeWrongName}
	case !utf8.ValidString(tag):
		return &TagNameError{Tag: strings.Clone(tag), code: ErrCodeInvalidChar}
	case utf8.RuneCountInString(tag) > MaxTagChars:
		return &TagNameError{Tag: strings.Clone(tag), code: ErrCodeTooLongName}
	}
	return nil
}

func truncateRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// escapeInvalid shows at most n bytes of s with bytes that are not UTF-8
// as \xNN, so the message itself is valid UTF-8.
func escapeInvalid(s string, n int) string {
	var b strings.Builder
	for i := 0; i < len(s) && i < n; {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			fmt.Fprintf(&b, "\\x%02X", s[i])
			i++
			continue
		}
		b.WriteString(s[i : i+size])
		i += size
	}
	return b.String()
}
