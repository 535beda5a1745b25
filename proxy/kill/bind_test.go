package kill

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// execPkt is a COM_STMT_EXECUTE of statement 7 with flags 1 and the given
// tail (bitmap, bound flag, types, values).
func execPkt(tail ...byte) []byte {
	return append([]byte{mysql.COM_STMT_EXECUTE, 7, 0, 0, 0, 1, 1, 0, 0, 0}, tail...)
}

// TestKillBindMalformed: KILL ?'s binding answers a packet it cannot read
// as the server would, and keeps the types an execute sent for the next.
func TestKillBindMalformed(t *testing.T) {
	const malformed = "Malformed communication packet"
	cases := []struct {
		name string
		pkt  []byte
		code uint16
		msg  string
		id   uint32
	}{
		{"short", execPkt(0), mysql.ER_MALFORMED_PACKET, malformed, 0},
		{"types cut", execPkt(0, 1, 8), mysql.ER_MALFORMED_PACKET, malformed, 0},
		{"never typed", execPkt(0, 0, 1), mysql.ER_MALFORMED_PACKET, malformed, 0},
		{"NULL", execPkt(1, 1, 8, 0), mysql.ER_NOT_SUPPORTED_YET, killIDNumber + ", not NULL", 0},
		{"longlong cut", execPkt(0, 1, 8, 0, 1, 2), mysql.ER_MALFORMED_PACKET, malformed, 0},
		{"longlong", execPkt(0, 1, 8, 0, 42, 0, 0, 0, 0, 0, 0, 0), 0, "", 42},
		{"typed before", execPkt(0, 0, 43, 0, 0, 0, 0, 0, 0, 0), 0, "", 43},
		{"negative tiny", execPkt(0, 1, 1, 0, 0xFF), mysql.ER_NOT_SUPPORTED_YET, killIDNumber, 0},
		{"unsigned tiny", execPkt(0, 1, 1, 0x80, 0xFF), 0, "", 255},
		{"digits", execPkt(0, 1, mysql.MYSQL_TYPE_VAR_STRING, 0, 2, '1', '2'), 0, "", 12},
		{"digits cut", execPkt(0, 0, 3, '1'), mysql.ER_MALFORMED_PACKET, malformed, 0},
		{"11 digits", execPkt(0, 0, 11, '1', '2', '3', '4', '5', '6', '7', '8', '9', '0', '1'), mysql.ER_NOT_SUPPORTED_YET, killIDNumber, 0},
		{"over 2^32", execPkt(0, 0, 10, '9', '9', '9', '9', '9', '9', '9', '9', '9', '9'), mysql.ER_NOT_SUPPORTED_YET, killIDNumber, 0},
		{"double", execPkt(0, 1, mysql.MYSQL_TYPE_DOUBLE, 0, 0, 0, 0, 0, 0, 0, 0x45, 0x40), 0, "", 42},
		{"double cut", execPkt(0, 0, 0, 0), mysql.ER_MALFORMED_PACKET, malformed, 0},
		{"date", execPkt(0, 1, mysql.MYSQL_TYPE_DATE, 0, 0), mysql.ER_NOT_SUPPORTED_YET, killIDNumber, 0},
	}
	var ks Stmt // one statement: each execute's types stay for the next
	for _, c := range cases {
		id, code, msg := ks.bind(c.pkt)
		if id != c.id || code != c.code || msg != c.msg {
			t.Errorf("%s: bind = %d, %d, %q; want %d, %d, %q", c.name, id, code, msg, c.id, c.code, c.msg)
		}
	}
}

// The id of an execute of KILL ?, however the client binds it.
func TestKillStmtBind(t *testing.T) {
	exec := func(null bool, typ ...byte) []byte {
		p := []byte{mysql.COM_STMT_EXECUTE, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0}
		if null {
			p[10] = 1
		}
		if typ == nil {
			return append(p, 0)
		}
		return append(append(p, 1), typ...)
	}
	le := func(n int, v uint64) []byte {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint64(b, v)
		return b[:n]
	}
	str := func(s string) []byte { return append([]byte{byte(len(s))}, s...) }
	cases := []struct {
		name string
		pkt  []byte
		id   uint32
		code uint16
	}{
		{"longlong", append(exec(false, mysql.MYSQL_TYPE_LONGLONG, 0), le(8, 42)...), 42, 0},
		{"unsigned longlong", append(exec(false, mysql.MYSQL_TYPE_LONGLONG, 0x80), le(8, 1<<30+1)...), 1<<30 + 1, 0},
		{"long", append(exec(false, mysql.MYSQL_TYPE_LONG, 0), le(4, 7)...), 7, 0},
		{"tiny", append(exec(false, mysql.MYSQL_TYPE_TINY, 0), 9), 9, 0},
		{"negative tiny", append(exec(false, mysql.MYSQL_TYPE_TINY, 0), 0xFF), 0, mysql.ER_NOT_SUPPORTED_YET},
		{"too large", append(exec(false, mysql.MYSQL_TYPE_LONGLONG, 0), le(8, 1<<33)...), 0, mysql.ER_NOT_SUPPORTED_YET},
		{"digits", append(exec(false, mysql.MYSQL_TYPE_VAR_STRING, 0), str("123")...), 123, 0},
		{"decimal", append(exec(false, mysql.MYSQL_TYPE_NEWDECIMAL, 0), str("5")...), 5, 0},
		{"text", append(exec(false, mysql.MYSQL_TYPE_STRING, 0), str("12a")...), 0, mysql.ER_NOT_SUPPORTED_YET},
		{"double", append(exec(false, mysql.MYSQL_TYPE_DOUBLE, 0), le(8, math.Float64bits(77))...), 77, 0},
		{"fraction", append(exec(false, mysql.MYSQL_TYPE_DOUBLE, 0), le(8, math.Float64bits(7.5))...), 0, mysql.ER_NOT_SUPPORTED_YET},
		{"null", exec(true, mysql.MYSQL_TYPE_NULL, 0), 0, mysql.ER_NOT_SUPPORTED_YET},
		{"date", append(exec(false, mysql.MYSQL_TYPE_DATE, 0), 0), 0, mysql.ER_NOT_SUPPORTED_YET},
		{"short value", append(exec(false, mysql.MYSQL_TYPE_LONGLONG, 0), 1, 2), 0, mysql.ER_MALFORMED_PACKET},
		{"no types ever bound", append(exec(false), le(8, 1)...), 0, mysql.ER_MALFORMED_PACKET},
		{"truncated", []byte{mysql.COM_STMT_EXECUTE, 1, 0, 0, 0}, 0, mysql.ER_MALFORMED_PACKET},
	}
	for _, c := range cases {
		var ks Stmt
		id, code, msg := ks.bind(c.pkt)
		if id != c.id || code != c.code || (code != 0) != (msg != "") {
			t.Errorf("%s: id %d, code %d (%s); want %d, %d", c.name, id, code, msg, c.id, c.code)
		}
	}
	// Types sent once are remembered for executes that do not resend them.
	var ks Stmt
	if id, _, msg := ks.bind(append(exec(false, mysql.MYSQL_TYPE_LONG, 0), le(4, 3)...)); id != 3 || msg != "" {
		t.Fatalf("first execute: %d %s", id, msg)
	}
	if id, _, msg := ks.bind(append(exec(false), le(4, 4)...)); id != 4 || msg != "" {
		t.Fatalf("execute without types: %d %s", id, msg)
	}
	ks.long = true
	if _, code, _ := ks.bind(append(exec(false), le(4, 4)...)); code != mysql.ER_NOT_SUPPORTED_YET {
		t.Fatalf("long data: code %d", code)
	}
}
