package engine

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/leafproxy/leafproxy/proxy"
	"github.com/leafproxy/leafproxy/rewriter"
)

func TestColMax(t *testing.T) {
	for _, tc := range []struct {
		data, column string
		prec, scale  int64
		max          int64
		ok           bool
	}{
		{"tinyint", "tinyint(4)", 0, 0, 127, true},
		{"tinyint", "tinyint(3) unsigned", 0, 0, 255, true},
		{"smallint", "smallint(6)", 0, 0, 32767, true},
		{"smallint", "smallint(5) unsigned", 0, 0, 65535, true},
		{"mediumint", "mediumint(9)", 0, 0, 8388607, true},
		{"mediumint", "mediumint(8) unsigned", 0, 0, 16777215, true},
		{"int", "int(11)", 0, 0, math.MaxInt32, true},
		{"int", "int(10) unsigned", 0, 0, math.MaxUint32, true},
		{"bigint", "bigint(20)", 0, 0, math.MaxInt64, true},
		{"bigint", "bigint(20) unsigned", 0, 0, math.MaxInt64, true},
		{"decimal", "decimal(10,0)", 10, 0, 9_999_999_999, true},
		{"decimal", "decimal(20,0)", 20, 0, math.MaxInt64, true},
		{"decimal", "decimal(10,2)", 10, 2, 0, false},
		{"varchar", "varchar(20)", 0, 0, 0, false},
	} {
		got, ok := colMax(colType{dataType: tc.data, columnType: tc.column, precision: tc.prec, scale: tc.scale})
		if got != tc.max || ok != tc.ok {
			t.Errorf("%s: %d %v, want %d %v", tc.column, got, ok, tc.max, tc.ok)
		}
	}
}

func TestCheckIDs(t *testing.T) {
	limits := []keyLimit{{tag: "small", max: math.MaxInt32, db: "shop", table: "t", column: "id", typ: "int(11)"}}
	if err := checkIDs(limits, "small", []int64{math.MaxInt32 - 1, math.MaxInt32}, 1); err != nil {
		t.Fatalf("the last value fits: %v", err)
	}
	if err := checkIDs(limits, "other", []int64{math.MaxInt32 + 5}, 1); err != nil {
		t.Fatalf("another tag: %v", err)
	}
	err := checkIDs(limits, "small", []int64{math.MaxInt32, math.MaxInt32 + 1}, 3)
	var se proxy.SQLError
	if !errors.As(err, &se) || se.Code() != 167 || se.SQLState() != "22003" ||
		!strings.HasPrefix(err.Error(), "Out of range value for column 'id' at row 4 (leafproxy: tag 'small'") ||
		!strings.Contains(err.Error(), "shop.t.id int(11)") {
		t.Fatalf("past the end: %v", err)
	}
	b := rewriter.Block{First: math.MaxInt32 - 1, N: 5}
	if err := checkBlock(limits, "small", b); err == nil || !strings.Contains(err.Error(), "at row 3 ") {
		t.Fatalf("block: %v", err)
	}
	if err := checkBlock(limits, "small", rewriter.Block{First: 1, N: 5}); err != nil {
		t.Fatalf("block that fits: %v", err)
	}
}

func TestEndStatements(t *testing.T) {
	for text, want := range map[string]bool{
		"INSERT IGNORE INTO t VALUES (1)":                          true,
		"/* x */ insert low_priority ignore into t (a) values (1)": true,
		"INSERT INTO t VALUES (1)":                                 false,
		"REPLACE INTO t VALUES (1)":                                false,
		"INSERT INTO ignore_me VALUES (1)":                         false,
	} {
		if got := insertIgnore(text); got != want {
			t.Errorf("insertIgnore(%q) = %v", text, got)
		}
	}
	for text, want := range map[string]bool{
		"LOAD DATA LOCAL INFILE 'f' REPLACE INTO TABLE t":               true,
		"load data low_priority local infile 'f''replace' into table t": false,
		"LOAD DATA LOCAL INFILE 'a\\' REPLACE' IGNORE INTO TABLE t":     false,
		"LOAD DATA LOCAL INFILE 'f' INTO TABLE t":                       false,
	} {
		if got := loadReplace(text, true); got != want {
			t.Errorf("loadReplace(%q) = %v", text, got)
		}
	}
	err := &OutOfRangeError{Tag: "t", Column: "id", Row: 1, AllPast: true}
	if w := ignoreWarning("INSERT IGNORE INTO t (b) VALUES (1)", 1, err); w != "SIGNAL SQLSTATE '01000' SET MYSQL_ERRNO = 167, MESSAGE_TEXT = 'Out of range value for column ''id'' at row 1'" {
		t.Errorf("warning: %s", w)
	}
	// Some rows would fit: AUTO_INCREMENT writes them; the proxy refuses.
	if w := ignoreWarning("INSERT IGNORE INTO t (b) VALUES (1), (2)", 1, &OutOfRangeError{Column: "id", Row: 2}); w != "" {
		t.Errorf("straddling: %s", w)
	}
	if w := ignoreWarning("INSERT INTO t (b) VALUES (1)", 1, err); w != "" {
		t.Errorf("not IGNORE: %s", w)
	}
}

// TestQueryPastColumnEnd: through the engine with no proxy, an INT key
// column takes the last value it holds; a statement with a key past it
// is refused with 167 and nothing is relayed; an INSERT IGNORE with
// every key past it is answered by the server's SIGNAL of warning 167.
func TestQueryPastColumnEnd(t *testing.T) {
	rules, err := rewriter.NewRules([]rewriter.Rule{{Table: "orders", Column: "id", Tag: "order"}})
	if err != nil {
		t.Fatal(err)
	}
	e := New(&counter{next: math.MaxInt32 - 2}, rules)
	s := &fakeSession{db: "shop", columns: map[string][][2]string{"orders": {{"id", "int"}, {"item", "varchar"}}}}
	ctx := context.Background()
	if _, err := e.queryText(ctx, s, []byte("INSERT INTO orders (item) VALUES ('a')")); err != nil || len(s.relayed) != 1 ||
		!strings.Contains(s.relayed[0], "2147483646") {
		t.Fatalf("fits: %v %q", err, s.relayed)
	}
	_, err = e.queryText(ctx, s, []byte("INSERT INTO orders (item) VALUES ('b'), ('c')"))
	var oe *OutOfRangeError
	if !errors.As(err, &oe) || oe.Row != 2 || oe.ID != math.MaxInt32+1 || oe.AllPast || len(s.relayed) != 1 {
		t.Fatalf("straddling: %v %q", err, s.relayed)
	}
	_, err = e.queryText(ctx, s, []byte("INSERT IGNORE INTO orders (item) VALUES ('d')"))
	if err != nil || len(s.relayed) != 2 || !strings.HasPrefix(s.relayed[1], "SIGNAL SQLSTATE '01000' SET MYSQL_ERRNO = 167") {
		t.Fatalf("IGNORE past the end: %v %q", err, s.relayed)
	}
	_, err = e.queryText(ctx, s, []byte("REPLACE INTO orders (item) VALUES ('e')"))
	if !errors.As(err, &oe) || oe.Row != 1 || !oe.AllPast || len(s.relayed) != 2 {
		t.Fatalf("REPLACE past the end: %v %q", err, s.relayed)
	}
}

// fitErr is an ID source's 167 at a tag's end that says how many IDs were
// left (segment.PastEndError's Fits).
type fitErr struct{ fit int64 }

func (e fitErr) Error() string    { return "leafproxy: sequence 't' is at its end" }
func (e fitErr) Code() uint16     { return 167 }
func (e fitErr) SQLState() string { return "22003" }
func (e fitErr) Fits() int64      { return e.fit }

// plainEnd says nothing of what was left (a block's: Fits -1, or none).
type plainEnd struct{}

func (plainEnd) Error() string    { return "leafproxy: sequence 't' is at its end" }
func (plainEnd) Code() uint16     { return 167 }
func (plainEnd) SQLState() string { return "22003" }

// TestAtEndRow: the 167 of a statement whose keys do not all fit names the
// first row past the end, as AUTO_INCREMENT's; with none left every key
// is past it (INSERT IGNORE then gets a warning).
func TestAtEndRow(t *testing.T) {
	limits := []keyLimit{{tag: "t", max: 127, db: "d", table: "x", column: "id", typ: "tinyint(4)"}}
	for _, tc := range []struct {
		n       int
		err     error
		row     int
		allPast bool
	}{
		{1, fitErr{0}, 1, true},
		{5, fitErr{0}, 1, true},
		{5, fitErr{2}, 3, false},
		{5, fitErr{4}, 5, false},
		{3, plainEnd{}, 1, false}, // says nothing of what was left
		{3, fitErr{-1}, 1, false},
		{1, fitErr{-1}, 1, true},
	} {
		oe := atEnd(limits, "t", tc.n, tc.err)
		if oe == nil || oe.Row != tc.row || oe.AllPast != tc.allPast {
			t.Errorf("n %d, %v: %+v, want row %d all past %v", tc.n, tc.err, oe, tc.row, tc.allPast)
			continue
		}
		if want := "at row " + strconv.Itoa(tc.row) + " "; !strings.Contains(oe.Error(), want) {
			t.Errorf("n %d: %q lacks %q", tc.n, oe.Error(), want)
		}
	}
	if oe := atEnd(limits, "other", 2, fitErr{1}); oe != nil {
		t.Errorf("a tag without a limit here: %+v", oe)
	}
}
