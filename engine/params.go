package engine

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/wire"
	"github.com/leafproxy/leafproxy/rewriter"
)

// Prepared statements with generated keys are prepared on the backend with
// one extra ? per generated value (rewriter.PlanPrepare), merged in text
// order with the client's own markers. The client sees only its own
// parameters (proxy.Session.RelayPrepareHidden); the engine rewrites every
// COM_STMT_EXECUTE to carry the generated values as extra BIGINT parameters
// (count, NULL bitmap, types, values), every COM_STMT_SEND_LONG_DATA to the
// backend's parameter index, and a COM_STMT_BULK_EXECUTE to carry them in
// every row. One command per EXECUTE, as for a statement without
// generated keys.

// execHeader is COM_STMT_EXECUTE's fixed part: command, statement id (4),
// flags (1), iteration count (4).
const execHeader = wire.ExecuteHeader

// paramMap is how a statement's backend parameters relate to the client's.
type paramMap struct {
	clientParams, backendParams int     // client parameters, backend parameters
	sourceOf                    []int32 // per backend parameter: client index (>= 0) or -(slot+1)
	toServer                    []uint16
	hidden                      []int // backend indexes of generated values, ascending
	// types: the client parameter types (2 bytes each) last sent, for an
	// execute that does not resend them (new-params-bound flag 0).
	types []byte
	// long: client parameters that got COM_STMT_SEND_LONG_DATA since the
	// last execute (or reset); their values are not in the execute packet.
	long    []bool
	anyLong bool
	// boundBy: per client parameter, 1 + the slot whose COALESCE(?,...)
	// holds it (a bound key), else 0; anyBound: some parameter is one.
	// When the engine generates that key, the client's value is sent as
	// NULL.
	boundBy  []int32
	anyBound bool
}

// newParamMap derives the mapping from a prepared Rewrite plan, or fails
// when the plan's numbering does not add up.
func newParamMap(plan *rewriter.Plan) (*paramMap, error) {
	n, m := plan.ClientParams, plan.Params
	if m != n+len(plan.Slots) || m > 65535 {
		return nil, &notSupportedError{msg: fmt.Sprintf("leafproxy: cannot number the parameters of this statement (%d client markers, %d generated values, %d in the rewritten text)", n, len(plan.Slots), m)}
	}
	pm := &paramMap{clientParams: n, backendParams: m, sourceOf: make([]int32, m), toServer: make([]uint16, n), long: make([]bool, n)}
	for j := range pm.sourceOf {
		pm.sourceOf[j] = 1 << 30 // unset
	}
	for i, sl := range plan.Slots {
		if sl.Param < 0 || sl.Param >= m || pm.sourceOf[sl.Param] != 1<<30 {
			return nil, &notSupportedError{msg: "leafproxy: cannot number the parameters of this statement (slot indexes)"}
		}
		pm.sourceOf[sl.Param] = -int32(i + 1)
	}
	c := 0
	for j := range pm.sourceOf {
		if pm.sourceOf[j] == 1<<30 {
			pm.sourceOf[j] = int32(c)
			pm.toServer[c] = uint16(j)
			c++
		} else {
			pm.hidden = append(pm.hidden, j)
		}
	}
	for i, sl := range plan.Slots {
		if sl.Bound && sl.Param > 0 {
			if c := pm.sourceOf[sl.Param-1]; c >= 0 {
				if pm.boundBy == nil {
					pm.boundBy = make([]int32, n)
				}
				pm.boundBy[c], pm.anyBound = int32(i+1), true
			}
		}
	}
	return pm, nil
}

// longData records a COM_STMT_SEND_LONG_DATA for client parameter i and
// returns the backend's index for it (beyond the backend's count for an
// index the client does not have, so the server reports it as it would).
func (pm *paramMap) longData(i int) int {
	if i >= pm.clientParams {
		return i - pm.clientParams + pm.backendParams
	}
	pm.long[i], pm.anyLong = true, true
	return int(pm.toServer[i])
}

// resetLong forgets the long data (after an execute, COM_STMT_RESET).
func (pm *paramMap) resetLong() {
	if pm.anyLong {
		clear(pm.long)
		pm.anyLong = false
	}
}

func malformedExecute(what string) error {
	return &notSupportedError{msg: "leafproxy: malformed COM_STMT_EXECUTE (" + what + ")"}
}

// executeError is the engine's error for what proxy's decoder of
// COM_STMT_EXECUTE (wire.ParseExecute, ParamOffsets, ParamLen) could not
// read: 1235, in the engine's words.
func executeError(err error) error {
	var ee *wire.ExecuteError
	if errors.As(err, &ee) {
		return malformedExecute(ee.What)
	}
	var ve *wire.ValueError
	if errors.As(err, &ve) {
		return &notSupportedError{msg: fmt.Sprintf("leafproxy: malformed statement parameters (value of type %d)", ve.Type)}
	}
	return err
}

// parseExecute reads the client's COM_STMT_EXECUTE pkt: its NULL bitmap,
// its parameter values and, in offs (2 ints per client parameter, scratch
// returned for reuse), each value's range in values (NULLs and long data
// have none). The types are remembered in pm.types.
func (pm *paramMap) parseExecute(pkt []byte, offs []int) (bitmap, values []byte, _ []int, _ error) {
	n := pm.clientParams
	ex, err := wire.ParseExecute(pkt, n, pm.types)
	if err != nil {
		return nil, nil, offs, executeError(err)
	}
	if ex.NewParamsBound {
		pm.types = append(pm.types[:0], ex.Types...)
		ex.Types = pm.types
	}
	if offs, err = ex.ParamOffsets(n, pm.long, offs); err != nil {
		return nil, nil, offs, executeError(err)
	}
	return ex.NullBitmap, ex.Values, offs, nil
}

// appendExecute appends to dst the backend's COM_STMT_EXECUTE for the
// client's pkt (read by parseExecute into bitmap, values and offs), with
// ids[k] bound as the BIGINT parameter of slot k; an ID of 0 is sent as
// NULL (a bound key the client's value keeps), and a bound key the engine
// generates (ids[k] != 0) has the client's value sent as NULL. The types
// are always sent (the client sends them only when they change).
func (pm *paramMap) appendExecute(dst, pkt, bitmap, values []byte, offs []int, ids []int64) []byte {
	dst = append(dst, pkt[:execHeader]...)
	m := pm.backendParams
	if m == 0 {
		return dst
	}
	bm := len(dst)
	for range (m + 7) / 8 {
		dst = append(dst, 0)
	}
	dst = append(dst, 1)
	types := len(dst)
	dst = pm.appendTypes(dst)
	for j, src := range pm.sourceOf {
		if src < 0 {
			if id := ids[-src-1]; id != 0 {
				dst = binary.LittleEndian.AppendUint64(dst, uint64(id))
			} else {
				dst[bm+j/8] |= 1 << (j % 8)
				dst[types+2*j] = mysql.MYSQL_TYPE_NULL
			}
			continue
		}
		if pm.anyBound && pm.boundBy[src] != 0 && ids[pm.boundBy[src]-1] != 0 {
			// Typed NULL too: COALESCE(<client's DOUBLE>, <BIGINT>) would
			// make the generated key a DOUBLE, exact only below 2^53.
			dst[bm+j/8] |= 1 << (j % 8)
			dst[types+2*j], dst[types+2*j+1] = mysql.MYSQL_TYPE_NULL, 0
			continue
		}
		if bitmap[src/8]&(1<<(src%8)) != 0 {
			dst[bm+j/8] |= 1 << (j % 8)
			continue
		}
		dst = append(dst, values[offs[2*src]:offs[2*src+1]]...)
	}
	return dst
}

// appendTypes appends the backend statement's parameter types: the
// client's last ones, BIGINT for generated values.
func (pm *paramMap) appendTypes(dst []byte) []byte {
	for _, src := range pm.sourceOf {
		if src < 0 {
			dst = append(dst, mysql.MYSQL_TYPE_LONGLONG, 0)
			continue
		}
		dst = append(dst, pm.types[2*src], pm.types[2*src+1])
	}
	return dst
}
