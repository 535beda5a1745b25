package rewriter

import "strconv"

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
