package wire

import (
	"encoding/binary"
	"strconv"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// The one reading of COM_STMT_EXECUTE's payload, for every part of the
// module that looks inside one (the engine binding generated keys and
// sequence arguments, the proxy binding KILL ?'s id):
//
//	command (1), statement id (4), flags (1), iteration count (4),
//	then, when the statement has parameters:
//	NULL bitmap ((n+7)/8), new-params-bound flag (1),
//	[types (2 per parameter) when the flag is 1], values
//
// The types are sent only when they change: a caller keeps the last ones
// a statement was given and passes them in. What a value means is the
// caller's; where each one starts and ends is ParamLen's.

// ExecuteHeader is the length of COM_STMT_EXECUTE's fixed part: the
// command byte, statement id, flags and iteration count.
const ExecuteHeader = 10

// Execute is a COM_STMT_EXECUTE read by ParseExecute. Its slices point
// into the packet (Types into the caller's when the packet has none).
type Execute struct {
	StmtID uint32
	// Flags is the cursor type (mysql.CURSOR_TYPE_*; 0: no cursor).
	Flags byte
	// NullBitmap has a bit per parameter, set for NULL; nil when the
	// statement has none.
	NullBitmap []byte
	// NewParamsBound: the packet carries the parameters' types.
	NewParamsBound bool
	// Types are 2 bytes per parameter (the type, then 0x80 for
	// unsigned): the packet's, or the ones passed to ParseExecute.
	Types []byte
	// Values are the parameters' values back to back, to the packet's end
	// (NULLs and values sent as long data have none).
	Values []byte
}

// Null reports whether parameter i (from 0) is NULL.
func (e *Execute) Null(i int) bool { return e.NullBitmap[i/8]&(1<<(i%8)) != 0 }

// ExecuteError is a COM_STMT_EXECUTE that cannot be read; What names the
// part ("short header", "NULL bitmap", "parameter types", ...).
type ExecuteError struct{ What string }

func (e *ExecuteError) Error() string { return "malformed COM_STMT_EXECUTE (" + e.What + ")" }

// ValueError is a parameter value shorter than its type says.
type ValueError struct{ Type byte }

func (e *ValueError) Error() string {
	return "malformed statement parameters (value of type " + strconv.Itoa(int(e.Type)) + ")"
}

// ExecuteFlags is the flags byte of the COM_STMT_EXECUTE pkt (0 when it
// is too short to hold one).
func ExecuteFlags(pkt []byte) byte {
	if len(pkt) > 5 {
		return pkt[5]
	}
	return 0
}

// ParseExecute reads the COM_STMT_EXECUTE pkt (command byte first) of a
// statement of n parameters; types are the ones it was last given (nil:
// never), used when the packet does not send them. The values are not
// split (ParamOffsets, ParamLen).
func ParseExecute(pkt []byte, n int, types []byte) (Execute, error) {
	if len(pkt) < ExecuteHeader {
		return Execute{}, &ExecuteError{What: "short header"}
	}
	e := Execute{StmtID: binary.LittleEndian.Uint32(pkt[1:5]), Flags: pkt[5]}
	rest := pkt[ExecuteHeader:]
	if n > 0 {
		bl := (n + 7) / 8
		if len(rest) < bl+1 {
			return Execute{}, &ExecuteError{What: "NULL bitmap"}
		}
		e.NullBitmap, rest = rest[:bl], rest[bl:]
		e.NewParamsBound, rest = rest[0] == 1, rest[1:]
		if e.NewParamsBound {
			if len(rest) < 2*n {
				return Execute{}, &ExecuteError{What: "parameter types"}
			}
			e.Types, rest = rest[:2*n], rest[2*n:]
		} else if len(types) != 2*n {
			return Execute{}, &ExecuteError{What: "no parameter types were ever sent for this statement"}
		} else {
			e.Types = types
		}
	}
	e.Values = rest
	return e, nil
}

// ParamOffsets splits e.Values among the n parameters: offs (scratch,
// returned for reuse) gets 2 ints per parameter, its value's range in
// e.Values; a NULL and a parameter i with long[i] (sent as long data;
// long may be nil) have an empty one. Bytes after the last value are an
// ExecuteError.
func (e *Execute) ParamOffsets(n int, long []bool, offs []int) ([]int, error) {
	offs = offs[:0]
	if cap(offs) < 2*n {
		offs = make([]int, 0, 2*n)
	}
	pos := 0
	for i := 0; i < n; i++ {
		if e.Null(i) || long != nil && long[i] {
			offs = append(offs, pos, pos)
			continue
		}
		l, err := ParamLen(e.Values[pos:], e.Types[2*i])
		if err != nil {
			return offs, err
		}
		offs = append(offs, pos, pos+l)
		pos += l
	}
	if pos != len(e.Values) {
		return offs, &ExecuteError{What: strconv.Itoa(len(e.Values)-pos) + " bytes after the parameter values"}
	}
	return offs, nil
}

// ParamLen is the length of the binary-protocol value of type typ at the
// start of b, or a *ValueError when b is shorter.
func ParamLen(b []byte, typ byte) (int, error) {
	fixed := 0
	switch typ {
	case mysql.MYSQL_TYPE_NULL:
		return 0, nil
	case mysql.MYSQL_TYPE_TINY:
		fixed = 1
	case mysql.MYSQL_TYPE_SHORT, mysql.MYSQL_TYPE_YEAR:
		fixed = 2
	case mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_INT24, mysql.MYSQL_TYPE_FLOAT:
		fixed = 4
	case mysql.MYSQL_TYPE_LONGLONG, mysql.MYSQL_TYPE_DOUBLE:
		fixed = 8
	case mysql.MYSQL_TYPE_DATE, mysql.MYSQL_TYPE_DATETIME, mysql.MYSQL_TYPE_TIMESTAMP, mysql.MYSQL_TYPE_TIME:
		if len(b) < 1 || len(b) < 1+int(b[0]) {
			return 0, &ValueError{Type: typ}
		}
		return 1 + int(b[0]), nil
	default:
		v, isNull, k := Lenenc(b)
		if k == 0 || isNull || uint64(len(b)-k) < v {
			return 0, &ValueError{Type: typ}
		}
		return k + int(v), nil
	}
	if len(b) < fixed {
		return 0, &ValueError{Type: typ}
	}
	return fixed, nil
}
