package engine

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/wire"
	"github.com/leafproxy/leafproxy/rewriter"
)

// AUTO_INCREMENT hands out keys row by row: an explicit key moves the
// counter past it for the rows after it, not for the rows before it, and a
// key bound at EXECUTE time is generated or kept by what it converts to.
// drawPlan does the same with the plan's IDs: one NextN per tag in the
// common case (no explicit key among generated ones), otherwise slot by
// slot in text order (drawOrdered).

// keptNone marks a bound key that keeps the client's value and moves no
// tag (a value that is not positive, or one the server refuses).
const keptNone = -1

// drawPlan draws plan's IDs into st.slotIDs. kept (prepared plans with
// bound keys, else nil) says per slot: 0, generate; > 0, keep the client's
// value and move the tag past it; keptNone, keep it. A kept slot's ID is 0.
func (st *state) drawPlan(ctx context.Context, e *Engine, plan *rewriter.Plan, kept []int64) error {
	if len(plan.Advances) == 0 && kept == nil {
		return st.draw(ctx, e, plan)
	}
	return st.drawOrdered(ctx, e, plan, kept)
}

// tagRun is the slots of one tag waiting for IDs, in text order.
type tagRun struct {
	tag   string
	slots []int
}

// drawOrdered draws slot by slot in text order, moving each tag past the
// explicit keys between its slots (plan.Advances and kept values) once the
// slots before them have their IDs.
func (st *state) drawOrdered(ctx context.Context, e *Engine, plan *rewriter.Plan, kept []int64) error {
	n := len(plan.Slots)
	if cap(st.slotIDs) < n {
		st.slotIDs = make([]int64, n)
	}
	st.slotIDs = st.slotIDs[:n]
	clear(st.slotIDs)
	// The key columns' ends, before any ID is drawn (keyrange.go).
	var err error
	if st.limits, err = e.keyLimits(ctx, st.session, &st.lastColumns, plan.Filled, st.limits[:0]); err != nil {
		return err
	}
	var runs []tagRun
	flush := func(tag string) error {
		for i := range runs {
			if r := &runs[i]; r.tag == tag && len(r.slots) > 0 {
				te := st.ownTag(r.tag)
				ids, err := e.idSource.NextN(ctx, te.name, len(r.slots), st.drawnIDs[:0])
				if err != nil {
					if oe := atEnd(st.limits, te.name, len(r.slots), err); oe != nil {
						oe.Row += r.slots[0] // rows counted as checkIDs counts them
						return oe
					}
					return fmt.Errorf("generate %d ID(s) for %q: %w", len(r.slots), te.name, err)
				}
				st.drawnIDs = ids
				if len(st.limits) > 0 {
					if err := checkIDs(st.limits, te.name, ids, r.slots[0]+1); err != nil {
						return err
					}
				}
				for j, k := range r.slots {
					st.slotIDs[k] = ids[j]
				}
				st.countIDs(te, int64(len(r.slots)))
				st.setLast(te.name, ids[len(ids)-1])
				r.slots = r.slots[:0]
			}
		}
		return nil
	}
	advance := func(tag string, v int64) error {
		if err := flush(tag); err != nil {
			return err
		}
		return e.advance(ctx, st.own(tag), v)
	}
	a := 0
	for k, sl := range plan.Slots {
		for ; a < len(plan.Advances) && plan.Advances[a].At < sl.Start; a++ {
			if err := advance(plan.Advances[a].Tag, plan.Advances[a].To); err != nil {
				return err
			}
		}
		if kept != nil && kept[k] != 0 {
			if kept[k] > 0 {
				if err := advance(sl.Tag, kept[k]); err != nil {
					return err
				}
			}
			continue
		}
		i := 0
		for i < len(runs) && runs[i].tag != sl.Tag {
			i++
		}
		if i == len(runs) {
			runs = append(runs, tagRun{tag: sl.Tag})
		}
		runs[i].slots = append(runs[i].slots, k)
	}
	for ; a < len(plan.Advances); a++ {
		if err := advance(plan.Advances[a].Tag, plan.Advances[a].To); err != nil {
			return err
		}
	}
	for _, r := range runs {
		if err := flush(r.tag); err != nil {
			return err
		}
	}
	return nil
}

// keptKeys decides, for a prepared plan's bound keys, from the values of
// this EXECUTE (values and offs as parseExecute returns them), which keep
// the client's value (see drawPlan's kept); nil when the plan has none.
func (st *state) keptKeys(p *prepared, mode rewriter.Mode, bitmap, values []byte, offs []int) ([]int64, error) {
	pm := p.params
	if !pm.anyBound {
		return nil, nil
	}
	kept := st.kept[:0]
	for _, sl := range p.plan.Slots {
		c := -1
		if sl.Bound && sl.Param > 0 {
			c = int(pm.sourceOf[sl.Param-1])
		}
		if c < 0 {
			kept = append(kept, 0)
			continue
		}
		var v rewriter.KeyValue
		switch {
		case bitmap[c/8]&(1<<(c%8)) != 0:
			v.Null = true
		case pm.long[c]:
			return nil, &notSupportedError{msg: "leafproxy: the key column's value was sent as long data (COM_STMT_SEND_LONG_DATA); bind the key as an integer, a string or NULL"}
		default:
			var err error
			if v, err = boundKeyValue(pm.types[2*c], pm.types[2*c+1], values[offs[2*c]:offs[2*c+1]]); err != nil {
				return nil, err
			}
		}
		m := mode
		if sl.KeepZero {
			m.NoAutoValueOnZero = true // the rule keeps a bound 0
		}
		switch {
		case v.Generates(m, sl.Ignore):
			kept = append(kept, 0)
		case v.Explicit(m, sl.Ignore) > 0:
			kept = append(kept, v.Explicit(m, sl.Ignore))
		default:
			kept = append(kept, keptNone)
		}
	}
	st.kept = kept
	return kept, nil
}

// boundKeyValue is what a binary-protocol value of type typ (flags: 0x80
// unsigned) converts to in an integer key column.
func boundKeyValue(typ, flags byte, b []byte) (rewriter.KeyValue, error) {
	unsigned := flags&0x80 != 0
	integer := func(u uint64, bits uint) rewriter.KeyValue {
		if !unsigned && bits < 64 && u&(1<<(bits-1)) != 0 {
			u |= ^uint64(0) << bits // sign-extend
		}
		if unsigned && u > math.MaxInt64 {
			return rewriter.KeyValue{Overflow: true}
		}
		return rewriter.KeyValue{V: int64(u)}
	}
	switch typ {
	case mysql.MYSQL_TYPE_NULL:
		return rewriter.KeyValue{Null: true}, nil
	case mysql.MYSQL_TYPE_TINY:
		return integer(uint64(b[0]), 8), nil
	case mysql.MYSQL_TYPE_SHORT, mysql.MYSQL_TYPE_YEAR:
		return integer(uint64(binary.LittleEndian.Uint16(b)), 16), nil
	case mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_INT24:
		return integer(uint64(binary.LittleEndian.Uint32(b)), 32), nil
	case mysql.MYSQL_TYPE_LONGLONG:
		return integer(binary.LittleEndian.Uint64(b), 64), nil
	case mysql.MYSQL_TYPE_FLOAT:
		return rewriter.ConvertFloat(float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))), nil
	case mysql.MYSQL_TYPE_DOUBLE:
		return rewriter.ConvertFloat(math.Float64frombits(binary.LittleEndian.Uint64(b))), nil
	case mysql.MYSQL_TYPE_DECIMAL, mysql.MYSQL_TYPE_NEWDECIMAL, mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING,
		mysql.MYSQL_TYPE_STRING, mysql.MYSQL_TYPE_TINY_BLOB, mysql.MYSQL_TYPE_MEDIUM_BLOB, mysql.MYSQL_TYPE_LONG_BLOB,
		mysql.MYSQL_TYPE_BLOB, mysql.MYSQL_TYPE_ENUM, mysql.MYSQL_TYPE_SET, mysql.MYSQL_TYPE_JSON:
		v, _, k := wire.Lenenc(b)
		return rewriter.ConvertString(string(b[k : k+int(v)])), nil
	}
	return rewriter.KeyValue{}, &notSupportedError{msg: fmt.Sprintf("leafproxy: the key column's value is bound with type %d, which the proxy does not convert; "+
		"bind the key as an integer, a string or NULL", typ)}
}

// lastKeptKey is the insert id MariaDB would report for an EXECUTE whose
// rows all keep their keys (kept, from keptKeys, and literals): the last
// row's key, bound or literal (Plan.LastKeyAt; a negative literal too);
// 0 when a key is generated, or when there is none to report.
func lastKeptKey(plan *rewriter.Plan, kept []int64) int64 {
	if len(kept) == 0 || plan.Statements > 1 {
		return 0
	}
	for k, sl := range plan.Slots {
		if !sl.Bound || kept[k] == 0 {
			return 0
		}
	}
	last := max(kept[len(kept)-1], 0) // keptNone: a bound key not positive, not reported
	if plan.LastKeyAt > plan.Slots[len(plan.Slots)-1].Start {
		last = plan.LastKey // a negative literal as MariaDB reports it
	}
	return last
}
