package wire

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// ColumnType is the MySQL type of a column in a result set the proxy
// writes itself (WriteRows, WriteBinaryRows).
type ColumnType uint8

const (
	// TypeBigint is a signed BIGINT; its values are IntValue.
	TypeBigint ColumnType = iota + 1
	// TypeInt is a signed INT, written with display length 1 as MariaDB
	// types a boolean expression (`SELECT 1 = 1`); its values are IntValue
	// within 32 bits.
	TypeInt
	// TypeVarchar is a VARCHAR in utf8mb4 (as the proxy's SHOW statements
	// write); its values are StringValue.
	TypeVarchar
	// TypeDatetime3 is a DATETIME(3); its values are TimeValue, written as
	// the time's wall clock in its own location (convert to UTC first for
	// UTC), truncated to milliseconds: text 'YYYY-MM-DD HH:MM:SS.fff',
	// binary MYSQL_TYPE_DATETIME.
	TypeDatetime3
)

// Column is one column of a result set the proxy writes.
type Column struct {
	Name string
	Type ColumnType
}

// Value is one field of a row the proxy writes: NULL (the zero Value), an
// integer, a string or a time, matching its column's type.
type Value struct {
	kind valueKind
	i    int64
	s    string
	t    time.Time
}

type valueKind uint8

const (
	vNull valueKind = iota
	vInt
	vString
	vTime
)

// NullValue is SQL NULL in any column.
var NullValue = Value{}

// IntValue is an integer for a TypeBigint or TypeInt column.
func IntValue(v int64) Value { return Value{kind: vInt, i: v} }

// StringValue is a string for a TypeVarchar column.
func StringValue(s string) Value { return Value{kind: vString, s: s} }

// TimeValue is a time for a TypeDatetime3 column.
func TimeValue(t time.Time) Value { return Value{kind: vTime, t: t} }

// IsNull reports whether v is NULL.
func (v Value) IsNull() bool { return v.kind == vNull }

// Int, String and Time return v's content (zero for another kind).
func (v Value) Int() int64      { return v.i }
func (v Value) String() string  { return v.s }
func (v Value) Time() time.Time { return v.t }
func (v Value) kindName() string {
	return [...]string{"NULL", "an integer", "a string", "a time"}[v.kind]
}
func (c ColumnType) want() valueKind { return [...]valueKind{0, vInt, vInt, vString, vTime}[c] }

// CheckRows says what is wrong with a result set of cols and rows: a
// column without a type, a row of another width, a value that does not
// match its column's type (a caller bug).
func CheckRows(cols []Column, rows [][]Value) error {
	for _, c := range cols {
		if c.Type < TypeBigint || c.Type > TypeDatetime3 {
			return fmt.Errorf("proxy: result column %q has no type", c.Name)
		}
	}
	for r, row := range rows {
		if len(row) != len(cols) {
			return fmt.Errorf("proxy: result row %d has %d values for %d columns", r, len(row), len(cols))
		}
		for i, v := range row {
			if v.kind != vNull && v.kind != cols[i].Type.want() {
				return fmt.Errorf("proxy: result column %q: %s value", cols[i].Name, v.kindName())
			}
		}
	}
	return nil
}

// AppendTypedColumnDef appends the column definition MariaDB would send
// for a column of c's type.
func AppendTypedColumnDef(p []byte, c Column, ext bool) []byte {
	switch c.Type {
	case TypeBigint:
		return AppendColumnDefDec(p, c.Name, ext, 63, 20, mysql.MYSQL_TYPE_LONGLONG, mysql.BINARY_FLAG|mysql.NUM_FLAG, 0)
	case TypeInt:
		return AppendColumnDefDec(p, c.Name, ext, 63, 1, mysql.MYSQL_TYPE_LONG, mysql.BINARY_FLAG|mysql.NUM_FLAG, 0)
	case TypeDatetime3:
		// 'YYYY-MM-DD HH:MM:SS.fff': 23 characters, 3 decimals.
		return AppendColumnDefDec(p, c.Name, ext, 63, 23, mysql.MYSQL_TYPE_DATETIME, mysql.BINARY_FLAG, 3)
	}
	// utf8mb4_general_ci, as WriteTextResultSet's columns.
	return AppendColumnDefDec(p, c.Name, ext, 45, 1024, mysql.MYSQL_TYPE_VAR_STRING, 0, 0)
}

// AppendColumnDefDec is appendColumnDef with a decimals byte.
func AppendColumnDefDec(p []byte, name string, ext bool, charset uint16, length uint32, typ byte, flags uint16, decimals byte) []byte {
	p = AppendColumnDef(p, name, ext, charset, length, typ, flags)
	p[len(p)-3] = decimals // the fixed part ends: decimals, 2 bytes filler
	return p
}

// AppendTextRow appends a text-protocol row: each value a length-encoded
// string, NULL as 0xFB.
func AppendTextRow(p []byte, cols []Column, row []Value) []byte {
	for i, v := range row {
		if v.kind == vNull {
			p = append(p, 0xFB)
			continue
		}
		switch cols[i].Type {
		case TypeBigint, TypeInt:
			var num [20]byte
			txt := strconv.AppendInt(num[:0], v.i, 10)
			p = append(p, byte(len(txt)))
			p = append(p, txt...)
		case TypeVarchar:
			p = mysql.AppendLengthEncodedInteger(p, uint64(len(v.s)))
			p = append(p, v.s...)
		case TypeDatetime3:
			var buf [32]byte
			txt := appendDatetime3(buf[:0], v.t)
			p = append(p, byte(len(txt)))
			p = append(p, txt...)
		}
	}
	return p
}

// appendDatetime3 formats t as 'YYYY-MM-DD HH:MM:SS.fff' (its wall clock,
// milliseconds truncated), as MariaDB prints a DATETIME(3).
func appendDatetime3(p []byte, t time.Time) []byte {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	ms := t.Nanosecond() / 1e6
	pad := func(v, width int) {
		var digits [8]byte
		for i := width - 1; i >= 0; i-- {
			digits[i] = byte('0' + v%10)
			v /= 10
		}
		p = append(p, digits[:width]...)
	}
	pad(y, 4)
	p = append(p, '-')
	pad(int(mo), 2)
	p = append(p, '-')
	pad(d, 2)
	p = append(p, ' ')
	pad(h, 2)
	p = append(p, ':')
	pad(mi, 2)
	p = append(p, ':')
	pad(s, 2)
	p = append(p, '.')
	pad(ms, 3)
	return p
}

// AppendBinaryRow appends a binary-protocol row: header 0x00, the NULL
// bitmap (offset 2), then each non-NULL value in its type's binary form.
func AppendBinaryRow(p []byte, cols []Column, row []Value) []byte {
	p = append(p, 0x00)
	start := len(p)
	for range (len(cols) + 7 + 2) / 8 {
		p = append(p, 0)
	}
	for i, v := range row {
		if v.kind == vNull {
			bit := i + 2
			p[start+bit/8] |= 1 << (bit % 8)
			continue
		}
		switch cols[i].Type {
		case TypeBigint:
			p = binary.LittleEndian.AppendUint64(p, uint64(v.i))
		case TypeInt:
			p = binary.LittleEndian.AppendUint32(p, uint32(int32(v.i)))
		case TypeVarchar:
			p = mysql.AppendLengthEncodedInteger(p, uint64(len(v.s)))
			p = append(p, v.s...)
		case TypeDatetime3:
			p = appendBinaryDatetime(p, v.t)
		}
	}
	return p
}

// appendBinaryDatetime appends MYSQL_TYPE_DATETIME's binary form: a length
// byte (11), year (2 bytes), month, day, hour, minute, second, then the
// microseconds (4 bytes; milliseconds here, as the column has 3 decimals).
func appendBinaryDatetime(p []byte, t time.Time) []byte {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	us := uint32(t.Nanosecond()/1e6) * 1000
	p = append(p, 11, byte(y), byte(y>>8), byte(mo), byte(d), byte(h), byte(mi), byte(s))
	return binary.LittleEndian.AppendUint32(p, us)
}

// AppendColumnDef appends a Protocol::ColumnDefinition41 (with MariaDB's
// extended metadata field, empty, when negotiated).
func AppendColumnDef(p []byte, name string, extTypeInfo bool, charset uint16, length uint32, typ byte, flags uint16) []byte {
	lstr := func(v string) {
		p = mysql.AppendLengthEncodedInteger(p, uint64(len(v)))
		p = append(p, v...)
	}
	lstr("def")
	lstr("")
	lstr("")
	lstr("")
	lstr(name)
	lstr("")
	if extTypeInfo {
		lstr("")
	}
	return append(p, 0x0c, byte(charset), byte(charset>>8),
		byte(length), byte(length>>8), byte(length>>16), byte(length>>24),
		typ, byte(flags), byte(flags>>8), 0, 0, 0)
}

// AppendEOF appends an EOF packet with the given status flags.
func AppendEOF(p []byte, status uint16) []byte {
	return append(p, 0xFE, 0, 0, byte(status), byte(status>>8))
}

// AppendBigintColumnDef appends a Protocol::ColumnDefinition41 for a
// signed BIGINT. extTypeInfo: the client negotiated MariaDB's extended
// type metadata, which adds a (here empty) metadata string before the
// fixed fields.
func AppendBigintColumnDef(p []byte, name string, extTypeInfo bool) []byte {
	// charset 63 (binary), display length 20, BINARY_FLAG, no decimals.
	return AppendColumnDef(p, name, extTypeInfo, 63, 20, mysql.MYSQL_TYPE_LONGLONG, mysql.BINARY_FLAG)
}
