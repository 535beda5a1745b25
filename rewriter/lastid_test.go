package rewriter

import (
	"slices"
	"strings"
	"testing"
)

// WrapLast says whether the first generated key (the one in
// LAST_INSERT_ID(...)) is in the statement's last row: only then does a
// failure after it ran mean no row with a generated key was written, so
// the engine restores LAST_INSERT_ID(). Fast path and parser path alike,
// text and prepared.
func TestWrapLast(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want bool
	}{
		{"INSERT INTO orders (name) VALUES ('a')", true},
		{"INSERT INTO orders (name) VALUES ('a'), ('b')", false},
		{"INSERT INTO orders (id, name) VALUES (NULL, 'a')", true},
		{"INSERT INTO orders (id, name) VALUES (5, 'a'), (NULL, 'b')", true},
		{"INSERT INTO orders (id, name) VALUES (NULL, 'a'), (5, 'b')", false},
		{"INSERT INTO orders (id, name) VALUES (5, 'a'), (NULL, 'b'), (6, 'c')", false},
		{"INSERT INTO orders SET name = 'a'", true},
		{"INSERT INTO orders SET id = NULL, name = 'a'", true},
		{"INSERT INTO orders VALUES (NULL, 'a', 'b')", true},
		{"INSERT INTO orders VALUES (NULL, 'a', 'b'), (NULL, 'c', 'd')", false},
		{"INSERT INTO orders () VALUES ()", true},
		{"INSERT INTO orders () VALUES (), ()", false},
		{"INSERT INTO orders (name) VALUES ('a') /* parser */ ON DUPLICATE KEY UPDATE name = CONCAT(name, '(')", true},
		{"INSERT INTO orders (id, name) VALUES (NEXTVAL('order'), 'a'), (7, 'b')", false},
		{"INSERT INTO orders (id, name) VALUES (7, 'a'), (NEXTVAL('order'), 'b')", true},
	} {
		for _, prepared := range []bool{false, true} {
			var p Plan
			var err error
			if prepared {
				p, err = PlanPrepare(tc.sql, testEnv(t, Mode{}))
			} else {
				p, err = PlanQuery(tc.sql, testEnv(t, Mode{}))
			}
			if err != nil {
				t.Fatalf("%s: %v", tc.sql, err)
			}
			if p.Kind != Rewrite || p.WrapLast != tc.want {
				t.Errorf("%s (prepared %v): %v plan, WrapLast %v, want %v", tc.sql, prepared, p.Kind, p.WrapLast, tc.want)
			}
		}
	}
	if got := RestoreLastInsertID(1001); got != "DO LAST_INSERT_ID(IF(LAST_INSERT_ID() = 1001, @__leaf_l, LAST_INSERT_ID()))" {
		t.Fatalf("RestoreLastInsertID: %s", got)
	}
}

// WrapMarked: when the wrapped key is not in the last row, the row after
// it opens its generated key with the marker (a client's ? or an explicit
// key in an IF), so that after an ERR the engine tells whether the wrapped
// key's row was written; a key that is not positive has no marker.
func TestWrapMarked(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want bool
	}{
		{"INSERT INTO orders (name) VALUES ('a')", false},
		{"INSERT INTO orders (name) VALUES ('a'), ('b')", true},
		{"INSERT INTO orders (name) VALUES ('a'), ('b'), ('c')", true},
		{"INSERT INTO orders (id, name) VALUES (NULL, 'a'), (5, 'b')", true},
		{"INSERT INTO orders (id, name) VALUES (NULL, 'a'), ('5', 'b'), (NULL, 'c')", true},
		{"INSERT INTO orders (id, name) VALUES (NULL, 'a'), (-5, 'b'), (NULL, 'c')", false},
		{"INSERT INTO orders (id, name) VALUES (5, 'a'), (NULL, 'b'), (NULL, 'c')", true},
		{"INSERT INTO orders (id, name) VALUES (NULL, CONCAT('(', ')')), (NULL, (SELECT 1))", true},
		{"INSERT INTO orders () VALUES (), ()", true},
		{"INSERT INTO orders (id, name) VALUES (NEXTVAL('order'), 'a'), (NULL, 'b')", true},
	} {
		for _, prepared := range []bool{false, true} {
			var p Plan
			var err error
			if prepared {
				p, err = PlanPrepare(tc.sql, testEnv(t, Mode{}))
			} else {
				p, err = PlanQuery(tc.sql, testEnv(t, Mode{}))
			}
			if err != nil {
				t.Fatalf("%s: %v", tc.sql, err)
			}
			if p.Kind != Rewrite || p.WrapMarked != tc.want {
				t.Errorf("%s (prepared %v): %v plan, WrapMarked %v, want %v", tc.sql, prepared, p.Kind, p.WrapMarked, tc.want)
			}
			if n := strings.Count(string(p.mustRender(t, nil, tc.sql, make([]int64, len(p.Slots)))), "@__leaf_m"); (n == 1) != tc.want || n > 1 {
				t.Errorf("%s (prepared %v): %d markers", tc.sql, prepared, n)
			}
		}
	}
	if got := RestoreLastInsertIDAfterError(1001); got != "DO LAST_INSERT_ID(IF(LAST_INSERT_ID() = 1001 AND NOT @__leaf_m <=> 1001, @__leaf_l, LAST_INSERT_ID()))" {
		t.Fatalf("RestoreLastInsertIDAfterError: %s", got)
	}
}

// StmtKeys: per statement of a multi-statement text, the last key of an
// INSERT whose rows all give their keys, the insert id of its OK.
func TestStmtKeys(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want []int64
	}{
		{"INSERT INTO orders (id, name) VALUES (100, 'a'); INSERT INTO orders (id, name) VALUES (101, 'b')", []int64{100, 101}},
		{"SELECT 1; INSERT INTO orders (id, name) VALUES (7, 'a'), (9, 'b'); INSERT INTO orders (name) VALUES ('c')", []int64{0, 9, 0}},
		{"INSERT INTO orders (id, name) VALUES (7, 'a'); CALL p()", nil},
		{"INSERT INTO orders (id, name) VALUES (7, 'a'); SET STATEMENT max_statement_time=1 FOR CALL p()", nil},
		{"SET @a = 1; INSERT INTO orders (id, name) VALUES (7, 'a')", []int64{0, 7}},
		{"INSERT INTO orders (id, name) VALUES (7, 'a')", nil},
		{"INSERT INTO orders (id, name) VALUES (-7, 'a'); SELECT 1", []int64{-7, 0}},
		{"INSERT INTO orders (id, name) VALUES (0, 'a'); SELECT 1", nil},
		{"SELECT 1; SELECT 2", nil},
	} {
		p, err := PlanQuery(tc.sql, testEnv(t, Mode{}))
		if err != nil {
			t.Fatalf("%s: %v", tc.sql, err)
		}
		if !slices.Equal(p.StmtKeys, tc.want) {
			t.Errorf("%s: StmtKeys %v, want %v", tc.sql, p.StmtKeys, tc.want)
		}
	}
}
