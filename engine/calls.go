package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/leafproxy/leafproxy/proxy"
	"github.com/leafproxy/leafproxy/rewriter"
)

// evalCalls computes a Sequence plan's row left to right into st.resultRow
// (the calls' arguments bound: see bindCallArgs).
func (st *state) evalCalls(ctx context.Context, e *Engine, calls []rewriter.Call) error {
	if proxy.MustNotBlock(ctx) {
		for _, c := range calls {
			if c.Func == rewriter.Set {
				// SETVAL writes to the store: on the session's goroutine,
				// and before any other call of the row has drawn an ID.
				return proxy.ErrWouldBlock
			}
		}
	}
	if len(st.pending) > 0 {
		for _, c := range calls {
			if _, ok := st.pending[c.Tag]; ok && c.Func == rewriter.Last {
				if err := st.resolveLast(ctx); err != nil {
					return err
				}
				break
			}
		}
	}
	st.resultRow = st.resultRow[:0]
	st.rowValues = st.rowValues[:0]
	if cap(st.rowValues) < len(calls) {
		st.rowValues = make([]int64, 0, len(calls))
	}
	for _, c := range calls {
		switch c.Func {
		case rewriter.Next:
			te := st.ownTag(c.Tag)
			tag := te.name
			if c.N > 1 {
				// NEXTVAL('tag', n): the first of n consecutive IDs,
				// LASTVAL the last.
				first, err := e.block(ctx, tag, c.N)
				if err != nil {
					return err
				}
				st.countIDs(te, c.N)
				st.setLast(tag, first+c.N-1)
				st.rowValues = append(st.rowValues, first)
				st.resultRow = append(st.resultRow, &st.rowValues[len(st.rowValues)-1])
				continue
			}
			got, err := e.idSource.NextN(ctx, tag, 1, st.singleDraw[:0])
			if err != nil {
				return fmt.Errorf("NEXTVAL(%s): %w", tag, err)
			}
			st.countIDs(te, 1)
			st.singleDraw = got
			st.setLast(tag, got[0])
			st.rowValues = append(st.rowValues, got[0])
			st.resultRow = append(st.resultRow, &st.rowValues[len(st.rowValues)-1])
		case rewriter.Set:
			// Raising a sequence steers every proxy's IDs: operators only.
			if !st.session.Admin() {
				err := proxy.ErrNeedAdmin("SETVAL")
				st.auditSetVal(c, err)
				return err
			}
			err := e.setVal(ctx, c)
			st.auditSetVal(c, err)
			if err != nil {
				return err
			}
			// MariaDB's SETVAL returns the value it was given.
			st.rowValues = append(st.rowValues, c.Value)
			st.resultRow = append(st.resultRow, &st.rowValues[len(st.rowValues)-1])
		default:
			if v, ok := st.last[c.Tag]; ok {
				st.rowValues = append(st.rowValues, *v)
				st.resultRow = append(st.resultRow, &st.rowValues[len(st.rowValues)-1])
			} else {
				st.resultRow = append(st.resultRow, nil)
			}
		}
	}
	return nil
}

// valueSetter is implemented by ID sources that can raise a tag's floor
// (allocator.Sequences).
type valueSetter interface {
	SetVal(ctx context.Context, tag string, n int64, used bool) error
}

// setVal runs SETVAL(tag, n[, used]) against the ID source.
func (e *Engine) setVal(ctx context.Context, c rewriter.Call) error {
	vs, ok := e.idSource.(valueSetter)
	if !ok {
		return &notSupportedError{msg: fmt.Sprintf("leafproxy: SETVAL('%s', %d) is not supported by this ID source", c.Tag, c.Value)}
	}
	if err := vs.SetVal(ctx, strings.Clone(c.Tag), c.Value, c.Used); err != nil {
		return fmt.Errorf("SETVAL(%s, %d): %w", c.Tag, c.Value, err)
	}
	return nil
}

// sessionReset forgets prepared plans and LASTVAL: COM_RESET_CONNECTION
// drops the backend's statements and variables too.
func (e *Engine) sessionReset(s Session) {
	if st, ok := s.Value().(*state); ok {
		st.forgetAll()
		clear(st.last)
		clear(st.pending)
		st.lastID = 0 // the server reset LAST_INSERT_ID() too
		st.counters = counterVars{}
		st.unplannedReads = false // every prepared statement is gone
		st.orphans = nil          // the backend dropped every statement
	}
}

// sessionClosed drops the session's state (its counts go to the totals).
func (e *Engine) sessionClosed(s Session) {
	if st, ok := s.Value().(*state); ok {
		st.forgetAll()
		e.retire(st)
	}
	s.SetValue(nil)
}

// notSupportedError is a 1235 (ER_NOT_SUPPORTED_YET) the engine raises itself:
// a rule's key column that cannot hold generated IDs, a cursor on a NEXTVAL
// statement.
type notSupportedError struct{ msg string }

func (e *notSupportedError) Error() string { return e.msg }

func (e *notSupportedError) Code() uint16 { return 1235 }

func (e *notSupportedError) SQLState() string { return "42000" }

// reportedIDs is Plan.StmtKeys as RelayQueryInsertIDs takes them.
func reportedIDs(keys []int64) []uint64 {
	out := make([]uint64, len(keys))
	for i, k := range keys {
		out[i] = uint64(k) // a negative key as MariaDB reports it
	}
	return out
}
