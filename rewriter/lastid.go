package rewriter

import (
	"strconv"
	"strings"
)

// The session's LAST_INSERT_ID() after a filled statement that failed.
//
// MariaDB leaves LAST_INSERT_ID() as it was when a statement fails before
// it wrote a row with a generated key. The proxy's first generated key is
// LAST_INSERT_ID(<id>), which sets it as the row's values are read, before
// the row can fail: so the wrap also keeps the value it replaces, in the
// session variable @__leaf_l (read before the new one is set), and after an
// ERR the engine runs RestoreLastInsertID's statement. It costs a
// successful statement nothing but these bytes of text; the restore runs
// only after an ERR.

// wrapOpen opens the first generated key's LAST_INSERT_ID(...): 0 times
// the assignment, plus the key, is the key.
const wrapOpen = "LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+"

// markOpen opens the generated key of the row after the wrapped key's
// row (Plan.WrapMarked): 0 times the assignment, plus the key, is the key.
// The server reads a row's values only once it wrote the row before, so
// @__leaf_m is the wrapped key exactly when its row was written.
const markOpen = "0*(@__leaf_m:=LAST_INSERT_ID())+"

// markIf is markOpen for a value whose type is to stay (a client's ?):
// IF(<never NULL> IS NULL, NULL, v) is v, of v's type.
const markIf = "IF((@__leaf_m:=LAST_INSERT_ID()) IS NULL,NULL,"

// RestoreLastInsertIDAfterError is the statement that puts back the
// session's LAST_INSERT_ID() after an ERR of a statement whose first
// generated key was id (Plan.WrapLast or Plan.WrapMarked): as
// RestoreLastInsertID, but not when the row after id's row was read
// (@__leaf_m is id: id's row was written before a later row failed, and
// MariaDB reports its key). @__leaf_m of an earlier statement is never id,
// a key drawn for this one.
func RestoreLastInsertIDAfterError(id int64) string {
	n := strconv.FormatInt(id, 10)
	return "DO LAST_INSERT_ID(IF(LAST_INSERT_ID() = " + n + " AND NOT @__leaf_m <=> " + n + ", @__leaf_l, LAST_INSERT_ID()))"
}

// RestoreLastInsertID is the statement that puts back the session's
// LAST_INSERT_ID() from before a failed statement whose first generated
// key (in LAST_INSERT_ID(...)) was id: only when that wrap ran (it is id
// now), else it leaves the value alone (the statement failed before it).
// It reads no table, so it neither starts nor ends a transaction, and
// leaves the failed statement's diagnostics (SHOW WARNINGS) and
// ROW_COUNT() as they were.
func RestoreLastInsertID(id int64) string {
	n := strconv.FormatInt(id, 10)
	return "DO LAST_INSERT_ID(IF(LAST_INSERT_ID() = " + n + ", @__leaf_l, LAST_INSERT_ID()))"
}

// Plans that report their key (Env.ReportKeys, Plan.ReportsKey).
//
// With AUTO_INCREMENT the server sets LAST_INSERT_ID() when the statement
// ends; LAST_INSERT_ID(<id>) in the text sets it as the row is read, so
// the statement's own later reads (a child row's VALUES (LAST_INSERT_ID()),
// ON DUPLICATE KEY UPDATE, RETURNING, @@identity) would see the new key.
// A statement of one text (or a prepared one) therefore gets its keys as
// plain values; the engine puts the first in the OK packet and makes the
// session's LAST_INSERT_ID() equal to it before a later statement can read
// it. Only when the key's row is not the last row and the next row has a
// key does the text keep a trace, so that after an ERR the engine can
// tell whether the key's row was written (MariaDB then keeps its key):
// the key is written (@__leaf_k:=id) and the next row's key copies
// @__leaf_k to @__leaf_m as that row is read (the server reads a row only
// after it wrote the row before).

// plainWrapOpen opens the first generated key of a ReportsKey plan with a
// marked next row: the assignment's value is the key.
const plainWrapOpen = "(@__leaf_k:="

// plainMark opens the key of the row after the first generated key's in
// a ReportsKey plan (markOpen and markIf both become it; closed by ')'):
// it copies @__leaf_k, the key of the row before when that key was
// generated, and leaves the value it opens as it is, of its own type,
// even when @__leaf_k is NULL or stale (a bound key kept in the row
// before: COALESCE(?,...) then never assigns it). An integer key never
// equals 0.5. No arithmetic: a user variable the server has not seen set
// yet is a string, and arithmetic on it would go through DOUBLE, rounding
// a large key.
const plainMark = "IF((@__leaf_m:=@__leaf_k)<=>0.5,NULL,"

// wrapOpen is what opens the wrapped first key (closed by ')').
func (p *Plan) wrapOpen() string {
	if p.ReportsKey {
		return plainWrapOpen
	}
	return wrapOpen
}

// reportKeys turns a Rewrite plan of one statement into a ReportsKey
// plan: the first key is unwrapped (or, when the next row is marked,
// written into @__leaf_k) and the markers copy @__leaf_k.
func (b *builder) reportKeys(p *Plan) {
	p.ReportsKey = true
	for i := range p.edits {
		e := &p.edits[i]
		if e.wrap && !p.WrapMarked {
			e.wrap = false
		}
		if e.pre == 0 {
			continue
		}
		t := p.texts[e.pre]
		switch {
		case strings.Contains(t, markIf): // already closed after the value
			e.pre = b.text(strings.Replace(t, markIf, plainMark, 1))
		case strings.Contains(t, markOpen):
			e.pre = b.text(strings.Replace(t, markOpen, plainMark, 1))
			e.post = b.text(")" + p.texts[e.post])
		}
	}
	p.texts = b.texts
}

// RestorePlain is the statement to run after an ERR of a ReportsKey
// plan with WrapMarked whose first generated key was id: when the row
// after id's row was read, id's row was written before a later row failed
// and MariaDB keeps id as LAST_INSERT_ID(); otherwise the session's value
// is the one from before the statement: prev, or when prev is 0 the
// server's own (LAST_INSERT_ID() is untouched by a ReportsKey plan).
func RestorePlain(id, prev int64) string {
	n := strconv.FormatInt(id, 10)
	before := "LAST_INSERT_ID()"
	if prev != 0 {
		before = strconv.FormatInt(prev, 10)
	}
	return "DO LAST_INSERT_ID(IF(@__leaf_m <=> " + n + ", " + n + ", " + before + "))"
}

// SetLastInsertID is the statement that makes the session's
// LAST_INSERT_ID() v: what a ReportsKey plan's statement set, run before
// a later statement could read it. DO reads no table: it starts no
// transaction and leaves SHOW WARNINGS as it was (ROW_COUNT() it sets to
// 0, which is why it runs only before a statement that may read
// LAST_INSERT_ID()).
func SetLastInsertID(v int64) string {
	return "DO LAST_INSERT_ID(" + strconv.FormatInt(v, 10) + ")"
}
