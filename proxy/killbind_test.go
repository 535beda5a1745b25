package proxy

import (
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
	var ks killStmt // one statement: each execute's types stay for the next
	for _, c := range cases {
		id, code, msg := ks.bind(c.pkt)
		if id != c.id || code != c.code || msg != c.msg {
			t.Errorf("%s: bind = %d, %d, %q; want %d, %d, %q", c.name, id, code, msg, c.id, c.code, c.msg)
		}
	}
}
