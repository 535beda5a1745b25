package kill

import (
	"context"
	"encoding/binary"
	"math"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/internal/killsql"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// KILL by other paths than a COM_QUERY of its own (issue 24): a KILL the
// client prepares with the binary protocol is carried out by the proxy at
// every execute, mapped and checked as a COM_QUERY KILL is (killMapped);
// a KILL in the literal text of PREPARE ... FROM or EXECUTE IMMEDIATE is
// refused (killsql.Parse). What the proxy cannot see (PREPARE s FROM @var,
// stored routines, events, triggers) reaches the backend as written.

// Stmt is a KILL the client prepared (COM_STMT_PREPARE). The backend
// holds the same statement, prepared from the client's text (preparing
// kills nothing), but none of its executes reaches the backend: the proxy
// carries each one out as a KILL of its own.
type Stmt struct {
	req   killsql.Req
	ptype [2]byte // KILL ?: the parameter's type as last bound
	typed bool
	long  bool // the parameter came as COM_STMT_SEND_LONG_DATA since the last execute
}

// NoteLongData notes a COM_STMT_SEND_LONG_DATA for the statement: its id
// comes as long data, which the next execute refuses.
func (ks *Stmt) NoteLongData() { ks.long = true }

// Reset notes a COM_STMT_RESET, which drops the statement's long data.
func (ks *Stmt) Reset() { ks.long = false }

// prepareKill relays the prepare of a KILL and remembers the statement.
func prepareKill(s Session, pkt []byte, k killsql.Req) error {
	if err := s.MayWait(); err != nil {
		return err // the statement id is needed now: on the goroutine
	}
	id, ok, err := s.RelayPrepare(pkt)
	if err != nil || !ok {
		return err
	}
	s.Kills().Add(id, k)
	return nil
}

// executeKill carries out a COM_STMT_EXECUTE of a prepared KILL. The
// answer (OK, or the backend's or the proxy's ERR) has the shape of an
// execute's answer to a statement without a result set.
func executeKill(ctx context.Context, s Session, ks *Stmt, pkt []byte) error {
	if err := s.MayWait(); err != nil {
		return err
	}
	k := ks.req
	if k.Param {
		id, code, msg := ks.bind(pkt)
		ks.long = false // the server drops long data after an execute
		if msg != "" {
			return s.WriteErr(code, "HY000", msg)
		}
		k.ID = uint64(id)
	}
	return killMapped(ctx, s, k, true)
}

const killIDNumber = "leafproxy: KILL through the proxy takes a connection id number"

// bind reads the id a KILL ? execute binds: an integer, or a string or
// decimal of digits (what the server would convert). msg != "" is the
// error to answer instead.
func (ks *Stmt) bind(pkt []byte) (id uint32, code uint16, msg string) {
	const malformed = "Malformed communication packet"
	var types []byte
	if ks.typed {
		types = ks.ptype[:]
	}
	ex, err := wire.ParseExecute(pkt, 1, types)
	if err != nil {
		return 0, mysql.ER_MALFORMED_PACKET, malformed
	}
	if ex.NewParamsBound {
		copy(ks.ptype[:], ex.Types)
		ks.typed = true
	}
	switch {
	case ks.long:
		return 0, mysql.ER_NOT_SUPPORTED_YET, killIDNumber + "; bind it in the execute, not as long data"
	case ex.Null(0):
		return 0, mysql.ER_NOT_SUPPORTED_YET, killIDNumber + ", not NULL"
	}
	return killID(ks.ptype, ex.Values)
}

// killID is the connection id in v, a KILL ? parameter's value of type
// ptype (as bind).
func killID(ptype [2]byte, v []byte) (id uint32, code uint16, msg string) {
	const malformed = "Malformed communication packet"
	unsigned := ptype[1]&0x80 != 0
	size := 0
	switch ptype[0] {
	case mysql.MYSQL_TYPE_TINY:
		size = 1
	case mysql.MYSQL_TYPE_SHORT, mysql.MYSQL_TYPE_YEAR:
		size = 2
	case mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_INT24:
		size = 4
	case mysql.MYSQL_TYPE_LONGLONG:
		size = 8
	case mysql.MYSQL_TYPE_FLOAT, mysql.MYSQL_TYPE_DOUBLE:
		return killIDFloat(ptype[0], v)
	case mysql.MYSQL_TYPE_DECIMAL, mysql.MYSQL_TYPE_NEWDECIMAL, mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING,
		mysql.MYSQL_TYPE_STRING, mysql.MYSQL_TYPE_TINY_BLOB, mysql.MYSQL_TYPE_MEDIUM_BLOB, mysql.MYSQL_TYPE_LONG_BLOB,
		mysql.MYSQL_TYPE_BLOB:
		return killIDDigits(v)
	default:
		return 0, mysql.ER_NOT_SUPPORTED_YET, killIDNumber
	}
	if len(v) < size {
		return 0, mysql.ER_MALFORMED_PACKET, malformed
	}
	var b [8]byte
	copy(b[:], v[:size])
	n := binary.LittleEndian.Uint64(b[:])
	if !unsigned && v[size-1]&0x80 != 0 || n > math.MaxUint32 {
		return 0, mysql.ER_NOT_SUPPORTED_YET, killIDNumber
	}
	return uint32(n), 0, ""
}

// killIDFloat is killID of a FLOAT or DOUBLE: a whole number in range.
func killIDFloat(typ byte, v []byte) (id uint32, code uint16, msg string) {
	var f float64
	if typ == mysql.MYSQL_TYPE_FLOAT && len(v) >= 4 {
		f = float64(math.Float32frombits(binary.LittleEndian.Uint32(v)))
	} else if typ == mysql.MYSQL_TYPE_DOUBLE && len(v) >= 8 {
		f = math.Float64frombits(binary.LittleEndian.Uint64(v))
	} else {
		return 0, mysql.ER_MALFORMED_PACKET, "Malformed communication packet"
	}
	if f < 0 || f > math.MaxUint32 || f != math.Trunc(f) {
		return 0, mysql.ER_NOT_SUPPORTED_YET, killIDNumber
	}
	return uint32(f), 0, ""
}

// killIDDigits is killID of a string or decimal: 1 to 10 digits, in
// range.
func killIDDigits(v []byte) (id uint32, code uint16, msg string) {
	l, k := wire.LenencUint(v)
	if k == 0 || l > uint64(len(v)-k) {
		return 0, mysql.ER_MALFORMED_PACKET, "Malformed communication packet"
	}
	digits := v[k : k+int(l)]
	if len(digits) == 0 || len(digits) > 10 {
		return 0, mysql.ER_NOT_SUPPORTED_YET, killIDNumber
	}
	var n uint64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, mysql.ER_NOT_SUPPORTED_YET, killIDNumber
		}
		n = n*10 + uint64(c-'0')
	}
	if n > math.MaxUint32 {
		return 0, mysql.ER_NOT_SUPPORTED_YET, killIDNumber
	}
	return uint32(n), 0, ""
}
