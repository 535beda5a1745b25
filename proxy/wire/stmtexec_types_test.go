package wire

import (
	"errors"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// Every type TestParamLen does not name: the remaining string-like types
// are lenenc strings, at each width of the length; NEWDATE's 1-byte
// length prefix reads the same.
func TestParamLenEveryType(t *testing.T) {
	lenencTypes := []byte{mysql.MYSQL_TYPE_DECIMAL, mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_BIT,
		mysql.MYSQL_TYPE_JSON, mysql.MYSQL_TYPE_ENUM, mysql.MYSQL_TYPE_SET, mysql.MYSQL_TYPE_TINY_BLOB,
		mysql.MYSQL_TYPE_MEDIUM_BLOB, mysql.MYSQL_TYPE_LONG_BLOB, mysql.MYSQL_TYPE_GEOMETRY}
	for _, typ := range lenencTypes {
		for _, n := range []int{0, 1, 250, 251, 0xFFFF, 0x10000} {
			v := mysql.AppendLengthEncodedInteger(nil, uint64(n))
			head := len(v)
			v = append(v, make([]byte, n)...)
			if got, err := ParamLen(append(v, 0xAA, 0xBB), typ); err != nil || got != head+n {
				t.Errorf("type %d, %d bytes: %d, %v; want %d", typ, n, got, err, head+n)
			}
			if n > 0 {
				var ve *ValueError
				if _, err := ParamLen(v[:len(v)-1], typ); !errors.As(err, &ve) || ve.Type != typ {
					t.Errorf("type %d, %d bytes, one missing: %v", typ, n, err)
				}
			}
		}
		// An 8-byte length no packet can hold.
		huge := []byte{0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 1, 2}
		if _, err := ParamLen(huge, typ); err == nil {
			t.Errorf("type %d: a 2^64-1 length accepted", typ)
		}
	}
	if got, err := ParamLen([]byte{4, 0xE8, 0x07, 1, 2, 9}, mysql.MYSQL_TYPE_NEWDATE); err != nil || got != 5 {
		t.Errorf("NEWDATE: %d, %v; want 5", got, err)
	}
}

// Execute.Null reads bit i of the bitmap, LSB first, across bytes (no
// offset, unlike a binary row's).
func TestExecuteNullBits(t *testing.T) {
	ex, err := ParseExecute(execPkt(append([]byte{0b10000001, 0b00000010, 1}, make([]byte, 2*10)...)...), 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		want := i == 0 || i == 7 || i == 9
		if ex.Null(i) != want {
			t.Errorf("Null(%d) = %v", i, ex.Null(i))
		}
	}
}
