package engine

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/leafproxy/leafproxy/proxy"
	"github.com/leafproxy/leafproxy/proxy/wire"
	"github.com/leafproxy/leafproxy/rewriter"
)

// MariaDB's COM_STMT_BULK_EXECUTE (Connector/J's default batches):
//
//	0xFA, stmt id (4), flags (2), [types: 2 bytes per parameter when
//	flags&bulkSendTypes], then per row, per parameter: an indicator byte
//	(0 value follows, 1 NULL, 2 DEFAULT, 3 IGNORE) and the binary value.
//
// A statement with generated keys is prepared with one extra parameter
// per generated value (params.go). Its bulk execute stays one bulk execute:
// every row gets its own IDs as those parameters (indicator 0 and an 8-byte
// BIGINT at the parameter's place), the types always sent. IDs for the
// whole batch are drawn at once, so they ascend row by row and are
// consecutive within a segment. The backend's OK goes to the client with
// the first row's key as insert id (Connector/J computes the batch's keys
// as first + i).
const (
	bulkSendUnitResults = 64
	bulkSendTypes       = 128
)

// bulkRewrite runs a COM_STMT_BULK_EXECUTE of a statement with generated
// keys as one bulk execute: the header and types read (bulkHeader), every
// row's IDs drawn at once (drawBulk), each row rewritten with its IDs
// (bulkRows), the result passed on (bulkAnswer). The bool is true once
// the batch went to the backend (or had no rows): the client's answer was
// written, or err says why it could not be; false with err: refused
// before anything was sent.
func (e *Engine) bulkRewrite(ctx context.Context, s Session, st *state, p *prepared, pkt []byte) (bool, error) {
	// The batch's answer is waited for (ExecuteResult): on the session's
	// goroutine, before any ID is drawn.
	bs, err := s.Blocking(ctx)
	if err != nil {
		return false, err
	}
	pm := p.params
	flags, body, err := bulkHeader(pkt, pm)
	if err != nil {
		return false, err
	}
	rows, err := splitBulkRows(body, pm.types, pm.clientParams)
	if err != nil {
		return false, err
	}
	if len(rows) == 0 {
		return true, s.WriteOK(0, 0, 0)
	}
	out, firstKey, err := e.bulkRows(ctx, s, st, p, pkt, flags, rows)
	if err != nil {
		return false, err
	}
	st.countStmt(StmtFilled)
	return true, bulkAnswer(s, st, p, bs, out, firstKey)
}

// bulkHeader reads a bulk execute's flags and parameter types (kept in pm
// when sent, else the ones kept from an earlier execute) and returns the
// rows' bytes. Unit results, and packets too short or without types, are
// refused (notSupportedError).
func bulkHeader(pkt []byte, pm *paramMap) (flags uint16, body []byte, _ error) {
	if len(pkt) < 7 {
		return 0, nil, &notSupportedError{msg: "leafproxy: malformed COM_STMT_BULK_EXECUTE"}
	}
	flags = binary.LittleEndian.Uint16(pkt[5:7])
	if flags&bulkSendUnitResults != 0 {
		return 0, nil, &notSupportedError{msg: "leafproxy: COM_STMT_BULK_EXECUTE with unit results is not supported on a statement with generated keys"}
	}
	n := pm.clientParams
	body = pkt[7:]
	if flags&bulkSendTypes != 0 {
		if len(body) < 2*n {
			return 0, nil, &notSupportedError{msg: "leafproxy: malformed COM_STMT_BULK_EXECUTE (parameter types)"}
		}
		pm.types = append(pm.types[:0], body[:2*n]...)
		body = body[2*n:]
	}
	if len(pm.types) != 2*n {
		return 0, nil, &notSupportedError{msg: "leafproxy: COM_STMT_BULK_EXECUTE without parameter types"}
	}
	return flags, body, nil
}

// drawBulk draws the IDs of nrows rows at once, one allocator call per
// tag: all[t] holds tag t's IDs, perRow[t] of them per row, in row order.
func (e *Engine) drawBulk(ctx context.Context, st *state, plan *rewriter.Plan, nrows int) (all [][]int64, perRow []int, _ error) {
	perRow = make([]int, len(plan.Tags))
	whole := make([]rewriter.TagCount, len(plan.Tags))
	for i, tc := range plan.Tags {
		perRow[i] = tc.N
		whole[i] = rewriter.TagCount{Tag: tc.Tag, N: tc.N * nrows}
	}
	if err := st.draw(ctx, e, &rewriter.Plan{Kind: rewriter.Rewrite, Tags: whole, Filled: plan.Filled}); err != nil {
		return nil, nil, err
	}
	return append([][]int64(nil), st.tagBatches...), perRow, nil
}

// bulkRows builds the backend's bulk execute from the client's pkt: its
// command and statement id, flags with the types always sent, the backend's types,
// then every row with its IDs as the hidden parameters. firstKey is the
// first row's key (firstRowKey).
func (e *Engine) bulkRows(ctx context.Context, s Session, st *state, p *prepared, pkt []byte, flags uint16, rows []bulkRow) (out []byte, firstKey int64, err error) {
	pm, plan := p.params, &p.plan
	all, perRow, err := e.drawBulk(ctx, st, plan, len(rows))
	if err != nil {
		return nil, 0, err
	}
	sub := make([][]int64, len(all))
	var ids []int64
	var mode rewriter.Mode
	if pm.anyBound {
		if mode, err = st.currentMode(ctx, s); err != nil {
			return nil, 0, err
		}
	}
	hidden := pm.backendParams - pm.clientParams // the generated values
	out = make([]byte, 0, len(pkt)+2*hidden+len(rows)*9*hidden)
	out = append(out, pkt[:5]...)
	out = binary.LittleEndian.AppendUint16(out, flags|bulkSendTypes)
	out = pm.appendTypes(out)
	for r, row := range rows {
		for t := range all {
			sub[t] = all[t][r*perRow[t] : (r+1)*perRow[t]]
		}
		if ids, err = plan.AssignIDs(ids[:0], sub); err != nil {
			return nil, 0, err
		}
		if err := e.keepBulkKeys(ctx, st, p, mode, row, ids); err != nil {
			return nil, 0, err
		}
		if r == 0 {
			firstKey = firstRowKey(plan, ids)
		}
		out = appendBulkRow(out, pm, ids, row)
	}
	return out, firstKey, nil
}

// keepBulkKeys clears, in ids, the IDs of the bound keys whose value the
// row keeps (bulkKept): such an ID goes unused (a gap AUTO_INCREMENT would
// not leave) and the tag moves past the kept value.
func (e *Engine) keepBulkKeys(ctx context.Context, st *state, p *prepared, mode rewriter.Mode, row bulkRow, ids []int64) error {
	kept, err := bulkKept(p, mode, row)
	if err != nil {
		return err
	}
	for k, v := range kept {
		if v != 0 {
			ids[k] = 0
			if v > 0 {
				if err := e.advance(ctx, st.own(p.plan.Slots[k].Tag), v); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// appendBulkRow appends one row's backend parameters to out, in the
// backend's order: a generated parameter's ID (NULL when the client's
// value is kept), NULL for a client parameter whose key is generated, the
// client's bytes otherwise.
func appendBulkRow(out []byte, pm *paramMap, ids []int64, row bulkRow) []byte {
	for _, src := range pm.sourceOf {
		if src < 0 {
			if id := ids[-src-1]; id != 0 {
				out = append(out, 0)
				out = binary.LittleEndian.AppendUint64(out, uint64(id))
			} else {
				out = append(out, 1) // NULL: the client's value is kept
			}
			continue
		}
		if pm.anyBound && pm.boundBy[src] != 0 && ids[pm.boundBy[src]-1] != 0 {
			out = append(out, 1) // NULL: the key is generated
			continue
		}
		out = append(out, row.raw[row.paramRanges[2*src]:row.paramRanges[2*src+1]]...)
	}
	return out
}

// bulkAnswer sends out to the backend and passes its answer on: its
// error, or its OK with the first row's key (when generated) as insert id,
// which also becomes the session's LAST_INSERT_ID() when the plan reports
// keys.
func bulkAnswer(s Session, st *state, p *prepared, bs proxy.BlockingSession, out []byte, firstKey int64) error {
	res, err := bs.ExecuteResult(out)
	if err != nil {
		return err
	}
	if res.Err != nil {
		return s.WriteError(res.Err.Code, res.Err.State, res.Err.Message)
	}
	insertID := res.InsertID
	if firstKey != 0 {
		insertID = uint64(firstKey)
		if p.plan.ReportsKey && res.Affected > 0 {
			st.lastID = firstKey // the session's LAST_INSERT_ID() (lastid.go)
		}
	}
	st.trim()
	return s.WriteOK(res.Affected, insertID, res.Warnings)
}

// firstRowKey is the key LAST_INSERT_ID(...) reports for the first row:
// its first key slot's generated ID, or 0 (the backend's insert id is
// passed on then) when the row's bound value keeps that key.
func firstRowKey(plan *rewriter.Plan, ids []int64) int64 {
	for k, sl := range plan.Slots {
		if sl.Key {
			return ids[k]
		}
	}
	return 0
}

// bulkKept is keptKeys for one row of a bulk execute: per slot, 0 when
// the key is generated, else the row's value keeps it (> 0: the tag moves
// past it). Indicators DEFAULT and IGNORE are the column's default, 0.
func bulkKept(p *prepared, mode rewriter.Mode, row bulkRow) ([]int64, error) {
	pm := p.params
	if !pm.anyBound {
		return nil, nil
	}
	kept := make([]int64, len(p.plan.Slots))
	for k, sl := range p.plan.Slots {
		c := -1
		if sl.Bound && sl.Param > 0 {
			c = int(pm.sourceOf[sl.Param-1])
		}
		if c < 0 {
			continue
		}
		var v rewriter.KeyValue
		switch raw := row.raw[row.paramRanges[2*c]:row.paramRanges[2*c+1]]; raw[0] {
		case 0:
			var err error
			if v, err = boundKeyValue(pm.types[2*c], pm.types[2*c+1], raw[1:]); err != nil {
				return nil, err
			}
		case 1:
			v.Null = true
		}
		m := mode
		if sl.KeepZero {
			m.NoAutoValueOnZero = true // the rule keeps a bound 0
		}
		switch {
		case v.Generates(m, sl.Ignore):
		case v.Explicit(m, sl.Ignore) > 0:
			kept[k] = v.Explicit(m, sl.Ignore)
		default:
			kept[k] = keptNone
		}
	}
	return kept, nil
}

// bulkRow is one row of a bulk execute: raw holds the row's bytes
// (indicator and value per parameter), offs the range of each parameter's
// indicator+value in raw.
type bulkRow struct {
	raw         []byte
	paramRanges []int
}

// splitBulkRows cuts the rows of a bulk execute body, checking every length.
func splitBulkRows(body, types []byte, n int) ([]bulkRow, error) {
	var rows []bulkRow
	for len(body) > 0 {
		row := bulkRow{paramRanges: make([]int, 0, 2*n)}
		pos := 0
		for i := 0; i < n; i++ {
			if pos >= len(body) {
				return nil, &notSupportedError{msg: "leafproxy: malformed COM_STMT_BULK_EXECUTE (truncated row)"}
			}
			start := pos
			ind := body[pos]
			pos++
			switch ind {
			case 0:
				l, err := binaryValueLen(body[pos:], types[2*i])
				if err != nil {
					return nil, err
				}
				pos += l
			case 1, 2, 3: // NULL, DEFAULT, IGNORE: no value
			default:
				return nil, &notSupportedError{msg: fmt.Sprintf("leafproxy: malformed COM_STMT_BULK_EXECUTE (indicator %d)", ind)}
			}
			row.paramRanges = append(row.paramRanges, start, pos)
		}
		row.raw = body[:pos]
		body = body[pos:]
		rows = append(rows, row)
		if n == 0 {
			break // a row without parameters has no bytes
		}
	}
	return rows, nil
}

// binaryValueLen is the length of one binary-protocol value of type typ at
// the start of b (wire.ParamLen, the module's one reader of it), its
// error in the engine's words.
func binaryValueLen(b []byte, typ byte) (int, error) {
	n, err := wire.ParamLen(b, typ)
	if err != nil {
		return 0, executeError(err)
	}
	return n, nil
}
