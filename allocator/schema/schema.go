// Package schema holds the DDL of the allocation store: Leaf's leaf_alloc
// table for segments and leaf_worker for snowflake worker-id leases. Both
// statements are idempotent; `leafproxy init` and the tests run them.
package schema

import (
	"context"
	"database/sql"
	"fmt"
)

// LeafAlloc is Leaf's table, unchanged, so an existing Leaf deployment's
// table works as it is. The segment a fetch receives is [max_id-step, max_id).
const LeafAlloc = "CREATE TABLE IF NOT EXISTS `leaf_alloc` (\n" +
	"  `biz_tag` varchar(128) NOT NULL DEFAULT '',\n" +
	"  `max_id` bigint(20) NOT NULL DEFAULT '1',\n" +
	"  `step` int(11) NOT NULL,\n" +
	"  `description` varchar(256) DEFAULT NULL,\n" +
	"  `update_time` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,\n" +
	"  PRIMARY KEY (`biz_tag`)\n" +
	") ENGINE=InnoDB"

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
	") ENGINE=InnoDB"

// All is every statement in order.
var All = []string{LeafAlloc, LeafWorker}

// Ensure creates the tables that are missing.
func Ensure(ctx context.Context, db *sql.DB) error {
	for _, q := range All {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("create allocation schema: %w", err)
		}
	}
	return nil
}

// EnsureTag inserts tag with the given initial step when it is missing.
// Existing rows are left alone: their max_id is history that must not move back.
func EnsureTag(ctx context.Context, db *sql.DB, tag string, step int64, description string) (created bool, err error) {
	res, err := db.ExecContext(ctx,
		"INSERT IGNORE INTO leaf_alloc (biz_tag, max_id, step, description) VALUES (?, 1, ?, ?)",
		tag, step, description)
	if err != nil {
		return false, fmt.Errorf("create tag %q in leaf_alloc: %w", tag, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}
