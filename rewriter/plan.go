package rewriter

import (
	"slices"
	"strconv"
)

// Kind says what the proxy does with a statement text.
type Kind uint8

const (
	// PassThrough: send the text to the backend unchanged.
	PassThrough Kind = iota
	// Sequence: answer the text in the proxy, one row with one BIGINT
	// column per Plan.Calls entry (LEAFPROXY_DECODE, always alone: its
	// own row); nothing goes to the backend.
	Sequence
	// Rewrite: draw Plan.Tags IDs, then send Plan.Render's text.
	Rewrite
	// LoadData: a LOAD DATA LOCAL INFILE into a rule table; Plan.Load
	// says how to render it and key its file as it streams.
	LoadData
)

func (k Kind) String() string {
	switch k {
	case PassThrough:
		return "PassThrough"
	case Sequence:
		return "Sequence"
	case Rewrite:
		return "Rewrite"
	case Numbered:
		return "Numbered"
	case LoadData:
		return "LoadData"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Env is what the planner knows about the session. Only DB and Mode change
// during a session; Rules and Columns are usually shared.
type Env struct {
	// DB is the session's current database, for unqualified table names.
	DB   string
	Mode Mode
	// Rules says which tables get their key filled; nil means none.
	Rules *Rules
	// Columns returns a table's columns in order. It is called only for an
	// INSERT without a column list into a rule table; nil makes such an
	// INSERT an error.
	Columns func(db, table string) ([]string, error)
	// TableKey describes a rule table's key column (column, the rule's)
	// as the backend has it. It is called for every INSERT / REPLACE /
	// LOAD DATA into a table a rule matches (the caller caches it): a
	// pattern rule fills only the tables TableKey.FillsPattern accepts and
	// relays the others untouched; an explicit 0 is kept where
	// TableKey.KeepsZero says; given keys of a column that is not an
	// integer column are kept as they are. nil: every rule applies as
	// written (the tables are taken to have integer key columns).
	TableKey func(db, table, column string) (TableKey, error)
	// Limits bound what planning a statement with the parser may cost
	// (parse.go); the zero value has the default nesting limit and no
	// memory budget.
	Limits Limits
	// ReportKeys: the caller reports a statement's first generated key
	// itself (the OK packet's insert id, and the session's
	// LAST_INSERT_ID() made equal to it before anything reads it), so a
	// Rewrite plan of one statement renders its keys without
	// LAST_INSERT_ID(...) (Plan.ReportsKey; lastid.go). Without it every
	// plan wraps its first key, as the server then reports it.
	ReportKeys bool
}

// TagCount is how many IDs a plan needs from one tag.
type TagCount struct {
	Tag string
	N   int
}

// Filled names a rule table whose key a plan fills: DB and Table as
// resolved against Env.DB, Column and Tag from the rule.
type Filled struct {
	DB, Table, Column, Tag string
}

// Slot is one generated ID in a Rewrite plan.
type Slot struct {
	Tag string
	// Start and End are the byte range of the original text the ID
	// replaces (the whole NEXTVAL(...) call, or a NULL / DEFAULT / 0 / ?
	// key value); Start == End when the ID is inserted for an absent key.
	Start, End int
	// Key is set when the ID fills a rule table's key column (including a
	// NEXTVAL written in that column), clear for other NEXTVAL calls.
	Key bool
	// Bound (PlanPrepare only) is set when the ID stands in for the
	// client's ? in a key column (COALESCE(NULLIF(?,0),id)): a value bound
	// there wins.
	Bound bool
	// Ignore (with Bound): the statement is INSERT IGNORE, so a bound
	// value that does not convert cleanly stores 0 with a warning (and
	// AUTO_INCREMENT generates) even in strict mode: see KeyValue.
	Ignore bool
	// KeepZero (with Bound): a bound value that stores as 0 is kept, as
	// under NO_AUTO_VALUE_ON_ZERO (the table's rule keeps an explicit 0:
	// rewriter.Zero); only NULL gets a generated key.
	KeepZero bool
	tag      int32 // index into Plan.Tags (here, int32: a Slot is 48 bytes, not 56)
	// Param (PlanPrepare only) is the index of this slot's value among the
	// backend statement's parameters: the client's ? markers and the
	// generated ones, merged in text order (see Plan.Params).
	Param int
}

// Plan is what to do with one statement text. The zero Plan is
// PassThrough. A Plan holds no reference to the Env; it is tied to the
// exact text it was made from (offsets), and is read-only once returned,
// so one Plan may be rendered by many goroutines.
type Plan struct {
	Kind Kind
	// Calls (Sequence only): the select list, in order.
	Calls []Call
	// Slots (Rewrite only): one per ID, in text order. Render takes the
	// IDs in this order.
	Slots []Slot
	// Tags (Rewrite only): IDs needed per tag, in order of first use.
	Tags []TagCount
	// Filled (Rewrite and LoadData): the rule tables whose key column the
	// plan fills, so the caller can check the column can hold the tag's IDs.
	Filled []Filled
	// Load (LoadData only): the LOAD DATA plan.
	Load *Load
	// ClientParams and Params (PlanPrepare Rewrite plans only): the number
	// of ? markers in the client's text (what the client binds) and in the
	// rendered backend text (ClientParams + len(Slots): every generated
	// value is a parameter too; a plan where that does not hold must not
	// be used).
	ClientParams, Params int
	// Counters (Numbered only): one per place where the server numbers
	// rows; CountQuery's row has one count per counter and, when
	// CountsExplicit, then the largest explicit key of the rule table
	// (NULL when there is none), which the key's tag must move past.
	Counters       []Counter
	CountsExplicit bool
	// Writes (Numbered only): the tables the statement writes (an
	// UPDATE's: every table it names), so the caller can tell whether a
	// failed attempt was rolled back (transactional engines) before it
	// sends the statement again.
	Writes []SeqName
	// Explicit (any Kind): per tag, the largest explicit integer key the
	// statements write into rule tables, which the tag must move past as
	// AUTO_INCREMENT would (a PassThrough plan may carry it too).
	Explicit []ExplicitKey
	// Advances (Rewrite only): the explicit keys written after an ID
	// generated from their tag, in text order. The engine draws the After
	// IDs of the tag before each first, then moves the tag past To, so
	// the rows before an explicit key get keys below it, as with
	// AUTO_INCREMENT (Explicit's keys come before every ID of their tag).
	Advances []Advance
	// LastKey (a PassThrough plan of one INSERT / REPLACE into a rule
	// table whose rows all give their keys): the last row's key, which
	// MariaDB reports as the OK packet's insert id for an AUTO_INCREMENT
	// column (0: none to report, e.g. a key that is not positive).
	LastKey int64
	// LastKeyAt (a prepared Rewrite plan of one statement, LastKeyAt > 0):
	// the last literal key the statement keeps is LastKey, at this offset
	// of the text; when every bound key of an EXECUTE is kept, the last
	// row's key, literal or bound, is the insert id MariaDB reports.
	LastKeyAt int
	// StmtKeys (a text of more than one statement, each answered with one
	// result): for each statement, the last row's key of an INSERT /
	// REPLACE into a rule table whose rows all give their keys (0: none to
	// report), the insert id MariaDB reports in that statement's OK.
	StmtKeys []int64
	// Statements is how many statements the text holds (0 when it was
	// not read that far: a text with nothing to plan).
	Statements int
	// WrapLast (Rewrite, one statement): the statement's first generated
	// key, the one in LAST_INSERT_ID(...), is in its last row (or only
	// one). When such a statement fails after that key's LAST_INSERT_ID
	// ran, the row was not written, and the session's LAST_INSERT_ID() is
	// to be restored (RestoreLastInsertID), as AUTO_INCREMENT leaves it.
	WrapLast bool
	// WrapMarked (Rewrite, not WrapLast): the row after the wrapped
	// key's row has a key (generated, bound or positive), in a marker that
	// sets @__leaf_m to LAST_INSERT_ID() as that row is read, which the
	// server does only after it wrote the row before: after an ERR,
	// RestoreLastInsertIDAfterError tells whether the wrapped key's row
	// was written (MariaDB then reports its key) or not (MariaDB leaves
	// LAST_INSERT_ID() as it was).
	WrapMarked bool
	// ReportsKey (Rewrite, one statement, Env.ReportKeys): the first
	// generated key is spliced as a plain value, not in LAST_INSERT_ID(...),
	// so that the statement's own reads of LAST_INSERT_ID() (later columns
	// and rows, ON DUPLICATE KEY UPDATE, RETURNING, @@identity) see the
	// value from before it, as with AUTO_INCREMENT. The caller puts the
	// key in the OK packet and makes it the session's LAST_INSERT_ID()
	// itself. With WrapMarked the key is written (@__leaf_k:=id) and the
	// next row's marker copies @__leaf_k to @__leaf_m, so that after an
	// ERR RestorePlain tells whether the key's row was written.
	ReportsKey bool
	// Idents (Rewrite and Numbered plans): the sequences the text's calls
	// name with identifiers, which may be MariaDB native SEQUENCEs rather
	// than proxy tags; StringCalls: some call names its tag with a string
	// (a proxy tag for certain). Sequence plans say it per Call.
	Idents      []SeqName
	StringCalls bool

	edits    []edit
	texts    []string // the edits' strings (edit)
	prepared bool
	kept     bool // Keep dropped the edits
	num      *numbering
	rows     *rowRun // Large: the rows, after the edits (rows.go)
}

// Advance is an explicit key the tag moves past after the tag's first
// After IDs of the plan (see Plan.Advances); At is its offset in the text.
type Advance struct {
	Tag       string
	To        int64
	After, At int
}

// edit is one splice: replace text[start:end) with
// pre [LAST_INSERT_ID(] value [)] post, or for a client's ?
// pre COALESCE(?,[LAST_INSERT_ID(]value[)]) post,
// where value is the slot's ID (or ? when prepared); without
// a slot it is just pre.
//
// Its strings (tag, pre, post) are indexes into the builder's texts
// (Plan.texts; 0 is ""), so that an edit is 40 bytes, not 80: a
// many-row INSERT has one per row.
type edit struct {
	start, end     int
	slot           int // -1: no ID, only pre
	tag, pre, post uint32
	key            bool
	wrap           bool // LAST_INSERT_ID(...) around the value
	param          bool // the value replaces a ? key: the engine decides at each EXECUTE
	ignore         bool // with param: the statement is INSERT IGNORE
	keepZero       bool // with param: a bound 0 is kept (Slot.KeepZero)
}

// AssignIDs spreads per-tag batches over the slots: batches[i] holds
// Tags[i].N IDs, ascending as the allocator returns them; slots of one tag
// take them in text order, so rows get ascending IDs. The result (appended
// to dst[:0]) is what Render takes and, for a prepared plan, what the
// caller binds to Slots[i].Param. For a Large plan it is batches[0]
// itself, not a copy.
func (p *Plan) AssignIDs(dst []int64, batches [][]int64) ([]int64, error) {
	if len(batches) != len(p.Tags) {
		return dst, errorf(CodeUnknown, "assigning IDs: %d batches for %d tags", len(batches), len(p.Tags))
	}
	for i, tc := range p.Tags {
		if len(batches[i]) != tc.N {
			return dst, errorf(CodeUnknown, "assigning IDs: %d IDs for tag %q, need %d", len(batches[i]), tc.Tag, tc.N)
		}
	}
	if p.rows != nil {
		return batches[0], nil // one tag, the rows in order (Large)
	}
	dst = slices.Grow(dst[:0], len(p.Slots))
	var next [8]int
	used := next[:0]
	if len(p.Tags) > len(next) {
		used = make([]int, 0, len(p.Tags))
	}
	used = used[:len(p.Tags)]
	clear(used)
	for _, s := range p.Slots {
		dst = append(dst, batches[s.tag][used[s.tag]])
		used[s.tag]++
	}
	return dst, nil
}

// Render appends the rewritten text to dst: sql (the exact text the plan
// was made from) with ids[i] spliced in for Slots[i]. For a plan from
// PlanPrepare every ID is a ? parameter and ids is ignored: the caller
// binds the IDs at each EXECUTE as parameters Slots[i].Param. It allocates
// only to grow dst. It fails only for a plan Keep cut down (keptError),
// and panics, with an index out of range, if ids is short: both are the
// caller's bugs.
func (p *Plan) Render(dst []byte, sql string, ids []int64) ([]byte, error) {
	if p.kept {
		return dst, keptError("Render")
	}
	if p.rows != nil {
		dst = slices.Grow(dst, p.RenderedLen(sql, ids))
		dst, _ = p.renderRows(dst, sql, ids, nil) // no writer: no error
		return dst, nil
	}
	if len(p.edits) > bigEdits {
		dst = slices.Grow(dst, p.renderedLen(sql, ids))
	}
	last := 0
	for i := range p.edits {
		e := &p.edits[i]
		dst = append(dst, sql[last:e.start]...)
		dst = p.appendEdit(dst, e, ids)
		last = e.end
	}
	return append(dst, sql[last:]...), nil
}

// keptError is what Render and WriteTo return for a plan Keep cut down:
// its edits are gone. The engine renders a prepared statement's text once,
// at its PREPARE, before it keeps the plan, so this is a caller's bug; an
// error (ER_UNKNOWN_ERROR to the client whose statement it was) costs that
// statement, where a panic would cost the process.
func keptError(op string) *Error {
	return errorf(CodeUnknown, "%s of a prepared statement's kept plan, whose edits are gone (Plan.Keep): an internal error of the proxy", op)
}

// appendEdit appends what e puts in place of its text.
func (p *Plan) appendEdit(dst []byte, e *edit, ids []int64) []byte {
	if e.pre != 0 {
		dst = append(dst, p.texts[e.pre]...)
	}
	if e.slot >= 0 {
		switch {
		case e.param && e.wrap:
			// The client's value first: when it is not NULL the
			// LAST_INSERT_ID(...) is not evaluated (COALESCE stops at the
			// first non-NULL), so a kept key leaves LAST_INSERT_ID()
			// alone, as AUTO_INCREMENT does.
			dst = append(append(dst, "COALESCE(?,"...), p.wrapOpen()...)
		case e.param:
			dst = append(dst, "COALESCE(?,"...)
		case e.wrap:
			dst = append(dst, p.wrapOpen()...)
		}
		if p.prepared {
			dst = append(dst, '?')
		} else {
			dst = appendID(dst, ids[e.slot])
		}
		if e.param {
			dst = append(dst, ')')
		}
		if e.wrap {
			dst = append(dst, ')')
		}
	}
	if e.post != 0 {
		dst = append(dst, p.texts[e.post]...)
	}
	return dst
}
