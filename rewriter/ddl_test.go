package rewriter

import (
	"slices"
	"testing"
)

func TestDDLTargets(t *testing.T) {
	tb := func(db, table string) SchemaRef { return SchemaRef{DB: db, Table: table} }
	for _, tc := range []struct {
		sql  string
		want []SchemaRef
		all  bool
	}{
		{"SELECT 1", nil, false},
		{"INSERT INTO notes (body) VALUES ('see you; create later')", nil, false},
		{"INSERT INTO notes (body) VALUES ('a; DROP TABLE x')", nil, false},
		{"CREATE TABLE t (id INT)", []SchemaRef{tb("", "t")}, false},
		{"create or replace temporary table if not exists shop.`o``rders` (id int)", []SchemaRef{tb("shop", "o`rders")}, false},
		{"CREATE TABLE t2 LIKE t1", []SchemaRef{tb("", "t2")}, false},
		{"CREATE SEQUENCE s", []SchemaRef{tb("", "s")}, false},
		{"CREATE VIEW v AS SELECT * FROM t", []SchemaRef{tb("", "v")}, false},
		{"CREATE ALGORITHM=MERGE VIEW v AS SELECT 1", nil, true},
		{"CREATE UNIQUE INDEX i USING BTREE ON shop.t (a)", []SchemaRef{tb("shop", "t")}, false},
		{"CREATE INDEX IF NOT EXISTS i ON t (a)", []SchemaRef{tb("", "t")}, false},
		{"CREATE DATABASE IF NOT EXISTS shop", []SchemaRef{tb("shop", "")}, false},
		{"DROP SCHEMA `shop`", []SchemaRef{tb("shop", "")}, false},
		{"ALTER TABLE orders ADD c INT", []SchemaRef{tb("", "orders")}, false},
		{"alter online ignore table if exists a.b add c int, drop d", []SchemaRef{tb("a", "b")}, false},
		{"ALTER TABLE orders RENAME TO old_orders", nil, true},
		{"ALTER TABLE orders RENAME COLUMN a TO b", nil, true},
		{"ALTER TABLE orders COMMENT 'rename; later'", []SchemaRef{tb("", "orders")}, false},
		{"ALTER DATABASE shop CHARACTER SET utf8mb4", nil, true},
		{"ALTER USER u IDENTIFIED BY 'x'", nil, true},
		{"DROP TABLE a, shop.b, `c` RESTRICT", []SchemaRef{tb("", "a"), tb("shop", "b"), tb("", "c")}, false},
		{"DROP TEMPORARY TABLE IF EXISTS a", []SchemaRef{tb("", "a")}, false},
		{"DROP INDEX i ON t", []SchemaRef{tb("", "t")}, false},
		{"DROP PROCEDURE p", nil, true},
		{"RENAME TABLE a TO b, shop.c TO shop.d", []SchemaRef{tb("", "a"), tb("", "b"), tb("shop", "c"), tb("shop", "d")}, false},
		{"RENAME TABLE a WAIT 5 TO b", []SchemaRef{tb("", "a"), tb("", "b")}, false},
		{"RENAME TABLE a NOWAIT TO b; SELECT 1", []SchemaRef{tb("", "a"), tb("", "b")}, false},
		{"RENAME USER a TO b", nil, true},
		{"TRUNCATE t", []SchemaRef{tb("", "t")}, false},
		{"truncate table shop.t", []SchemaRef{tb("shop", "t")}, false},
		{"/* c */ -- d\nDROP TABLE t", []SchemaRef{tb("", "t")}, false},
		{"/*!40101 DROP TABLE t */", []SchemaRef{tb("", "t")}, false},
		{"INSERT INTO t VALUES (1); ALTER TABLE u ADD c INT; SELECT ';'", []SchemaRef{tb("", "u")}, false},
		{"SELECT 'x;'; DROP TABLE a; DROP TABLE b", []SchemaRef{tb("", "a"), tb("", "b")}, false},
		{`DROP TABLE "t"`, nil, true}, // a name only under ANSI_QUOTES
		// With backslash escapes the second statement is in the string;
		// under NO_BACKSLASH_ESCAPES it is not: both readings count.
		{`SELECT 'a\'; DROP TABLE t; -- '`, []SchemaRef{tb("", "t")}, false},
		{"CREATE TABLE", nil, true},
	} {
		got, all := DDLTargets(tc.sql)
		if all != tc.all || !slices.Equal(got, tc.want) {
			t.Errorf("DDLTargets(%q) = %v, all %v; want %v, all %v", tc.sql, got, all, tc.want, tc.all)
		}
	}
}
