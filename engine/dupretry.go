package engine

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/internal/raw"
	"github.com/leafproxy/leafproxy/internal/sqltext"
	"github.com/leafproxy/leafproxy/proxy"
	"github.com/leafproxy/leafproxy/rewriter"
)

// A generated key that collides with a key written around the proxy (a
// bulk import straight to the database, a writer that bypasses it) fails
// the INSERT with 1062 on that key. AUTO_INCREMENT would never collide
// with an existing row, so the engine recovers as its counter would have
// been placed: it moves the tag past the largest key of the tables it
// filled (and past the conflicting one), and sends the statement once more
// with fresh keys. The server rolled the failed statement back (InnoDB:
// the statement, not the transaction), so nothing is written twice. Only a
// text holding the one statement, or one EXECUTE, is retried, and only
// once.

// maxRetryText: a statement (or execute packet) larger than this is not
// retried after a 1062 on a generated key (the client gets the 1062): the
// retry needs its own copy of the text until the answer is known, which a
// session must not hold for long at that size (it keeps it until the
// next filled statement).
const maxRetryText = 256 << 10

// dupRetry is a session's proxy.AnswerWatcher for its filled INSERTs: it
// retries a 1062 on a generated key (OnErr, Redo), puts the session's
// LAST_INSERT_ID() back after an ERR or an OK that wrote nothing (OnErr,
// OnOK) and reports a ReportsKey plan's key in its OK (OnOK, OnRows,
// lastid.go). It lives in the session's state, so arming it allocates
// nothing once its buffers have grown.
type dupRetry struct {
	engine  *Engine
	session *state
	text    []byte        // the statement as the client sent it
	class   sqltext.Class // its class (sqltext.Classify), planned again with the text
	keys    []int64       // the generated keys of the attempt
	// borrowed: keys is the attempt's IDs (st.slotIDs), not to be
	// written.
	borrowed bool
	// tags: keys[tagEnd[i-1]:tagEnd[i]] are of tags[i] (runs: a many-row
	// INSERT's keys are of one tag, not worth a string each)
	tags   []string
	tagEnd []int
	filled []rewriter.Filled
	dupKey int64 // the colliding key (retry)
	dupTag string
	// stmt and execute: a prepared statement's attempt (armExecute): the
	// client's execute packet, executed again by Redo.
	stmt    *prepared
	execute []byte
	// wrapID: the key in the attempt's LAST_INSERT_ID(...) when an ERR
	// may mean its row was not written (Plan.WrapLast, Plan.WrapMarked),
	// else 0 (restore).
	wrapID int64
	// firstID: the key in the attempt's LAST_INSERT_ID(...) (one
	// statement), else 0 (restoreOK); of a ReportsKey plan its first
	// generated key.
	firstID int64
	// plain: a ReportsKey plan, whose first key the engine reports
	// (reportOK, lastid.go); marked: its next row is marked (restore);
	// odku: it has ON DUPLICATE KEY UPDATE; prevLast: the session's
	// state.lastID when it was sent.
	plain, marked, odku bool
	prevLast            int64
	// noRetry: a 1062 is relayed, not retried (a ReportsKey plan relayed
	// through RelayQueryOr only for reportOK).
	noRetry bool
}

var _ proxy.AnswerWatcher = (*dupRetry)(nil)

// OnErr: a 1062 on one of the attempt's generated keys is retried (Redo),
// any other ERR relayed, after restore's statement if it names one. It
// runs as the answer arrives, on an event loop too: it does not block.
func (d *dupRetry) OnErr(code uint16, msg string) proxy.ErrVerdict {
	if d.retry(code, msg) {
		return proxy.ErrVerdict{Retry: true}
	}
	return proxy.ErrVerdict{Restore: d.restore(code)}
}

// OnOK: an OK with no row affected may need the session put back
// (restoreOK); any other has the insert id reportOK gives. It does not
// block.
func (d *dupRetry) OnOK(affected, insertID uint64) proxy.OKVerdict {
	if affected == 0 {
		if sql := d.restoreOK(); sql != "" {
			return proxy.OKVerdict{Restore: sql}
		}
	}
	return proxy.OKVerdict{InsertID: d.reportOK(affected, insertID)}
}

// arm remembers the attempt: text, the plan's generated keys (ids[i] for
// plan.Slots[i]) and its filled tables.
func (d *dupRetry) arm(e *Engine, st *state, text string, c sqltext.Class, plan *rewriter.Plan, ids []int64, retry bool) {
	d.engine, d.session = e, st
	d.noRetry = !retry
	d.odku = plan.ReportsKey && sqltext.ContainsFold(text, "duplicate")
	if !retry {
		text = "" // not sent again: no copy
	}
	d.text, d.class = append(d.text[:0], text...), c
	d.tags, d.tagEnd = d.tags[:0], d.tagEnd[:0]
	keys := 0
	for _, sl := range plan.Slots {
		if sl.Key {
			if n := len(d.tags); n == 0 || d.tags[n-1] != sl.Tag {
				d.tags = append(d.tags, sl.Tag) // a rule's tag: owned by the rules
				d.tagEnd = append(d.tagEnd, 0)
			}
			keys++
			d.tagEnd[len(d.tagEnd)-1] = keys
		}
	}
	if keys == len(ids) && keys > 1<<12 {
		// Every ID is a key (a many-row INSERT): the attempt's IDs
		// themselves, not a copy (st.slotIDs, not redrawn before Retry).
		d.keys, d.borrowed = ids, true
	} else {
		if d.borrowed || cap(d.keys) > 1<<16 {
			// Not another attempt's IDs, nor a many-row one's copy (kept
			// until here: on an event loop the answer, and Retry, may
			// come after the engine returned).
			d.keys, d.borrowed = nil, false
		}
		d.keys = d.keys[:0]
		for i, sl := range plan.Slots {
			if sl.Key {
				d.keys = append(d.keys, ids[i])
			}
		}
	}
	d.filled = append(d.filled[:0], plan.Filled...)
	d.stmt, d.execute = nil, d.execute[:0]
	d.wrapID, d.firstID = 0, 0
	if plan.Statements == 1 {
		for i, sl := range plan.Slots {
			if sl.Key {
				d.firstID = ids[i] // 0: a bound key kept, LAST_INSERT_ID(...) not run
				break
			}
		}
		if plan.WrapLast || plan.WrapMarked {
			d.wrapID = d.firstID
		}
	}
	d.plain, d.marked, d.prevLast = plan.ReportsKey, plan.WrapMarked, st.lastID
	if d.plain {
		// The first generated key (a bound key kept is 0, not generated).
		d.firstID = 0
		for i, sl := range plan.Slots {
			if sl.Key && ids[i] != 0 {
				d.firstID = ids[i]
				break
			}
		}
	}
}

// restoreOK: an OK with no row affected (INSERT IGNORE or ON DUPLICATE
// KEY UPDATE whose rows were all duplicates, IGNOREd or left unchanged)
// wrote no generated key, so MariaDB reports insert id 0 and leaves
// LAST_INSERT_ID() as it was: put it back.
func (d *dupRetry) restoreOK() string {
	if d.plain || d.firstID <= 0 {
		return ""
	}
	return rewriter.RestoreLastInsertID(d.firstID)
}

// restore puts back the session's LAST_INSERT_ID() after an ERR of the
// attempt, when its LAST_INSERT_ID(<key>) ran and the row was not
// written: MariaDB leaves it as it was (rewriter.RestoreLastInsertID).
// Not after 1927: the backend connection is gone.
func (d *dupRetry) restore(code uint16) string {
	if d.plain {
		// The server's LAST_INSERT_ID() is untouched; only a marked
		// statement may have written its first key's row before it
		// failed (MariaDB then keeps that key), which RestorePlain
		// tells on the server, leaving the server's value the session's.
		if !d.marked || d.firstID <= 0 || code == erConnectionKilled {
			return ""
		}
		d.session.lastID = 0
		return rewriter.RestorePlain(d.firstID, d.prevLast)
	}
	if d.wrapID <= 0 || code == erConnectionKilled {
		return ""
	}
	return rewriter.RestoreLastInsertIDAfterError(d.wrapID)
}

// armExecute remembers a prepared statement's attempt: the client's
// execute packet pkt, the keys generated for it (ids[i] for its plan's
// Slots[i]; 0 for a bound key kept).
func (d *dupRetry) armExecute(e *Engine, st *state, p *prepared, pkt []byte, ids []int64, retry bool) {
	d.arm(e, st, "", sqltext.Class{}, &p.plan, ids, retry)
	d.odku = p.plan.ReportsKey && p.namesDup
	d.stmt = p
	if retry {
		d.execute = append(d.execute[:0], pkt...)
	}
}

// retry accepts 1062 on one of the attempt's generated keys.
func (d *dupRetry) retry(code uint16, msg string) bool {
	if code != 1062 || d.noRetry {
		return false
	}
	// MariaDB and MySQL: Duplicate entry '<value>' for key '<index>'.
	const prefix = "Duplicate entry '"
	if !strings.HasPrefix(msg, prefix) {
		return false
	}
	rest := msg[len(prefix):]
	end := strings.Index(rest, "' for key")
	if end < 0 {
		return false
	}
	v, err := strconv.ParseInt(rest[:end], 10, 64)
	if err != nil {
		return false
	}
	for i, k := range d.keys {
		if k == v {
			r := 0
			for d.tagEnd[r] <= i {
				r++
			}
			d.dupKey, d.dupTag = v, d.tags[r]
			return true
		}
	}
	return false
}

// Redo moves the tag past the collision and sends the statement again.
func (d *dupRetry) Redo(ctx context.Context) error {
	e, st, s := d.engine, d.session, d.session.session
	floor := d.dupKey
	bs, err := s.Blocking(ctx)
	if err != nil {
		return err
	}
	for _, f := range d.filled {
		if f.Tag != d.dupTag {
			continue
		}
		rows, err := bs.BackendQuery(ctx, "SELECT MAX("+sqltext.QuoteIdent(f.Column)+") FROM "+sqltext.QuoteIdent(f.DB)+"."+sqltext.QuoteIdent(f.Table))
		if err != nil {
			return fmt.Errorf("leafproxy: the generated key %d of sequence %q collided with an existing row; reading the largest key of %s.%s: %w",
				d.dupKey, d.dupTag, f.DB, f.Table, err)
		}
		if len(rows) == 1 && len(rows[0]) == 1 && rows[0][0] != nil {
			if m, err := strconv.ParseInt(*rows[0][0], 10, 64); err == nil {
				floor = max(floor, m)
			}
		}
	}
	if err := e.advance(ctx, d.dupTag, floor); err != nil {
		return err
	}
	e.dupRetries.Add(1)
	if l := st.logger(); l != nil {
		l.Warn("a generated key collided with a key written around the proxy; the sequence was moved past the table's largest key and the statement sent again",
			"tag", d.dupTag, "key", d.dupKey, "moved_past", floor)
	}
	if d.stmt != nil {
		// The same EXECUTE again, with fresh keys, not retried again.
		_, err := e.executeRewrite(ctx, s, st, d.stmt, d.execute, false)
		return err
	}
	text := raw.String(d.text)
	st.ctx = ctx // the plan budget waits with it
	plan, err := st.planner.PlanQuery(text, d.class, &st.env)
	if err != nil {
		return err
	}
	if plan.Kind != rewriter.Rewrite {
		return s.RelayQuery(d.text)
	}
	if err := e.advanceExplicit(ctx, st, plan.Explicit); err != nil {
		return err
	}
	if err := st.drawPlan(ctx, e, &plan, nil); err != nil {
		return err
	}
	if st.rendered, err = plan.Render(append(st.rendered[:0], mysql.COM_QUERY), text, st.slotIDs); err != nil {
		return err
	}
	if plan.ReportsKey {
		// Its OK's insert id is the engine's again (reportOK), for the
		// fresh keys; not retried again.
		d.arm(e, st, text, d.class, &plan, st.slotIDs, false)
		err = s.RelayQueryPacketOr(st.rendered, d)
	} else {
		err = s.RelayQueryPacket(st.rendered)
	}
	st.trim()
	return err
}

type engineCounters struct {
	numberedRetries, dupRetries atomic.Uint64
}

// erConnectionKilled is MariaDB's 1927: the session's connection was killed.
const erConnectionKilled = 1927
