package engine

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
)

func TestSplitBulkRows(t *testing.T) {
	types := []byte{mysql.MYSQL_TYPE_VAR_STRING, 0, mysql.MYSQL_TYPE_LONGLONG, 0}
	body := []byte{
		0, 3, 'a', 'b', 'c', 0, 1, 0, 0, 0, 0, 0, 0, 0, // row 1: "abc", 1
		1, 0, 2, 0, 0, 0, 0, 0, 0, 0, // row 2: NULL, 2
		2, 3, // row 3: DEFAULT, IGNORE
	}
	rows, err := splitBulkRows(body, types, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("%d rows", len(rows))
	}
	for i, want := range [][]int{{0, 5, 5, 14}, {0, 1, 1, 10}, {0, 1, 1, 2}} {
		got := rows[i].paramRanges
		if len(got) != 4 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || got[3] != want[3] {
			t.Errorf("row %d offsets %v, want %v", i, got, want)
		}
	}
	if rows[1].raw[0] != 1 || len(rows[2].raw) != 2 {
		t.Errorf("rows %+v", rows)
	}
	for name, bad := range map[string][]byte{
		"truncated string":   {0, 9, 'a'},
		"truncated longlong": {0, 0, 'a', 0, 1, 0},
		"missing indicator":  {0, 0},
		"bad indicator":      {4, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		"lenenc overflow":    {0, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
	} {
		if _, err := splitBulkRows(bad, types, 2); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
