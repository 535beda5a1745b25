package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"strconv"

	"github.com/leafproxy/leafproxy/internal/raw"
	"github.com/leafproxy/leafproxy/internal/sqltext"
	"github.com/leafproxy/leafproxy/proxy"
	"github.com/leafproxy/leafproxy/proxy/wire"
	"github.com/leafproxy/leafproxy/rewriter"
)

type prepared struct {
	sql    string
	plan   rewriter.Plan
	cols   []string  // Sequence plans: column names
	args   int       // Sequence plans: calls whose argument is a ? (bound at each EXECUTE)
	params *paramMap // Rewrite plans: the backend's parameters vs the client's
	// Numbered plans (numbered_prepared.go): the count statement's backend
	// id, the client's parameter types last bound, and whether long data
	// was sent (not supported).
	count uint32
	types []byte
	long  bool
	// charged: what the statement is charged while kept (keptmem.go).
	charged int64
	// What every EXECUTE would otherwise scan sql for, read once: it names
	// LAST_INSERT_ID or IDENTITY (readsLastID), or "duplicate" (an ON
	// DUPLICATE KEY clause: dupRetry.armExecute).
	readsLast, namesDup bool
}

// prepare plans a COM_STMT_PREPARE. Rewrite plans are prepared with their
// session-variable text; Sequence plans with a same-shaped constant SELECT.
func (e *Engine) prepare(ctx context.Context, s Session, sql []byte, c sqltext.Class) (bool, error) {
	if len(sql) == 0 {
		return false, nil
	}
	if !rewriter.MayRewrite(c) || !rewriter.NeedsSession(raw.String(sql), c, e.rules.Load()) {
		e.noteUnplanned(s, raw.String(sql), c, nil)
		return false, nil
	}
	text := string(sql) // kept with the statement
	st := e.state(s)
	if err := st.refreshEnv(ctx, s); err != nil {
		return false, err
	}
	plan, err := rewriter.PlanPrepareClass(text, c, &st.env)
	if errors.Is(err, proxy.ErrWouldBlock) {
		return false, err // the plan budget is full: the goroutine waits for it
	}
	if err != nil {
		if idents, strCalls := rewriter.SequenceNames(text, st.env.Mode); len(idents) > 0 {
			if relay, nerr := e.nativeOnly(ctx, st, idents, strCalls); nerr != nil || relay {
				return false, nerr
			}
		}
		return false, e.serverSyntax(ctx, s, err)
	}
	if relay, err := e.nativeRelay(ctx, st, &plan); err != nil || relay {
		return false, err
	}
	p := &prepared{sql: text, plan: plan, readsLast: readsLastID(text), namesDup: sqltext.ContainsFold(text, "duplicate")}
	var backendText []byte
	switch plan.Kind {
	case rewriter.PassThrough:
		if len(plan.Explicit) == 0 && plan.LastKey == 0 {
			e.noteUnplanned(s, text, c, &plan)
			return false, nil
		}
		// Relayed as it is; its explicit keys move the tag at each EXECUTE
		// (and the last, also a negative one, is the insert id).
		return st.relayKept(p, func() (proxy.PrepareResult, error) { return relayPrepare(ctx, s, sql) })
	case rewriter.Sequence:
		for _, c := range plan.Calls {
			if c.ArgParam > 0 {
				p.args++
			}
		}
		if len(plan.Calls) == 1 && plan.Calls[0].Func == rewriter.Decode {
			backendText = decodeBackendText(p.args > 0)
			break
		}
		backendText = append(backendText, "SELECT "...)
		for i, c := range plan.Calls {
			p.cols = append(p.cols, c.Name)
			if i > 0 {
				backendText = append(backendText, ", "...)
			}
			if c.ArgParam > 0 {
				// The client's ? (a block size), so that the statement
				// takes as many parameters as the client binds.
				backendText = append(backendText, "CAST(0*? AS SIGNED) AS "...)
				backendText = sqltext.AppendQuotedIdent(backendText, c.Name)
				continue
			}
			backendText = append(backendText, "CAST(0 AS SIGNED) AS "...)
			backendText = sqltext.AppendQuotedIdent(backendText, c.Name)
		}
	case rewriter.Numbered:
		return e.prepareNumbered(ctx, s, st, p)
	case rewriter.Rewrite:
		if err := e.checkKeys(ctx, s, nil, plan.Filled); err != nil {
			return false, err
		}
		pm, err := newParamMap(&p.plan)
		if err != nil {
			return false, err
		}
		p.params = pm
		hidden := pm.hidden
		pm.hidden = nil      // needed only to prepare
		p.plan = plan.Keep() // what an EXECUTE reads (keptmem.go)
		return st.relayKept(p, func() (proxy.PrepareResult, error) {
			// Rendered once charged: a refused prepare makes no garbage of it.
			bs, err := s.Blocking(ctx)
			if err != nil {
				return proxy.PrepareResult{}, err
			}
			rendered, err := plan.Render(nil, text, nil)
			if err != nil {
				return proxy.PrepareResult{}, err
			}
			return bs.RelayPrepareHidden(rendered, hidden, pm.backendParams)
		})
	}
	return st.relayKept(p, func() (proxy.PrepareResult, error) { return relayPrepare(ctx, s, backendText) })
}

// relayPrepare relays a prepare the engine needs the answer of (on the
// session's goroutine: ErrWouldBlock on a loop, before anything is sent).
func relayPrepare(ctx context.Context, s Session, sql []byte) (proxy.PrepareResult, error) {
	bs, err := s.Blocking(ctx)
	if err != nil {
		return proxy.PrepareResult{}, err
	}
	return bs.RelayPrepare(sql)
}

// relayKept charges p to the budgets of kept plans, relays the prepare
// and keeps p as the plan of the backend's statement: a prepare beyond
// the budgets is refused before it reaches the backend (keptmem.go).
func (st *state) relayKept(p *prepared, relay func() (proxy.PrepareResult, error)) (bool, error) {
	n := p.size()
	if err := st.chargeKept(n); err != nil {
		return false, err
	}
	res, err := relay()
	if err != nil || !res.OK {
		st.releaseKept(n)
		return !errors.Is(err, proxy.ErrWouldBlock), err
	}
	st.keep(res.StmtID, p, n)
	return true, nil
}

// plannedSynced is the statement stmtID as the engine planned it (p nil:
// one it did not plan), once the session's LAST_INSERT_ID() is set on the
// backend when an execute of it may read or change it (lastid.go).
func (e *Engine) plannedSynced(ctx context.Context, s Session, stmtID uint32) (*state, *prepared, error) {
	st, p := planned(s, stmtID)
	if st := stateOf(s); st != nil && st.lastID != 0 && st.executeNeedsSync(p) {
		if err := e.syncLastID(ctx, s, st); err != nil {
			return nil, nil, err
		}
	}
	return st, p, nil
}

// execute gives a planned prepared statement its IDs (or its answer).
func (e *Engine) execute(ctx context.Context, s Session, stmtID uint32, pkt []byte) (bool, error) {
	st, p, err := e.plannedSynced(ctx, s, stmtID)
	if err != nil || p == nil {
		return false, err
	}
	switch p.plan.Kind {
	case rewriter.Sequence:
		// A cursor would make the client fetch from the backend, which
		// has no such result.
		if f := wire.ExecuteFlags(pkt); f != 0 {
			return false, &notSupportedError{msg: "leafproxy: a cursor (COM_STMT_EXECUTE flags " + strconv.Itoa(int(f)) +
				") on a NEXTVAL/LASTVAL statement is not supported; execute it without a cursor (e.g. JDBC useCursorFetch=false)"}
		}
		calls, err := st.bindCallArgs(p, pkt)
		p.long = false // the server drops long data after an execute
		if err != nil {
			return false, err
		}
		if len(calls) == 1 && calls[0].Func == rewriter.Decode {
			err := e.decode(ctx, s, st, calls[0], true)
			st.countNextval(s)
			return true, err
		}
		if err := st.evalCalls(ctx, e, calls); err != nil {
			return false, err
		}
		st.resultRows[0] = st.resultRow
		err = s.WriteBinaryResultSet(p.cols, st.resultRows[:])
		st.countNextval(s)
		return true, err
	case rewriter.Rewrite:
		return e.executeRewrite(ctx, s, st, p, pkt, true)
	case rewriter.PassThrough:
		// Explicit keys only: the tag moves past them at every EXECUTE,
		// and the last is the OK packet's insert id, as AUTO_INCREMENT's.
		// A negative last key too (the OK reports it as MariaDB does, as
		// the text path does): every non-zero LastKey needs bs.
		var bs proxy.BlockingSession
		if p.plan.LastKey != 0 {
			var err error
			if bs, err = s.Blocking(ctx); err != nil {
				return false, err
			}
		}
		if err := e.advanceExplicit(ctx, st, p.plan.Explicit); err != nil {
			return false, err
		}
		if p.plan.LastKey != 0 {
			return true, bs.RelayExecuteInsertID(pkt, uint64(p.plan.LastKey))
		}
		return false, nil
	case rewriter.Numbered:
		handled, err := e.executeNumbered(ctx, s, st, p, pkt)
		p.long = false
		st.trim()
		return handled, err
	}
	return false, nil
}

// executeRewrite gives one EXECUTE of a Rewrite plan its IDs: the tag
// moves past the statement's explicit keys, each bound key is generated or
// kept by the value bound (as AUTO_INCREMENT would), and the rows get their
// keys in text order. With retry, a 1062 on a generated key (one written
// around the proxy) moves the tag past the table's keys and executes once
// more, as for a text statement (dupretry.go).
func (e *Engine) executeRewrite(ctx context.Context, s Session, st *state, p *prepared, pkt []byte, retry bool) (bool, error) {
	pm := p.params
	bitmap, values, offs, err := pm.parseExecute(pkt, st.paramOffsets)
	st.paramOffsets = offs
	if err != nil {
		return false, err
	}
	var kept []int64
	if pm.anyBound {
		mode, err := st.currentMode(ctx, s)
		if err != nil {
			return false, err
		}
		if kept, err = st.keptKeys(p, mode, bitmap, values, offs); err != nil {
			return false, err
		}
	}
	// Every row keeps its bound key: the OK packet reports the last, as
	// for an AUTO_INCREMENT column (on the session's goroutine).
	insertID := lastKeptKey(&p.plan, kept)
	var bs proxy.BlockingSession
	if insertID != 0 {
		if bs, err = s.Blocking(ctx); err != nil {
			return false, err
		}
	}
	if err := e.advanceExplicit(ctx, st, p.plan.Explicit); err != nil {
		return false, err
	}
	if err := st.drawPlan(ctx, e, &p.plan, kept); err != nil {
		if w := ignoreWarning(p.sql, p.plan.Statements, err); w != "" && !pm.anyLong {
			return true, s.RelayQuery([]byte(w)) // an OK with warning 167, as AUTO_INCREMENT answers (keyrange.go)
		}
		return false, err
	}
	st.rendered = pm.appendExecute(st.rendered[:0], pkt, bitmap, values, offs, st.slotIDs)
	long := pm.anyLong // an execute sent again would lack it
	pm.resetLong()     // the server drops long data after an execute
	st.countStmt(StmtFilled)
	_, adv := e.idSource.(advancer)
	retry = retry && adv && len(p.plan.Filled) > 0 && !long && len(pkt) <= maxRetryText
	if insertID != 0 {
		err = bs.RelayExecuteInsertID(st.rendered, uint64(insertID))
	} else if retry || p.plan.ReportsKey {
		st.dup.armExecute(e, st, p, pkt, st.slotIDs, retry)
		err = s.RelayExecuteOr(st.rendered, &st.dup)
	} else {
		err = s.RelayExecute(st.rendered)
	}
	st.trim()
	return true, err
}

// advanceExplicit moves each tag past the explicit keys written before
// any of its generated ones.
func (e *Engine) advanceExplicit(ctx context.Context, st *state, explicit []rewriter.ExplicitKey) error {
	for _, x := range explicit {
		// Before anything is sent, so that an ErrWouldBlock (the store
		// must be raised) leaves nothing half done.
		if err := e.advance(ctx, st.own(x.Tag), x.Max); err != nil {
			return err
		}
	}
	return nil
}

// bulkExecute lets MariaDB's COM_STMT_BULK_EXECUTE through on statements
// the engine did not rewrite; on a statement with generated keys every row
// gets its own IDs (bulk.go).
func (e *Engine) bulkExecute(ctx context.Context, s Session, stmtID uint32, pkt []byte) (bool, error) {
	st, p, err := e.plannedSynced(ctx, s, stmtID)
	if err != nil || p == nil {
		return false, err
	}
	switch p.plan.Kind {
	case rewriter.Rewrite:
		return e.bulkRewrite(ctx, s, st, p, pkt)
	case rewriter.Sequence:
		return false, &notSupportedError{msg: "leafproxy: COM_STMT_BULK_EXECUTE of a NEXTVAL/LASTVAL select is not supported; execute it once per row"}
	case rewriter.Numbered:
		return false, &notSupportedError{msg: "leafproxy: COM_STMT_BULK_EXECUTE of a statement whose rows the proxy numbers (INSERT ... SELECT, NEXTVAL in UPDATE) is not supported; execute it once per row"}
	}
	return false, nil
}

// sendLongData moves a COM_STMT_SEND_LONG_DATA of a statement with
// generated values to the backend's parameter index and remembers that the
// parameter's value will not be in the next execute packet.
func (e *Engine) sendLongData(s Session, stmtID uint32, pkt []byte) {
	_, p := planned(s, stmtID)
	if p != nil && (p.plan.Kind == rewriter.Numbered || p.plan.Kind == rewriter.Sequence) {
		p.long = true
		return
	}
	if p == nil || p.params == nil || len(pkt) < 7 {
		return
	}
	j := p.params.longData(int(binary.LittleEndian.Uint16(pkt[5:7])))
	binary.LittleEndian.PutUint16(pkt[5:7], uint16(min(j, 65535)))
}

// stmtReset forgets the statement's long data, as the server does.
func (e *Engine) stmtReset(s Session, stmtID uint32) {
	if _, p := planned(s, stmtID); p != nil && p.params != nil {
		p.params.resetLong()
	} else if p != nil {
		p.long = false
	}
}

// stmtClosed drops the statement's plan.
func (e *Engine) stmtClosed(s Session, stmtID uint32) {
	if st, ok := s.Value().(*state); ok {
		if p := st.stmts[stmtID]; p != nil && p.count != 0 {
			st.orphans = append(st.orphans, p.count)
			st.closeOrphans(context.Background()) // on a loop: closed later
		}
		st.forget(stmtID)
	}
}

// planned is the session's state and the engine's plan for stmtID (nil
// when the engine did not plan that statement: the proxy relays it).
func planned(s Session, stmtID uint32) (*state, *prepared) {
	st, ok := s.Value().(*state)
	if !ok {
		return nil, nil
	}
	return st, st.stmts[stmtID]
}
