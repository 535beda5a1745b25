package proxy

import (
	"encoding/binary"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/wire"
)

// A response is a small state machine: OK | ERR | LOCAL INFILE request |
// column count -> definitions -> EOF -> rows -> EOF/ERR, repeated while the
// backend says more results exist; a prepare's is OK -> parameter
// definitions + EOF -> column definitions + EOF, or ERR. respTracker is that
// machine and nothing else: it is fed one logical packet at a time (its
// first bytes and its length) and says what the packet was. Both ways of
// relaying use it: a session goroutine reading with blocking I/O (walkFrom)
// and an event loop fed whatever bytes have arrived (lane.relayBackend), so
// the two cannot disagree about where a response ends, and a response the
// loop began can be finished by the goroutine.

// Phases of a response.
const (
	phFirst    = iota // the next packet starts a result: OK | ERR | LOCAL INFILE | column count
	phDefs            // column definitions (left of them)
	phDefsEOF         // the EOF after the definitions
	phRows            // rows until EOF or ERR
	phPrepare         // a prepare's first packet: OK or ERR
	phPrepDefs        // a prepare's definitions: left packets of this group, later of the next
	phOne             // one packet (respSimple, respRaw)
	phUntilEOF        // definitions or rows until EOF or ERR (field list, fetch)
	phDone
)

// What step says a packet was.
const (
	evNext   = iota // more packets follow
	evRow           // a row of the statement's first result; more follow
	evErr           // an ERR packet; the response is complete
	evDone          // the response is complete
	evInfile        // a LOCAL INFILE request: the client's file goes to the backend, then more follow
)

type respTracker struct {
	kind   int
	cursor bool // an execute that asked for a cursor: it may end after the definitions
	phase  int
	left   uint64 // packets left in phDefs and phPrepDefs
	later  uint64 // phPrepDefs: packets of the column group once the parameters' are through
	cols   uint64 // columns of the current result (for decoding its rows)
	first  bool   // the next result is the statement's first
	// results: how many results ended (a multi-statement text's
	// statements answered, RelayQueryInsertIDs)
	results int

	// What the response said: ok is relay's "it began with OK" (for a
	// simple command also an EOF, for a field list or fetch the closing
	// EOF); the first OK's fields; a prepare's OK.
	ok                 bool
	affected, insertID uint64
	warnings           uint16
	prep               PrepareResult
}

// start prepares t for the response to a command whose answer is of kind.
func (t *respTracker) start(kind int, cursor bool) {
	*t = respTracker{kind: kind, cursor: cursor, first: true}
	switch kind {
	case respResult, respExecute:
		t.phase = phFirst
	case respPrepare:
		t.phase = phPrepare
	case respSimple, respRaw:
		t.phase = phOne
	case respFieldList, respFetch:
		t.phase = phUntilEOF
	default: // respNone: nothing comes back; relaying it succeeded
		t.phase, t.ok = phDone, true
	}
}

// Cursor types a COM_STMT_EXECUTE may ask for in its flags byte
// (CURSOR_TYPE_READ_ONLY, FOR_UPDATE, SCROLLABLE); MariaDB's
// PARAMETER_COUNT_AVAILABLE (0x08) shares the byte and is no cursor.
const executeCursorTypes = 0x07

// executeCursor says whether pkt, a COM_STMT_EXECUTE payload (command byte
// first), asks the server for a cursor. Only then may the response end
// after the column definitions: the status flag SERVER_STATUS_CURSOR_EXISTS
// alone does not say so, because a stored procedure that has a cursor of
// its own open (a FOR loop over a SELECT, OPEN c) leaves the flag set in
// every EOF of the result sets its CALL returns.
func executeCursor(pkt []byte) bool {
	return len(pkt) > 5 && pkt[0] == mysql.COM_STMT_EXECUTE && pkt[5]&executeCursorTypes != 0
}

func (t *respTracker) done() bool { return t.phase == phDone }

// step classifies the response's next logical packet: head is its first
// bytes (at least min(n, headLen) of them), n its length. Status flags and
// the last prepared statement are recorded on s as the packets say. A
// phase's packet is read by a method of its own (step<Phase>), which also
// moves the phase on; the per-row phases (definitions, rows) are read in
// step itself, so a row costs no further call.
func (t *respTracker) step(s *Session, head []byte, n int) (int, error) {
	switch t.phase {
	case phFirst:
		return t.stepFirst(s, head, n)
	case phDefs:
		if t.left--; t.left == 0 {
			t.phase = phDefsEOF
		}
		return evNext, nil
	case phDefsEOF:
		return t.stepDefsEOF(s, head, n)
	case phRows:
		// Rows, the bulk of most responses, are read here without a
		// call: a row, the EOF that ends the result, or an ERR that
		// ends the response.
		switch {
		case wire.IsEOF(head, n):
			return t.endResult(s, wire.EOFStatus(head)), nil
		case wire.IsErr(head):
			t.phase = phDone
			return evErr, nil
		case t.first:
			return evRow, nil
		}
		return evNext, nil
	case phPrepare:
		return t.stepPrepare(s, head, n)
	case phPrepDefs:
		if t.left--; t.left == 0 {
			return t.nextPrepGroup(), nil
		}
		return evNext, nil
	case phOne:
		return t.stepOne(s, head, n), nil
	case phUntilEOF:
		return t.stepUntilEOF(s, head, n), nil
	}
	return 0, protocolError("packet after the end of the response")
}

// stepFirst reads a result's first packet: OK (the result ends), ERR (the
// response ends), a LOCAL INFILE request, or the column count of a result
// set, whose definitions follow.
func (t *respTracker) stepFirst(s *Session, head []byte, n int) (int, error) {
	switch {
	case wire.IsErr(head):
		t.phase = phDone
		return evErr, nil
	case wire.IsOK(head, n):
		a, id, st, w := wire.OKInfo(head)
		if t.first {
			t.ok, t.affected, t.insertID, t.warnings = true, a, id, w
		}
		return t.endResult(s, st), nil
	case len(head) > 0 && head[0] == 0xFB:
		if s.caps&mysql.CLIENT_LOCAL_FILES == 0 {
			return 0, protocolError("LOCAL INFILE request although CLIENT_LOCAL_FILES is off")
		}
		return evInfile, nil // the OK or ERR after the file answers the statement
	}
	cols, k := wire.LenencUint(head)
	if k == 0 || cols == 0 {
		return 0, protocolError("bad column count packet")
	}
	t.cols, t.left, t.phase = cols, cols, phDefs
	return evNext, nil
}

// stepDefsEOF reads the EOF after a result set's column definitions: rows
// follow, unless a cursor was opened.
func (t *respTracker) stepDefsEOF(s *Session, head []byte, n int) (int, error) {
	if !wire.IsEOF(head, n) {
		return 0, protocolError("no EOF after column definitions")
	}
	// A cursor the server opened holds the statement's one result:
	// the EOF says so and no more results follow. A CALL executed
	// with a cursor asked for is answered without one, its result
	// sets carrying the procedure's own cursor flag and MORE_RESULTS.
	st := wire.EOFStatus(head)
	if t.cursor && st&mysql.SERVER_STATUS_CURSOR_EXISTS != 0 && st&mysql.SERVER_MORE_RESULTS_EXISTS == 0 {
		return t.endResult(s, st), nil
	}
	t.phase = phRows
	return evNext, nil
}

// stepPrepare reads a prepare's first packet: ERR, or the OK that says how
// many parameter and column definitions follow.
func (t *respTracker) stepPrepare(s *Session, head []byte, n int) (int, error) {
	if wire.IsErr(head) {
		// A later execute of "the last prepared statement" now fails on
		// the backend too; it must not resolve to an older statement.
		s.forgetPrepared()
		t.phase = phDone
		return evErr, nil
	}
	if !wire.IsOK(head, n) || len(head) < 9 {
		return 0, protocolError("bad prepare response")
	}
	t.ok = true
	t.prep = PrepareResult{
		OK:      true,
		StmtID:  binary.LittleEndian.Uint32(head[1:5]),
		Columns: binary.LittleEndian.Uint16(head[5:7]),
		Params:  binary.LittleEndian.Uint16(head[7:9]),
	}
	s.setPrepared(t.prep.StmtID)
	// Each group that is present is its definitions, then an EOF.
	group := func(n uint16) uint64 {
		if n == 0 {
			return 0
		}
		return uint64(n) + 1
	}
	t.left, t.later = group(t.prep.Params), group(t.prep.Columns)
	return t.nextPrepGroup(), nil
}

// stepOne reads the one packet of a simple command's (respSimple) or
// COM_STATISTICS's (respRaw) response.
func (t *respTracker) stepOne(s *Session, head []byte, n int) int {
	t.phase = phDone
	if t.kind == respSimple {
		if wire.IsErr(head) {
			return evErr
		}
		if wire.IsOK(head, n) {
			_, _, st, _ := wire.OKInfo(head)
			s.setStatus(st)
			t.ok = true
		} else if wire.IsEOF(head, n) {
			s.setStatus(wire.EOFStatus(head))
			t.ok = true
		}
	}
	return evDone
}

// stepUntilEOF reads a field list's definitions or a fetch's rows, until
// the EOF or ERR that ends them.
func (t *respTracker) stepUntilEOF(s *Session, head []byte, n int) int {
	switch {
	case wire.IsErr(head):
		t.phase = phDone
		return evErr
	case wire.IsEOF(head, n):
		if t.kind == respFetch {
			s.setStatus(wire.EOFStatus(head))
		}
		t.ok = true
		t.phase = phDone
		return evDone
	}
	return evNext
}

// endResult closes one result (OK, or the EOF after its rows): the
// statement goes on while the backend says more results exist.
func (t *respTracker) endResult(s *Session, st uint16) int {
	t.first = false
	t.results++
	s.setStatus(st)
	if st&mysql.SERVER_MORE_RESULTS_EXISTS == 0 {
		t.phase = phDone
		return evDone
	}
	t.phase = phFirst
	return evNext
}

// nextPrepGroup moves a prepare response to its next group of definitions.
func (t *respTracker) nextPrepGroup() int {
	if t.left == 0 {
		t.left, t.later = t.later, 0
	}
	if t.left == 0 {
		t.phase = phDone
		return evDone
	}
	t.phase = phPrepDefs
	return evNext
}
