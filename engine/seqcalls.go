package engine

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/wire"
	"github.com/leafproxy/leafproxy/rewriter"
)

// Blocks of IDs (NEXTVAL('tag', n)) and LEAFPROXY_DECODE('tag', id), in
// Sequence plans: their numeric argument is written in the text, or (a
// prepared statement) a ? read from each EXECUTE packet.

// blockLimiter is implemented by ID sources whose blocks of consecutive
// IDs are bounded per tag (allocator.Sequences: a snowflake tag's tick).
type blockLimiter interface {
	// BlockLimit is the largest consecutive block of tag (0: none of the
	// generator's own) and why.
	BlockLimit(tag string) (limit int64, why string)
}

// decoder is implemented by ID sources that can say what an ID of a tag is
// made of (allocator.Sequences): the snowflake parts under the tag's own
// layout, which the ID source looks up per tag, and a segment tag's
// max_id in the store.
type decoder interface {
	DecodeSnowflake(tag string, id int64) (created time.Time, worker, seq int64, err error)
	MaxID(ctx context.Context, tag string) (int64, error)
}

// block reserves n consecutive IDs of tag (owned) for NEXTVAL('tag', n)
// and returns the first.
func (e *Engine) block(ctx context.Context, tag string, n int64) (int64, error) {
	if err := rewriter.CheckBlock(n); err != nil {
		return 0, err
	}
	bl, ok := e.idSource.(blocker)
	if !ok {
		return 0, &notSupportedError{msg: "leafproxy: this ID source cannot reserve blocks of IDs"}
	}
	if lim, ok := e.idSource.(blockLimiter); ok {
		if max, why := lim.BlockLimit(tag); max > 0 && n > max {
			return 0, &wrongArgumentsError{msg: fmt.Sprintf("Incorrect arguments to NEXTVAL: a block of %d IDs of sequence '%s'; "+
				"it gives at most %d consecutive IDs at once (%s); take several blocks", n, tag, max, why)}
		}
	}
	first, run, _, err := bl.Block(ctx, tag, n)
	if err != nil {
		return 0, fmt.Errorf("NEXTVAL(%s, %d): %w", tag, n, err)
	}
	if run != 0 && n > run {
		// BlockLimit said otherwise: never hand out IDs that are not the
		// consecutive range the caller takes them for.
		return 0, fmt.Errorf("leafproxy: NEXTVAL(%s, %d): the block came as runs of %d IDs, not consecutive", tag, n, run)
	}
	return first, nil
}

// wrongArgumentsError is a 1210 (ER_WRONG_ARGUMENTS) the engine raises.
type wrongArgumentsError struct{ msg string }

func (e *wrongArgumentsError) Error() string    { return e.msg }
func (e *wrongArgumentsError) Code() uint16     { return mysql.ER_WRONG_ARGUMENTS }
func (e *wrongArgumentsError) SQLState() string { return "HY000" }

// decodeCols are LEAFPROXY_DECODE's columns, the same for every
// generator (NULL where a part does not apply), so that a prepared
// statement's metadata does not depend on the tag.
var decodeCols = []wire.Column{
	{Name: "tag", Type: wire.TypeVarchar},
	{Name: "generator", Type: wire.TypeVarchar},
	{Name: "id", Type: wire.TypeBigint},
	{Name: "created_at", Type: wire.TypeDatetime3}, // snowflake: the start of its tick, UTC
	{Name: "worker_id", Type: wire.TypeBigint},     // snowflake
	{Name: "sequence", Type: wire.TypeBigint},      // snowflake: within the tick
	{Name: "handed_out", Type: wire.TypeInt},       // segment: 1 when below max_id
	{Name: "max_id", Type: wire.TypeBigint},        // segment: leaf_alloc.max_id
}

// decodeBackendText is what a prepared LEAFPROXY_DECODE is prepared as on
// the backend: a constant SELECT with decodeCols' names and types (and
// the client's ? in the id column, so the parameter counts agree).
func decodeBackendText(param bool) []byte {
	id := "CAST(0 AS SIGNED)"
	if param {
		id = "CAST(0*? AS SIGNED)"
	}
	return []byte("SELECT CAST('' AS CHAR(128) CHARACTER SET utf8mb4) AS `tag`, CAST('' AS CHAR(16) CHARACTER SET utf8mb4) AS `generator`, " +
		id + " AS `id`, CAST(NULL AS DATETIME(3)) AS `created_at`, CAST(NULL AS SIGNED) AS `worker_id`, CAST(NULL AS SIGNED) AS `sequence`, " +
		"(NULL = 1) AS `handed_out`, CAST(NULL AS SIGNED) AS `max_id`")
}

// decode answers LEAFPROXY_DECODE(c.Tag, c.ID) with one row of decodeCols.
func (e *Engine) decode(ctx context.Context, s Session, st *state, c rewriter.Call, binaryRows bool) error {
	d, ok := e.idSource.(decoder)
	if !ok {
		return &notSupportedError{msg: "leafproxy: this ID source cannot decode IDs"}
	}
	tag := st.own(c.Tag)
	gen := e.idSource.Generator(tag)
	row := append(st.decoded[:0], wire.StringValue(tag), wire.StringValue(gen), wire.IntValue(c.ID),
		wire.NullValue, wire.NullValue, wire.NullValue, wire.NullValue, wire.NullValue)
	if gen == "snowflake" {
		created, worker, seq, err := d.DecodeSnowflake(tag, c.ID)
		if err != nil {
			return err
		}
		row[3], row[4], row[5] = wire.TimeValue(created.UTC()), wire.IntValue(worker), wire.IntValue(seq)
	} else {
		maxID, err := d.MaxID(ctx, tag)
		if err != nil {
			return err
		}
		if c.ID < 1 {
			// No segment ever starts below 1: such an ID was never made
			// by the proxy, so there is nothing to decode.
			return &wrongArgumentsError{msg: fmt.Sprintf("Incorrect arguments to LEAFPROXY_DECODE: %d is not an ID of sequence '%s': its IDs start at 1", c.ID, tag)}
		}
		handed := int64(0)
		if c.ID >= 1 && c.ID < maxID {
			handed = 1
		}
		row[6], row[7] = wire.IntValue(handed), wire.IntValue(maxID)
	}
	st.decoded = row
	st.decodedRows[0] = row
	var err error
	if binaryRows {
		err = s.WriteBinaryRows(decodeCols, st.decodedRows[:])
	} else {
		err = s.WriteRows(decodeCols, st.decodedRows[:])
	}
	return err
}

// bindCallArgs returns p's calls with the ? arguments bound by the
// COM_STMT_EXECUTE packet pkt read into N and ID (a copy in st.calls; the
// plan's own calls when none is a ?).
func (st *state) bindCallArgs(p *prepared, pkt []byte) ([]rewriter.Call, error) {
	calls := p.plan.Calls
	n := p.args
	if n == 0 {
		return calls, nil
	}
	if p.long {
		return nil, &wrongArgumentsError{msg: "Incorrect arguments to NEXTVAL / LEAFPROXY_DECODE: a value sent as long data (COM_STMT_SEND_LONG_DATA); bind it in the execute"}
	}
	ex, err := wire.ParseExecute(pkt, n, p.types)
	if err != nil {
		return nil, executeError(err)
	}
	if ex.NewParamsBound {
		p.types = append(p.types[:0], ex.Types...)
	}
	rest := ex.Values
	st.rowValues = st.rowValues[:0]
	for i := range n {
		if ex.Null(i) {
			return nil, argError(calls, i+1, "NULL")
		}
		l, err := wire.ParamLen(rest, p.types[2*i])
		if err != nil {
			return nil, executeError(err)
		}
		v, ok := intParam(rest[:l], p.types[2*i], p.types[2*i+1]&0x80 != 0)
		if !ok {
			return nil, argError(calls, i+1, "a value that is not an integer")
		}
		st.rowValues = append(st.rowValues, v)
		rest = rest[l:]
	}
	st.calls = append(st.calls[:0], calls...)
	for i := range st.calls {
		c := &st.calls[i]
		if c.ArgParam == 0 {
			continue
		}
		if c.ArgParam > len(st.rowValues) {
			return nil, malformedExecute("parameter count")
		}
		v := st.rowValues[c.ArgParam-1]
		if c.Func == rewriter.Decode {
			c.ID = v
			continue
		}
		if err := rewriter.CheckBlock(v); err != nil {
			return nil, err
		}
		c.N = v
	}
	return st.calls, nil
}

// argError is 1210 for the call whose argument is parameter k (from 1).
func argError(calls []rewriter.Call, k int, what string) error {
	name := "NEXTVAL"
	for _, c := range calls {
		if c.ArgParam == k {
			name = c.Func.String()
		}
	}
	return &wrongArgumentsError{msg: fmt.Sprintf("Incorrect arguments to %s: parameter %d is %s; bind an integer", name, k, what)}
}

// intParam reads a binary-protocol parameter value b of type typ as an
// integer: integer types, floating point values without a fraction, and
// strings or decimals holding an integer.
func intParam(b []byte, typ byte, unsigned bool) (int64, bool) {
	switch typ {
	case mysql.MYSQL_TYPE_TINY:
		if unsigned {
			return int64(b[0]), true
		}
		return int64(int8(b[0])), true
	case mysql.MYSQL_TYPE_SHORT, mysql.MYSQL_TYPE_YEAR:
		v := binary.LittleEndian.Uint16(b)
		if unsigned {
			return int64(v), true
		}
		return int64(int16(v)), true
	case mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_INT24:
		v := binary.LittleEndian.Uint32(b)
		if unsigned {
			return int64(v), true
		}
		return int64(int32(v)), true
	case mysql.MYSQL_TYPE_LONGLONG:
		v := binary.LittleEndian.Uint64(b)
		if unsigned && v > math.MaxInt64 {
			return 0, false
		}
		return int64(v), true
	case mysql.MYSQL_TYPE_FLOAT, mysql.MYSQL_TYPE_DOUBLE:
		f := float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
		if typ == mysql.MYSQL_TYPE_DOUBLE {
			f = math.Float64frombits(binary.LittleEndian.Uint64(b))
		}
		if f != math.Trunc(f) || f < -(1<<63) || f >= 1<<63 {
			return 0, false
		}
		return int64(f), true
	case mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING, mysql.MYSQL_TYPE_STRING, mysql.MYSQL_TYPE_DECIMAL,
		mysql.MYSQL_TYPE_NEWDECIMAL, mysql.MYSQL_TYPE_BLOB, mysql.MYSQL_TYPE_TINY_BLOB, mysql.MYSQL_TYPE_MEDIUM_BLOB, mysql.MYSQL_TYPE_LONG_BLOB:
		l, _, k := wire.Lenenc(b)
		if k == 0 || uint64(len(b)-k) < l {
			return 0, false
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(b[k:k+int(l)])), 10, 64)
		return v, err == nil
	}
	return 0, false
}
