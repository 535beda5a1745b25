package wire

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// allCols is one column of each type.
var allCols = []Column{{"id", TypeBigint}, {"ok", TypeInt}, {"name", TypeVarchar}, {"at", TypeDatetime3}}

// goFields parses the column definitions the proxy writes for cols with
// go-mysql's decoder.
func goFields(t *testing.T, cols []Column) []*mysql.Field {
	t.Helper()
	fs := make([]*mysql.Field, len(cols))
	for i, c := range cols {
		f, err := mysql.FieldData(AppendTypedColumnDef(nil, c, false)).Parse()
		if err != nil {
			t.Fatalf("column %q: %v", c.Name, err)
		}
		fs[i] = f
	}
	return fs
}

// Each type's column definition, as go-mysql reads it: what MariaDB sends
// for a column of that type.
func TestTypedColumnDefs(t *testing.T) {
	for _, c := range []struct {
		col      Column
		charset  uint16
		length   uint32
		typ      byte
		flags    uint16
		decimals byte
	}{
		{Column{"n", TypeBigint}, 63, 20, mysql.MYSQL_TYPE_LONGLONG, mysql.BINARY_FLAG | mysql.NUM_FLAG, 0},
		{Column{"1 = 1", TypeInt}, 63, 1, mysql.MYSQL_TYPE_LONG, mysql.BINARY_FLAG | mysql.NUM_FLAG, 0},
		{Column{"Variable_name", TypeVarchar}, 45, 1024, mysql.MYSQL_TYPE_VAR_STRING, 0, 0},
		{Column{"created_at", TypeDatetime3}, 63, 23, mysql.MYSQL_TYPE_DATETIME, mysql.BINARY_FLAG, 3},
		{Column{strings.Repeat("long_name_", 30), TypeVarchar}, 45, 1024, mysql.MYSQL_TYPE_VAR_STRING, 0, 0},
	} {
		p := AppendTypedColumnDef([]byte("xx"), c.col, false)
		if string(p[:2]) != "xx" {
			t.Fatal("AppendTypedColumnDef overwrote its prefix")
		}
		f, err := mysql.FieldData(p[2:]).Parse()
		if err != nil {
			t.Fatalf("%s: %v", c.col.Name, err)
		}
		if string(f.Name) != c.col.Name || len(f.Schema) != 0 || len(f.Table) != 0 || len(f.OrgTable) != 0 || len(f.OrgName) != 0 ||
			f.Charset != c.charset || f.ColumnLength != c.length || f.Type != c.typ || f.Flag != c.flags ||
			f.Decimal != c.decimals || f.DefaultValue != nil {
			t.Errorf("%s: name %q charset %d length %d type %d flags %#x decimals %d default %q",
				c.col.Name, f.Name, f.Charset, f.ColumnLength, f.Type, f.Flag, f.Decimal, f.DefaultValue)
		}
		if !bytes.HasPrefix(p[2:], []byte("\x03def")) {
			t.Errorf("%s: catalog is not def: %q", c.col.Name, p[2:8])
		}
	}
}

// With MariaDB's extended type info the definition carries one more,
// empty, lenenc string before the fixed fields; nothing else changes.
func TestColumnDefExtTypeInfo(t *testing.T) {
	for _, c := range allCols {
		plain := AppendTypedColumnDef(nil, c, false)
		ext := AppendTypedColumnDef(nil, c, true)
		fixed := len(plain) - 13 // 0x0c and its 12 bytes
		if plain[fixed] != 0x0c {
			t.Fatalf("%s: fixed part not where expected", c.Name)
		}
		want := append(append(bytes.Clone(plain[:fixed]), 0x00), plain[fixed:]...)
		if !bytes.Equal(ext, want) {
			t.Errorf("%s:\n ext %x\nwant %x", c.Name, ext, want)
		}
	}
	// AppendBigintColumnDef (the proxy's older writer) the same way.
	plain := AppendBigintColumnDef(nil, "LAST_INSERT_ID()", false)
	ext := AppendBigintColumnDef(nil, "LAST_INSERT_ID()", true)
	if len(ext) != len(plain)+1 || ext[len(ext)-14] != 0 {
		t.Errorf("bigint column with ext type info: %x", ext)
	}
}

func TestAppendBigintColumnDef(t *testing.T) {
	f, err := mysql.FieldData(AppendBigintColumnDef(nil, "LAST_INSERT_ID()", false)).Parse()
	if err != nil {
		t.Fatal(err)
	}
	if string(f.Name) != "LAST_INSERT_ID()" || f.Type != mysql.MYSQL_TYPE_LONGLONG || f.Charset != 63 ||
		f.ColumnLength != 20 || f.Flag != mysql.BINARY_FLAG || f.Decimal != 0 {
		t.Errorf("%+v", f)
	}
}

var (
	when   = time.Date(2026, 11, 28, 22, 5, 9, 123456789, time.UTC)
	long   = strings.Repeat("ü", 200) // 400 bytes: a 3-byte lenenc length
	sample = [][]Value{
		{IntValue(1), IntValue(1), StringValue("alpha"), TimeValue(when)},
		{IntValue(-42), IntValue(0), StringValue(""), TimeValue(time.Date(2000, 1, 2, 3, 4, 5, 0, time.UTC))},
		{IntValue(math.MaxInt64), IntValue(math.MaxInt32), StringValue(long), NullValue},
		{IntValue(math.MinInt64), IntValue(math.MinInt32), NullValue, TimeValue(time.Date(1970, 1, 1, 0, 0, 0, 999999, time.UTC))},
		{NullValue, NullValue, StringValue("NULL"), TimeValue(time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC))},
	}
	// sampleText is what a client shows for each sample value (nil: NULL).
	sampleText = [][]any{
		{int64(1), int64(1), "alpha", "2026-11-28 22:05:09.123"},
		{int64(-42), int64(0), "", "2000-01-02 03:04:05.000"},
		{int64(math.MaxInt64), int64(math.MaxInt32), long, nil},
		{int64(math.MinInt64), int64(math.MinInt32), nil, "1970-01-01 00:00:00.000"},
		{nil, nil, "NULL", "9999-12-31 23:59:59.999"},
	}
)

// checkRow compares a row go-mysql decoded with the expected values;
// binary datetimes come back with 6 decimals.
func checkRow(t *testing.T, what string, got []mysql.FieldValue, want []any, binary bool) {
	t.Helper()
	for i, w := range want {
		v := got[i]
		switch w := w.(type) {
		case nil:
			if v.Type != mysql.FieldValueTypeNull {
				t.Errorf("%s col %d: %v, want NULL", what, i, v.Value())
			}
		case int64:
			if v.Type != mysql.FieldValueTypeSigned || v.AsInt64() != w {
				t.Errorf("%s col %d: %v (type %d), want %d", what, i, v.Value(), v.Type, w)
			}
		case string:
			if binary && i == 3 {
				w += "000"
			}
			if v.Type != mysql.FieldValueTypeString || string(v.AsString()) != w {
				t.Errorf("%s col %d: %q (type %d), want %q", what, i, v.AsString(), v.Type, w)
			}
		}
	}
}

// Text rows decode with go-mysql's text-protocol reader into the values.
func TestTextRowsDecodeWithGoMySQL(t *testing.T) {
	if err := CheckRows(allCols, sample); err != nil {
		t.Fatal(err)
	}
	fs := goFields(t, allCols)
	var dst []mysql.FieldValue
	for r, row := range sample {
		p := AppendTextRow(nil, allCols, row)
		var err error
		dst, err = mysql.RowData(p).ParseText(fs, dst)
		if err != nil {
			t.Fatalf("row %d: %v", r, err)
		}
		checkRow(t, "text row "+string(rune('0'+r)), dst, sampleText[r], false)
		if IsEOF(p, len(p)) || IsOK(p, len(p)) || IsErr(p) {
			t.Errorf("text row %d is classified as a status packet", r)
		}
	}
	// Exact bytes of one row: lenenc strings, NULL as 0xFB.
	got := AppendTextRow(nil, allCols, []Value{IntValue(-7), NullValue, StringValue("ab"), TimeValue(when)})
	want := append([]byte("\x02-7\xfb\x02ab\x17"), "2026-11-28 22:05:09.123"...)
	if !bytes.Equal(got, want) {
		t.Errorf("text row %q, want %q", got, want)
	}
}

// Binary rows decode with go-mysql's binary-protocol reader (NULL bitmap
// at offset 2) into the values.
func TestBinaryRowsDecodeWithGoMySQL(t *testing.T) {
	fs := goFields(t, allCols)
	var dst []mysql.FieldValue
	for r, row := range sample {
		p := AppendBinaryRow(nil, allCols, row)
		var err error
		dst, err = mysql.RowData(p).ParseBinary(fs, dst)
		if err != nil {
			t.Fatalf("row %d: %v", r, err)
		}
		checkRow(t, "binary row "+string(rune('0'+r)), dst, sampleText[r], true)
		if IsEOF(p, len(p)) || IsErr(p) {
			t.Errorf("binary row %d is classified as EOF or ERR", r)
		}
	}
	// Exact bytes: header, bitmap (bit 2+i), LONGLONG, LONG, lenenc, DATETIME.
	got := AppendBinaryRow(nil, allCols, []Value{IntValue(-2), IntValue(7), NullValue, TimeValue(when)})
	want := []byte{0x00, 1 << 4, 0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 7, 0, 0, 0,
		11, 0xEA, 0x07, 11, 28, 22, 5, 9, 0x78, 0xE0, 0x01, 0x00} // 2026; 123000 µs
	if !bytes.Equal(got, want) {
		t.Errorf("binary row\n got %x\nwant %x", got, want)
	}
}

// The binary row's NULL bitmap is (n+7+2)/8 bytes, column i at bit i+2,
// for every width across byte boundaries; go-mysql agrees on each NULL.
func TestBinaryRowNullBitmap(t *testing.T) {
	for n := 1; n <= 17; n++ {
		cols := make([]Column, n)
		for i := range cols {
			cols[i] = Column{Name: "c", Type: TypeInt}
		}
		fs := goFields(t, cols)
		for _, pattern := range []func(int) bool{
			func(int) bool { return true },
			func(int) bool { return false },
			func(i int) bool { return i%2 == 0 },
			func(i int) bool { return i == n-1 },
		} {
			row := make([]Value, n)
			nonNull := 0
			for i := range row {
				if pattern(i) {
					row[i] = NullValue
				} else {
					row[i] = IntValue(int64(i + 100))
					nonNull++
				}
			}
			p := AppendBinaryRow(nil, cols, row)
			bl := (n + 9) / 8
			if len(p) != 1+bl+4*nonNull {
				t.Fatalf("%d columns: row of %d bytes, want %d", n, len(p), 1+bl+4*nonNull)
			}
			for i := 0; i < 8*bl; i++ {
				set := p[1+i/8]&(1<<(i%8)) != 0
				want := i >= 2 && i-2 < n && pattern(i-2)
				if set != want {
					t.Fatalf("%d columns: bitmap %08b bit %d is %v", n, p[1:1+bl], i, set)
				}
			}
			vals, err := mysql.RowData(p).ParseBinary(fs, nil)
			if err != nil {
				t.Fatalf("%d columns: %v", n, err)
			}
			for i, v := range vals {
				if (v.Type == mysql.FieldValueTypeNull) != pattern(i) || !pattern(i) && v.AsInt64() != int64(i+100) {
					t.Errorf("%d columns: go-mysql reads column %d as %v", n, i, v.Value())
				}
			}
		}
	}
}

// DATETIME(3) values: the wall clock in the time's own location,
// nanoseconds truncated (not rounded) to milliseconds, fields zero-padded;
// the binary form carries the same milliseconds as microseconds.
func TestDatetime3Encoding(t *testing.T) {
	kolkata := time.FixedZone("IST", 5*3600+1800)
	col := []Column{{"t", TypeDatetime3}}
	for _, c := range []struct {
		t    time.Time
		text string
		bin  []byte // after the length byte 11
	}{
		{when, "2026-11-28 22:05:09.123", []byte{0xEA, 0x07, 11, 28, 22, 5, 9, 0x78, 0xE0, 0x01, 0}},
		{when.In(kolkata), "2026-11-29 03:35:09.123", []byte{0xEA, 0x07, 11, 29, 3, 35, 9, 0x78, 0xE0, 0x01, 0}},
		{time.Date(2024, 2, 29, 23, 59, 59, 999999999, time.UTC), "2024-02-29 23:59:59.999", []byte{0xE8, 0x07, 2, 29, 23, 59, 59, 0x58, 0x3E, 0x0F, 0}},
		{time.Date(1, 1, 1, 0, 0, 0, 1e6, time.UTC), "0001-01-01 00:00:00.001", []byte{1, 0, 1, 1, 0, 0, 0, 0xE8, 0x03, 0, 0}},
		{time.Date(987, 6, 5, 4, 3, 2, 50e6, time.UTC), "0987-06-05 04:03:02.050", []byte{0xDB, 0x03, 6, 5, 4, 3, 2, 0x50, 0xC3, 0, 0}},
	} {
		text := AppendTextRow(nil, col, []Value{TimeValue(c.t)})
		if want := append([]byte{byte(len(c.text))}, c.text...); !bytes.Equal(text, want) {
			t.Errorf("%v: text %q, want %q", c.t, text, want)
		}
		bin := AppendBinaryRow(nil, col, []Value{TimeValue(c.t)})
		if want := append([]byte{0, 0, 11}, c.bin...); !bytes.Equal(bin, want) {
			t.Errorf("%v: binary %x, want %x", c.t, bin, want)
		}
	}
}

func TestCheckRows(t *testing.T) {
	for _, c := range []struct {
		name string
		cols []Column
		rows [][]Value
		err  string
	}{
		{"all kinds", allCols, sample, ""},
		{"no rows", allCols, nil, ""},
		{"NULL anywhere", allCols, [][]Value{{NullValue, NullValue, NullValue, NullValue}}, ""},
		{"untyped column", []Column{{"x", 0}}, nil, `proxy: result column "x" has no type`},
		{"type past the last", []Column{{"y", TypeDatetime3 + 1}}, nil, `proxy: result column "y" has no type`},
		{"short row", allCols, [][]Value{sample[0], sample[1][:3]}, "proxy: result row 1 has 3 values for 4 columns"},
		{"long row", allCols[:1], [][]Value{{IntValue(1), IntValue(2)}}, "proxy: result row 0 has 2 values for 1 columns"},
		{"string in an int column", allCols[1:2], [][]Value{{StringValue("1")}}, `proxy: result column "ok": a string value`},
		{"int in a varchar column", allCols[2:3], [][]Value{{IntValue(1)}}, `proxy: result column "name": an integer value`},
		{"int in a datetime column", allCols[3:], [][]Value{{IntValue(1)}}, `proxy: result column "at": an integer value`},
		{"time in a bigint column", allCols[:1], [][]Value{{TimeValue(when)}}, `proxy: result column "id": a time value`},
	} {
		err := CheckRows(c.cols, c.rows)
		if c.err == "" && err != nil || c.err != "" && (err == nil || err.Error() != c.err) {
			t.Errorf("%s: %v, want %q", c.name, err, c.err)
		}
	}
}

func TestValueAccessors(t *testing.T) {
	if !NullValue.IsNull() || !(Value{}).IsNull() || IntValue(0).IsNull() || StringValue("").IsNull() || TimeValue(time.Time{}).IsNull() {
		t.Error("IsNull wrong")
	}
	if v := IntValue(-5); v.Int() != -5 || v.String() != "" || !v.Time().IsZero() {
		t.Errorf("IntValue: %d %q %v", v.Int(), v.String(), v.Time())
	}
	if v := StringValue("s"); v.String() != "s" || v.Int() != 0 {
		t.Errorf("StringValue: %q %d", v.String(), v.Int())
	}
	if v := TimeValue(when); !v.Time().Equal(when) || v.Int() != 0 {
		t.Errorf("TimeValue: %v", v.Time())
	}
}
