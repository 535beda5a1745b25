package wire

import (
	"bytes"
	"errors"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// execPkt is a COM_STMT_EXECUTE of statement 7 with flags 1 and the given
// tail (bitmap, bound flag, types, values).
func execPkt(tail ...byte) []byte {
	return append([]byte{mysql.COM_STMT_EXECUTE, 7, 0, 0, 0, 1, 1, 0, 0, 0}, tail...)
}

func TestParseExecute(t *testing.T) {
	longlong := []byte{mysql.MYSQL_TYPE_LONGLONG, 0}
	cases := []struct {
		name    string
		pkt     []byte
		n       int
		types   []byte // the ones last bound
		what    string // ExecuteError.What; "" no error
		bitmap  []byte
		bound   bool
		wantTyp []byte
		values  []byte
	}{
		{name: "empty", pkt: nil, what: "short header"},
		{name: "short header", pkt: execPkt()[:9], what: "short header"},
		{name: "no parameters", pkt: execPkt(), values: []byte{}},
		{name: "no parameters, bytes after", pkt: execPkt(5), values: []byte{5}},
		{name: "no bitmap", pkt: execPkt(), n: 1, what: "NULL bitmap"},
		{name: "bitmap without flag", pkt: execPkt(0), n: 1, what: "NULL bitmap"},
		{name: "bitmap of 9 parameters short", pkt: execPkt(0, 0), n: 9, what: "NULL bitmap"},
		{name: "types short", pkt: execPkt(0, 1, mysql.MYSQL_TYPE_LONGLONG), n: 1, what: "parameter types"},
		{name: "types of 2 short", pkt: execPkt(0, 1, 8, 0, 8), n: 2, what: "parameter types"},
		{name: "no types ever", pkt: execPkt(0, 0), n: 1, what: "no parameter types were ever sent for this statement"},
		{name: "earlier types of another count", pkt: execPkt(0, 0), n: 2, types: longlong, what: "no parameter types were ever sent for this statement"},
		{name: "types sent", pkt: execPkt(0, 1, 8, 0, 1, 2, 3, 4, 5, 6, 7, 8), n: 1,
			bitmap: []byte{0}, bound: true, wantTyp: longlong, values: []byte{1, 2, 3, 4, 5, 6, 7, 8}},
		{name: "earlier types", pkt: execPkt(0, 0, 9), n: 1, types: longlong,
			bitmap: []byte{0}, wantTyp: longlong, values: []byte{9}},
		{name: "flag other than 1: not bound", pkt: execPkt(1, 2), n: 1, types: longlong,
			bitmap: []byte{1}, wantTyp: longlong, values: []byte{}},
		{name: "types sent win over earlier", pkt: execPkt(0, 1, mysql.MYSQL_TYPE_TINY, 0x80, 3), n: 1, types: longlong,
			bitmap: []byte{0}, bound: true, wantTyp: []byte{mysql.MYSQL_TYPE_TINY, 0x80}, values: []byte{3}},
		{name: "9 parameters", pkt: execPkt(append([]byte{0xFF, 1, 1}, bytes.Repeat([]byte{6, 0}, 9)...)...), n: 9,
			bitmap: []byte{0xFF, 1}, bound: true, wantTyp: bytes.Repeat([]byte{6, 0}, 9), values: []byte{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ex, err := ParseExecute(c.pkt, c.n, c.types)
			if c.what != "" {
				var ee *ExecuteError
				if !errors.As(err, &ee) || ee.What != c.what {
					t.Fatalf("err = %v, want ExecuteError %q", err, c.what)
				}
				if got := err.Error(); got != "malformed COM_STMT_EXECUTE ("+c.what+")" {
					t.Errorf("message %q", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ex.StmtID != 7 || ex.Flags != 1 {
				t.Errorf("stmt %d flags %d, want 7 and 1", ex.StmtID, ex.Flags)
			}
			if !bytes.Equal(ex.NullBitmap, c.bitmap) || ex.NewParamsBound != c.bound ||
				!bytes.Equal(ex.Types, c.wantTyp) || !bytes.Equal(ex.Values, c.values) {
				t.Errorf("got bitmap %v bound %v types %v values %v, want %v %v %v %v",
					ex.NullBitmap, ex.NewParamsBound, ex.Types, ex.Values, c.bitmap, c.bound, c.wantTyp, c.values)
			}
		})
	}
}

func TestParamLen(t *testing.T) {
	long300 := append([]byte{0xFC, 0x2C, 0x01}, make([]byte, 300)...)
	cases := []struct {
		typ  byte
		v    []byte
		want int // -1: ValueError
	}{
		{mysql.MYSQL_TYPE_NULL, nil, 0},
		{mysql.MYSQL_TYPE_TINY, []byte{1}, 1},
		{mysql.MYSQL_TYPE_TINY, nil, -1},
		{mysql.MYSQL_TYPE_SHORT, []byte{1, 2, 3}, 2},
		{mysql.MYSQL_TYPE_SHORT, []byte{1}, -1},
		{mysql.MYSQL_TYPE_YEAR, []byte{1, 2}, 2},
		{mysql.MYSQL_TYPE_YEAR, []byte{1}, -1},
		{mysql.MYSQL_TYPE_LONG, []byte{1, 2, 3, 4}, 4},
		{mysql.MYSQL_TYPE_LONG, []byte{1, 2, 3}, -1},
		{mysql.MYSQL_TYPE_INT24, []byte{1, 2, 3, 4}, 4},
		{mysql.MYSQL_TYPE_INT24, []byte{1, 2, 3}, -1},
		{mysql.MYSQL_TYPE_FLOAT, []byte{1, 2, 3, 4}, 4},
		{mysql.MYSQL_TYPE_FLOAT, []byte{1, 2}, -1},
		{mysql.MYSQL_TYPE_LONGLONG, make([]byte, 8), 8},
		{mysql.MYSQL_TYPE_LONGLONG, make([]byte, 7), -1},
		{mysql.MYSQL_TYPE_DOUBLE, make([]byte, 9), 8},
		{mysql.MYSQL_TYPE_DOUBLE, make([]byte, 7), -1},
		{mysql.MYSQL_TYPE_DATE, []byte{0}, 1},
		{mysql.MYSQL_TYPE_DATE, []byte{4, 1, 2, 3, 4}, 5},
		{mysql.MYSQL_TYPE_DATE, []byte{4, 1, 2, 3}, -1},
		{mysql.MYSQL_TYPE_DATE, nil, -1},
		{mysql.MYSQL_TYPE_DATETIME, []byte{7, 1, 2, 3, 4, 5, 6, 7}, 8},
		{mysql.MYSQL_TYPE_TIMESTAMP, []byte{11, 1}, -1},
		{mysql.MYSQL_TYPE_TIME, []byte{8, 0, 1, 0, 0, 0, 2, 3, 4}, 9},
		{mysql.MYSQL_TYPE_VAR_STRING, []byte{3, 'a', 'b', 'c', 'd'}, 4},
		{mysql.MYSQL_TYPE_VAR_STRING, []byte{3, 'a', 'b'}, -1},
		{mysql.MYSQL_TYPE_VAR_STRING, nil, -1},
		{mysql.MYSQL_TYPE_STRING, []byte{0xFB}, -1}, // lenenc NULL
		{mysql.MYSQL_TYPE_BLOB, long300, 303},
		{mysql.MYSQL_TYPE_BLOB, long300[:302], -1},
		{mysql.MYSQL_TYPE_BLOB, []byte{0xFC, 1}, -1}, // length cut
		{mysql.MYSQL_TYPE_NEWDECIMAL, []byte{2, '4', '2'}, 3},
	}
	for _, c := range cases {
		got, err := ParamLen(c.v, c.typ)
		if c.want < 0 {
			var ve *ValueError
			if !errors.As(err, &ve) || ve.Type != c.typ {
				t.Errorf("type %d %v: err = %v, want ValueError", c.typ, c.v, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("type %d %v: %d, %v; want %d", c.typ, c.v, got, err, c.want)
		}
	}
	if got := (&ValueError{Type: 8}).Error(); got != "malformed statement parameters (value of type 8)" {
		t.Errorf("message %q", got)
	}
}

func TestParamOffsets(t *testing.T) {
	// Parameters: TINY 5, NULL (bitmap), LONGLONG sent as long data,
	// VAR_STRING "hi", DOUBLE.
	types := []byte{mysql.MYSQL_TYPE_TINY, 0, mysql.MYSQL_TYPE_LONG, 0, mysql.MYSQL_TYPE_LONGLONG, 0,
		mysql.MYSQL_TYPE_VAR_STRING, 0, mysql.MYSQL_TYPE_DOUBLE, 0}
	values := []byte{5, 2, 'h', 'i', 1, 2, 3, 4, 5, 6, 7, 8}
	pkt := execPkt(append(append([]byte{0x02, 1}, types...), values...)...)
	long := []bool{false, false, true, false, false}
	ex, err := ParseExecute(pkt, 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	offs, err := ex.ParamOffsets(5, long, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []int{0, 1, 1, 1, 1, 1, 1, 4, 4, 12}
	if !bytes.Equal(intBytes(offs), intBytes(want)) {
		t.Errorf("offsets %v, want %v", offs, want)
	}
	if !ex.Null(1) || ex.Null(0) || ex.Null(2) {
		t.Errorf("Null: bitmap %v read wrong", ex.NullBitmap)
	}

	bad := []struct {
		name string
		tail []byte // values
		err  string
	}{
		{"a byte after", append(bytes.Clone(values), 0), "malformed COM_STMT_EXECUTE (1 bytes after the parameter values)"},
		{"the double cut", values[:11], "malformed statement parameters (value of type 5)"},
		{"the string cut", values[:3], "malformed statement parameters (value of type 253)"},
		{"no values", nil, "malformed statement parameters (value of type 1)"},
	}
	for _, c := range bad {
		pkt := execPkt(append(append([]byte{0x02, 1}, types...), c.tail...)...)
		ex, err := ParseExecute(pkt, 5, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ex.ParamOffsets(5, long, nil); err == nil || err.Error() != c.err {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.err)
		}
	}
	// Without long data (nil), the LONGLONG's 8 bytes are in the values.
	pkt = execPkt(0, 1, mysql.MYSQL_TYPE_LONGLONG, 0, 1, 0, 0, 0, 0, 0, 0, 0)
	ex, _ = ParseExecute(pkt, 1, nil)
	if offs, err := ex.ParamOffsets(1, nil, offs); err != nil || len(offs) != 2 || offs[1] != 8 {
		t.Errorf("one LONGLONG: %v, %v", offs, err)
	}
}

func intBytes(v []int) []byte {
	b := make([]byte, len(v))
	for i, x := range v {
		b[i] = byte(x)
	}
	return b
}

func TestExecuteFlags(t *testing.T) {
	for _, c := range []struct {
		pkt  []byte
		want byte
	}{{nil, 0}, {[]byte{0x17, 1, 0, 0, 0}, 0}, {[]byte{0x17, 1, 0, 0, 0, 4}, 4}, {execPkt(), 1}} {
		if got := ExecuteFlags(c.pkt); got != c.want {
			t.Errorf("ExecuteFlags(%v) = %d, want %d", c.pkt, got, c.want)
		}
	}
}
