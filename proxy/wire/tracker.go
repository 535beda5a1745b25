package wire

import (
	"encoding/binary"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// A response is a small state machine: OK | ERR | LOCAL INFILE request |
// column count -> definitions -> EOF -> rows -> EOF/ERR, repeated while the
// backend says more results exist; a prepare's is OK -> parameter
// definitions + EOF -> column definitions + EOF, or ERR. RespTracker is that
// machine and nothing else: it is fed one logical packet at a time (its
// first bytes and its length) and says what the packet was. Both ways of
// relaying in package proxy use it: a session goroutine reading with
// blocking I/O (walkFrom) and an event loop fed whatever bytes have arrived
// (lane.relayBackend), so the two cannot disagree about where a response
// ends, and a response the loop began can be finished by the goroutine.

// Kinds of response (RespTracker.Start).
const (
	RespResult    = iota // OK | ERR | LOCAL INFILE | result sets, repeated while MORE_RESULTS
	RespExecute          // as RespResult, and a cursor may end it after the columns
	RespPrepare          // OK -> params+EOF -> columns+EOF, or ERR
	RespSimple           // one OK/EOF/ERR packet
	RespRaw              // one packet of any shape (COM_STATISTICS)
	RespFieldList        // column definitions until EOF, or ERR
	RespFetch            // rows until EOF, or ERR
	RespNone             // STMT_CLOSE, SEND_LONG_DATA
)

// Phases of a response.
const (
	phFirst    = iota // the next packet starts a result: OK | ERR | LOCAL INFILE | column count
	phDefs            // column definitions (left of them)
	phDefsEOF         // the EOF after the definitions
	phRows            // rows until EOF or ERR
	phPrepare         // a prepare's first packet: OK or ERR
	phPrepDefs        // a prepare's definitions: left packets of this group, later of the next
	phOne             // one packet (RespSimple, RespRaw)
	phUntilEOF        // definitions or rows until EOF or ERR (field list, fetch)
	phDone
)

// What Step says a packet was.
const (
	EvNext   = iota // more packets follow
	EvRow           // a row of the statement's first result; more follow
	EvErr           // an ERR packet; the response is complete
	EvDone          // the response is complete
	EvInfile        // a LOCAL INFILE request: the client's file goes to the backend, then more follow
)

// RespObserver is told what a response says about the backend session, as
// Step reads it: package proxy's session.
type RespObserver interface {
	SetStatus(st uint16)   // the status flags of an OK or EOF
	SetPrepared(id uint32) // a prepare's OK: the statement prepared last
	ForgetPrepared()       // a prepare's ERR
	LocalFiles() bool      // whether CLIENT_LOCAL_FILES was negotiated
}

// PrepareInfo is a prepare's OK (package proxy's PrepareResult).
type PrepareInfo struct {
	OK      bool
	StmtID  uint32
	Params  uint16
	Columns uint16
}

// RespTracker follows one response (the machine above).
type RespTracker struct {
	Kind   int
	cursor bool // an execute that asked for a cursor: it may end after the definitions
	phase  int
	left   uint64 // packets left in phDefs and phPrepDefs
	later  uint64 // phPrepDefs: packets of the column group once the parameters' are through
	cols   uint64 // columns of the current result (for decoding its rows)
	first  bool   // the next result is the statement's first
	// Results: how many results ended (a multi-statement text's
	// statements answered, RelayQueryInsertIDs)
	Results int

	// What the response said: OK is relay's "it began with OK" (for a
	// simple command also an EOF, for a field list or fetch the closing
	// EOF); the first OK's fields; a prepare's OK.
	OK                 bool
	Affected, InsertID uint64
	Warnings           uint16
	Prep               PrepareInfo
}

// Start prepares t for the response to a command whose answer is of kind.
func (t *RespTracker) Start(kind int, cursor bool) {
	*t = RespTracker{Kind: kind, cursor: cursor, first: true}
	switch kind {
	case RespResult, RespExecute:
		t.phase = phFirst
	case RespPrepare:
		t.phase = phPrepare
	case RespSimple, RespRaw:
		t.phase = phOne
	case RespFieldList, RespFetch:
		t.phase = phUntilEOF
	default: // RespNone: nothing comes back; relaying it succeeded
		t.phase, t.OK = phDone, true
	}
}

// Cursor types a COM_STMT_EXECUTE may ask for in its flags byte
// (CURSOR_TYPE_READ_ONLY, FOR_UPDATE, SCROLLABLE); MariaDB's
// PARAMETER_COUNT_AVAILABLE (0x08) shares the byte and is no cursor.
const executeCursorTypes = 0x07

// ExecuteCursor says whether pkt, a COM_STMT_EXECUTE payload (command byte
// first), asks the server for a cursor. Only then may the response end
// after the column definitions: the status flag SERVER_STATUS_CURSOR_EXISTS
// alone does not say so, because a stored procedure that has a cursor of
// its own open (a FOR loop over a SELECT, OPEN c) leaves the flag set in
// every EOF of the result sets its CALL returns.
func ExecuteCursor(pkt []byte) bool {
	return len(pkt) > 5 && pkt[0] == mysql.COM_STMT_EXECUTE && pkt[5]&executeCursorTypes != 0
}

// Done reports whether the response is complete.
func (t *RespTracker) Done() bool { return t.phase == phDone }

// Cols is the column count of the current result, for decoding its rows.
func (t *RespTracker) Cols() uint64 { return t.cols }

// AtFirst reports whether the next packet starts a result (the
// statement's first, or the next of a multi-result response).
func (t *RespTracker) AtFirst() bool { return t.phase == phFirst }

// Step classifies the response's next logical packet: head is its first
// bytes (at least min(n, HeadLen) of them), n its length. Status flags and
// the last prepared statement are told to s as the packets say. A
// phase's packet is read by a method of its own (step<Phase>), which also
// moves the phase on; the per-row phases (definitions, rows) are read in
// step itself, so a row costs no further call.
func (t *RespTracker) Step(s RespObserver, head []byte, n int) (int, error) {
	switch t.phase {
	case phFirst:
		return t.stepFirst(s, head, n)
	case phDefs:
		if t.left--; t.left == 0 {
			t.phase = phDefsEOF
		}
		return EvNext, nil
	case phDefsEOF:
		return t.stepDefsEOF(s, head, n)
	case phRows:
		// Rows, the bulk of most responses, are read here without a
		// call: a row, the EOF that ends the result, or an ERR that
		// ends the response.
		switch {
		case IsEOF(head, n):
			return t.endResult(s, EOFStatus(head)), nil
		case IsErr(head):
			t.phase = phDone
			return EvErr, nil
		case t.first:
			return EvRow, nil
		}
		return EvNext, nil
	case phPrepare:
		return t.stepPrepare(s, head, n)
	case phPrepDefs:
		if t.left--; t.left == 0 {
			return t.nextPrepGroup(), nil
		}
		return EvNext, nil
	case phOne:
		return t.stepOne(s, head, n), nil
	case phUntilEOF:
		return t.stepUntilEOF(s, head, n), nil
	}
	return 0, ProtocolError("packet after the end of the response")
}

// stepFirst reads a result's first packet: OK (the result ends), ERR (the
// response ends), a LOCAL INFILE request, or the column count of a result
// set, whose definitions follow.
func (t *RespTracker) stepFirst(s RespObserver, head []byte, n int) (int, error) {
	switch {
	case IsErr(head):
		t.phase = phDone
		return EvErr, nil
	case IsOK(head, n):
		a, id, st, w := OKInfo(head)
		if t.first {
			t.OK, t.Affected, t.InsertID, t.Warnings = true, a, id, w
		}
		return t.endResult(s, st), nil
	case len(head) > 0 && head[0] == 0xFB:
		if !s.LocalFiles() {
			return 0, ProtocolError("LOCAL INFILE request although CLIENT_LOCAL_FILES is off")
		}
		return EvInfile, nil // the OK or ERR after the file answers the statement
	}
	cols, k := LenencUint(head)
	if k == 0 || cols == 0 {
		return 0, ProtocolError("bad column count packet")
	}
	t.cols, t.left, t.phase = cols, cols, phDefs
	return EvNext, nil
}

// stepDefsEOF reads the EOF after a result set's column definitions: rows
// follow, unless a cursor was opened.
func (t *RespTracker) stepDefsEOF(s RespObserver, head []byte, n int) (int, error) {
	if !IsEOF(head, n) {
		return 0, ProtocolError("no EOF after column definitions")
	}
	// A cursor the server opened holds the statement's one result:
	// the EOF says so and no more results follow. A CALL executed
	// with a cursor asked for is answered without one, its result
	// sets carrying the procedure's own cursor flag and MORE_RESULTS.
	st := EOFStatus(head)
	if t.cursor && st&mysql.SERVER_STATUS_CURSOR_EXISTS != 0 && st&mysql.SERVER_MORE_RESULTS_EXISTS == 0 {
		return t.endResult(s, st), nil
	}
	t.phase = phRows
	return EvNext, nil
}

// stepPrepare reads a prepare's first packet: ERR, or the OK that says how
// many parameter and column definitions follow.
func (t *RespTracker) stepPrepare(s RespObserver, head []byte, n int) (int, error) {
	if IsErr(head) {
		// A later execute of "the last prepared statement" now fails on
		// the backend too; it must not resolve to an older statement.
		s.ForgetPrepared()
		t.phase = phDone
		return EvErr, nil
	}
	if !IsOK(head, n) || len(head) < 9 {
		return 0, ProtocolError("bad prepare response")
	}
	t.OK = true
	t.Prep = PrepareInfo{
		OK:      true,
		StmtID:  binary.LittleEndian.Uint32(head[1:5]),
		Columns: binary.LittleEndian.Uint16(head[5:7]),
		Params:  binary.LittleEndian.Uint16(head[7:9]),
	}
	s.SetPrepared(t.Prep.StmtID)
	// Each group that is present is its definitions, then an EOF.
	group := func(n uint16) uint64 {
		if n == 0 {
			return 0
		}
		return uint64(n) + 1
	}
	t.left, t.later = group(t.Prep.Params), group(t.Prep.Columns)
	return t.nextPrepGroup(), nil
}

// stepOne reads the one packet of a simple command's (RespSimple) or
// COM_STATISTICS's (RespRaw) response.
func (t *RespTracker) stepOne(s RespObserver, head []byte, n int) int {
	t.phase = phDone
	if t.Kind == RespSimple {
		if IsErr(head) {
			return EvErr
		}
		if IsOK(head, n) {
			_, _, st, _ := OKInfo(head)
			s.SetStatus(st)
			t.OK = true
		} else if IsEOF(head, n) {
			s.SetStatus(EOFStatus(head))
			t.OK = true
		}
	}
	return EvDone
}

// stepUntilEOF reads a field list's definitions or a fetch's rows, until
// the EOF or ERR that ends them.
func (t *RespTracker) stepUntilEOF(s RespObserver, head []byte, n int) int {
	switch {
	case IsErr(head):
		t.phase = phDone
		return EvErr
	case IsEOF(head, n):
		if t.Kind == RespFetch {
			s.SetStatus(EOFStatus(head))
		}
		t.OK = true
		t.phase = phDone
		return EvDone
	}
	return EvNext
}

// endResult closes one result (OK, or the EOF after its rows): the
// statement goes on while the backend says more results exist.
func (t *RespTracker) endResult(s RespObserver, st uint16) int {
	t.first = false
	t.Results++
	s.SetStatus(st)
	if st&mysql.SERVER_MORE_RESULTS_EXISTS == 0 {
		t.phase = phDone
		return EvDone
	}
	t.phase = phFirst
	return EvNext
}

// nextPrepGroup moves a prepare response to its next group of definitions.
func (t *RespTracker) nextPrepGroup() int {
	if t.left == 0 {
		t.left, t.later = t.later, 0
	}
	if t.left == 0 {
		t.phase = phDone
		return EvDone
	}
	t.phase = phPrepDefs
	return EvNext
}
