package engine

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/leafproxy/leafproxy/proxy/wire"
	"github.com/leafproxy/leafproxy/rewriter"
)

// Prepared numbered statements (rewriter.PlanPrepare's Numbered plans).
// The statement is prepared with the client's own parameters and reads its
// blocks from session variables, so the client's EXECUTE packets go to the
// backend unchanged. Beside it the engine prepares the count (with the
// same parameters in the same order: the count query takes each marker
// where the statement has it), which stores its row in variables. Each
// EXECUTE then runs: the count (the client's packet, re-addressed), a read
// of its variables, the reservations, one SET of the block variables, and
// the client's execute, again with more room if the rows outgrew the
// count.

// prepareNumbered prepares a Numbered plan's count and statement.
func (e *Engine) prepareNumbered(ctx context.Context, s Session, st *state, p *prepared) (bool, error) {
	bs, err := s.Blocking(ctx)
	if err != nil {
		return false, err
	}
	if err := e.checkKeys(ctx, s, nil, p.plan.Filled); err != nil {
		return false, err
	}
	st.closeOrphans(ctx)
	// The count first: the client's statement must be the backend's last
	// prepared (MariaDB's statement id -1 means it).
	cnt, err := bs.BackendPrepare(ctx, p.plan.CountQuery())
	if err != nil {
		return false, countError(err)
	}
	n := p.size()
	if err := st.chargeKept(n); err != nil {
		if cerr := bs.BackendCloseStmt(cnt.StmtID); cerr != nil {
			return true, cerr
		}
		return false, err
	}
	res, err := bs.RelayPrepare(p.plan.RenderNumbered(nil, p.sql, nil))
	if err != nil || !res.OK {
		st.releaseKept(n)
		if cerr := bs.BackendCloseStmt(cnt.StmtID); err == nil {
			err = cerr
		}
		return true, err
	}
	p.count = cnt.StmtID
	st.keep(res.StmtID, p, n)
	return true, nil
}

// executeNumbered runs one EXECUTE of a prepared Numbered plan.
func (e *Engine) executeNumbered(ctx context.Context, s Session, st *state, p *prepared, pkt []byte) (bool, error) {
	bs, err := s.Blocking(ctx)
	if err != nil {
		return false, err
	}
	if p.long {
		return false, &notSupportedError{msg: "leafproxy: COM_STMT_SEND_LONG_DATA on a statement whose rows the proxy numbers is not supported; bind the value in the execute"}
	}
	countPkt, err := p.countExecute(st.rendered[:0], pkt)
	if err != nil {
		return false, err
	}
	plan := &p.plan
	return e.numberedAttempts(ctx, s, st, plan, numberedRun{
		count: func() ([][]*string, error) {
			r, err := bs.ExecuteResult(countPkt)
			if err != nil {
				return nil, err
			}
			if r.Err != nil {
				return nil, countError(r.Err)
			}
			rows, err := bs.BackendQuery(ctx, plan.CountsQuery())
			if err != nil {
				return nil, fmt.Errorf("leafproxy: read the row count: %w", err)
			}
			return rows, nil
		},
		send: func(blocks []rewriter.Block) (bool, error) {
			if _, _, err := bs.BackendExec(ctx, string(plan.BlockVars(nil, blocks))); err != nil {
				return false, fmt.Errorf("leafproxy: set the blocks of generated IDs: %w", err)
			}
			return bs.RelayExecuteRetry(pkt, rewriter.OverflowError)
		},
	})
}

// countExecute is the client's execute packet re-addressed to the count
// statement: no cursor, and the parameter types the client bound on an
// earlier execute when it did not send them again (the count statement
// has seen only the ones this function sent).
func (p *prepared) countExecute(dst, pkt []byte) ([]byte, error) {
	n := p.plan.ClientParams
	ex, err := wire.ParseExecute(pkt, n, p.types)
	if err != nil {
		return dst, executeError(err)
	}
	dst = append(dst, pkt[:execHeader]...)
	binary.LittleEndian.PutUint32(dst[1:5], p.count)
	dst[5] = 0 // no cursor
	if n == 0 {
		return dst, nil
	}
	if ex.NewParamsBound {
		p.types = append(p.types[:0], ex.Types...)
	}
	dst = append(dst, ex.NullBitmap...)
	dst = append(dst, 1)
	dst = append(dst, p.types...)
	return append(dst, ex.Values...), nil
}

// closeOrphans closes count statements whose client statement was closed
// while the session was on an event loop (where the engine cannot write
// to the backend).
func (st *state) closeOrphans(ctx context.Context) {
	bs, err := st.session.Blocking(ctx)
	if err != nil {
		return
	}
	for len(st.orphans) > 0 {
		if err := bs.BackendCloseStmt(st.orphans[0]); err != nil {
			return
		}
		st.orphans = st.orphans[1:]
	}
}
