package proxy

import (
	"encoding/binary"
	"fmt"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// response kinds
const (
	respResult    = iota // OK | ERR | LOCAL INFILE | result sets, repeated while MORE_RESULTS
	respExecute          // as respResult, and a cursor may end it after the columns
	respPrepare          // OK -> params+EOF -> columns+EOF, or ERR
	respSimple           // one OK/EOF/ERR packet
	respRaw              // one packet of any shape (COM_STATISTICS)
	respFieldList        // column definitions until EOF, or ERR
	respFetch            // rows until EOF, or ERR
	respNone             // STMT_CLOSE, SEND_LONG_DATA
)

// relayQuery relays a COM_QUERY packet, tracking USE and SET statements.
func (s *Session) relayQuery(pkt []byte) error {
	q := skipSpace(pkt[1:])
	useDB, isUse := "", false
	switch {
	case hasKeyword(q, "USE"):
		isUse = true
		useDB, _ = parseUse(q[3:])
	case startsSet(pkt[1:]) && containsFold(q, "sql_mode"):
		// Only a SET naming sql_mode changes it (SET autocommit, SET NAMES
		// per transaction must not cost a re-read). Also SET STATEMENT
		// sql_mode=... FOR, which changes nothing for the session: a
		// needless re-read, cheap.
		s.modeOK = false
	}
	multi := s.caps&mysql.CLIENT_MULTI_STATEMENTS != 0 && moreStatements(q)
	ok, err := s.relay(pkt, respResult)
	if multi {
		// Cheap and conservative: a later statement may have changed either.
		s.dbOK, s.modeOK = false, false
	}
	if ok && isUse {
		if useDB != "" && !multi {
			s.setDB(useDB)
		} else {
			s.dbOK = false
		}
	}
	return err
}

// setDB records the session's current database.
func (s *Session) setDB(db string) {
	s.db, s.dbOK = db, true
	s.dbShared.Store(&db)
}

// relay sends one client command to the backend and streams the response
// back, flushed once. ok reports that the response began with OK.
func (s *Session) relay(pkt []byte, kind int) (bool, error) {
	ok, err := s.relayHeld(pkt, kind)
	if err != nil {
		return false, err
	}
	return ok, s.setFatal(s.c.flush())
}

// relayHeld is relay without the final flush: a small response stays in
// the client leg's buffer until the caller flushes.
func (s *Session) relayHeld(pkt []byte, kind int) (ok bool, err error) {
	if s.fatal != nil {
		return false, s.fatal
	}
	if err := s.b.writeCommand(pkt); err != nil {
		return false, s.setFatal(err)
	}
	flush := s.b.flushForResponse
	if kind == respNone {
		flush = s.b.flush
	}
	if err := flush(); err != nil {
		return false, s.setFatal(err)
	}
	switch kind {
	case respNone:
		return true, nil
	case respResult, respExecute:
		var r walkResult
		r, err = s.walk(walkRelay, kind == respExecute)
		ok = r.ok
	case respPrepare:
		var pr PrepareResult
		pr, err = s.relayPrepareResponse()
		ok = pr.OK
	case respSimple, respRaw:
		var head []byte
		var n int
		head, n, err = s.relayPacket()
		if err == nil && kind == respSimple {
			if isOK(head, n) {
				_, _, st, _ := okInfo(head)
				s.setStatus(st)
				ok = true
			} else if isEOF(head, n) {
				s.setStatus(eofStatus(head))
				ok = true
			}
		}
	case respFieldList, respFetch:
		for err == nil {
			var head []byte
			var n int
			head, n, err = s.relayPacket()
			if err != nil || isErr(head) {
				break
			}
			if isEOF(head, n) {
				if kind == respFetch {
					s.setStatus(eofStatus(head))
				}
				ok = true
				break
			}
		}
	}
	if err != nil {
		return false, s.setFatal(err)
	}
	return ok, nil
}

func (s *Session) setStatus(st uint16) {
	s.status = st &^ mysql.SERVER_MORE_RESULTS_EXISTS
}

// relayPacket streams one logical backend packet to the client, renumbered
// for the client leg, and returns its first bytes (valid until the next
// call) and its length. Nothing beyond headLen bytes is held.
func (s *Session) relayPacket() (head []byte, total int, err error) {
	for first := true; ; first = false {
		n, err := s.b.readHeader()
		if err != nil {
			return nil, 0, err
		}
		if first {
			p, err := s.b.r.Peek(min(n, headLen))
			if err != nil {
				return nil, 0, s.b.fail(err)
			}
			head = s.head[:copy(s.head[:], p)]
		}
		if err := writeHeader(s.c.w, n, s.c.seq); err != nil {
			return nil, 0, s.c.fail(err)
		}
		s.c.seq++
		if err := s.b.copyTo(s.c, n); err != nil {
			return nil, 0, err
		}
		total += n
		if n < maxPayload {
			return head, total, nil
		}
	}
}

func protocolError(format string, a ...any) error {
	return &ioError{leg: "backend", err: fmt.Errorf("protocol: "+format, a...)}
}

// How walk treats the response's packets.
const (
	walkRelay   = iota // stream each packet to the client
	walkDiscard        // read and drop (a proxy-originated statement)
	walkCollect        // read, keeping the first result set's rows as text
)

// walkResult is what a walked response said.
type walkResult struct {
	ok                 bool // the first packet was OK
	affected, insertID uint64
	warnings           uint16
	rows               [][]*string
	err                *mysql.MyError // the backend answered ERR
}

// walk follows one response to a query or execute: OK | ERR | LOCAL INFILE
// request | column count -> definitions -> EOF -> rows -> EOF/ERR, repeated
// while the backend says more results exist. It is the only place that
// knows this state machine; relaying streams packets without holding them,
// the other modes read them whole (proxy-originated statements, small).
// cursor: an execute that opened a cursor ends after the definitions.
func (s *Session) walk(mode int, cursor bool) (walkResult, error) {
	var r walkResult
	next := func() ([]byte, int, error) {
		if mode == walkRelay {
			return s.relayPacket()
		}
		p, err := s.b.readPacket(s.scratch, 1<<30)
		s.scratch = p
		return p, len(p), err
	}
	defer func() {
		if cap(s.scratch) > keepBuf {
			s.scratch = nil
		}
	}()
	first := true // the next packet starts the statement's first result
	for {
		head, n, err := next()
		if err != nil {
			return r, err
		}
		switch {
		case isErr(head):
			if mode != walkRelay {
				r.err = parseErr(head)
			}
			return r, nil
		case isOK(head, n):
			a, id, st, w := okInfo(head)
			if first {
				r.ok, r.affected, r.insertID, r.warnings = true, a, id, w
			}
			s.setStatus(st)
			if st&mysql.SERVER_MORE_RESULTS_EXISTS == 0 {
				return r, nil
			}
			first = false
			continue
		case len(head) > 0 && head[0] == 0xFB:
			if mode != walkRelay || s.caps&mysql.CLIENT_LOCAL_FILES == 0 {
				return r, protocolError("LOCAL INFILE request although CLIENT_LOCAL_FILES is off")
			}
			if err := s.relayLocalFile(); err != nil {
				return r, err
			}
			continue // the OK/ERR that follows answers the statement
		}
		cols, k := lenenc(head)
		if k == 0 || cols == 0 {
			return r, protocolError("bad column count packet")
		}
		for i := uint64(0); i < cols; i++ {
			if _, _, err := next(); err != nil {
				return r, err
			}
		}
		head, n, err = next()
		if err != nil {
			return r, err
		}
		if !isEOF(head, n) {
			return r, protocolError("no EOF after column definitions")
		}
		st := eofStatus(head)
		if !(cursor && st&mysql.SERVER_STATUS_CURSOR_EXISTS != 0) {
			for {
				head, n, err = next()
				if err != nil {
					return r, err
				}
				if isEOF(head, n) {
					st = eofStatus(head)
					break
				}
				if isErr(head) {
					if mode != walkRelay {
						r.err = parseErr(head)
					}
					return r, nil
				}
				if mode == walkCollect && first {
					row, err := textRow(head, cols)
					if err != nil {
						return r, err
					}
					r.rows = append(r.rows, row)
				}
			}
		}
		first = false
		s.setStatus(st)
		if st&mysql.SERVER_MORE_RESULTS_EXISTS == 0 {
			return r, nil
		}
	}
}

// textRow decodes a text-protocol row (nil = SQL NULL).
func textRow(p []byte, cols uint64) ([]*string, error) {
	row := make([]*string, 0, cols)
	for pos := 0; pos < len(p) && len(row) < int(cols); {
		if p[pos] == 0xFB {
			row = append(row, nil)
			pos++
			continue
		}
		l, n := lenenc(p[pos:])
		if n == 0 || pos+n+int(l) > len(p) {
			return nil, protocolError("bad text row")
		}
		v := string(p[pos+n : pos+n+int(l)])
		row = append(row, &v)
		pos += n + int(l)
	}
	return row, nil
}

// relayLocalFile carries LOAD DATA LOCAL INFILE: the backend's request has
// gone to the client; the client's file arrives as packets ending with an
// empty one, each streamed on to the backend as it comes. (The statement is
// not key-filled: LOAD DATA is relayed as written.)
func (s *Session) relayLocalFile() error {
	if err := s.c.flush(); err != nil {
		return err
	}
	for {
		n, err := s.c.readHeader()
		if err != nil {
			return err
		}
		if err := writeHeader(s.b.w, n, s.b.seq); err != nil {
			return s.b.fail(err)
		}
		s.b.seq++
		if err := s.c.copyTo(s.b, n); err != nil {
			return err
		}
		if n == 0 {
			break
		}
	}
	return s.b.flush()
}

// relayPrepare relays a COM_STMT_PREPARE packet.
func (s *Session) relayPrepare(pkt []byte) (PrepareResult, error) {
	if s.fatal != nil {
		return PrepareResult{}, s.fatal
	}
	if err := s.b.writeCommand(pkt); err != nil {
		return PrepareResult{}, s.setFatal(err)
	}
	if err := s.b.flushForResponse(); err != nil {
		return PrepareResult{}, s.setFatal(err)
	}
	pr, err := s.relayPrepareResponse()
	if err != nil {
		return PrepareResult{}, s.setFatal(err)
	}
	return pr, s.setFatal(s.c.flush())
}

// relayPrepareResponse: OK(stmt id, columns, params) -> params+EOF ->
// columns+EOF, or ERR.
func (s *Session) relayPrepareResponse() (PrepareResult, error) {
	head, n, err := s.relayPacket()
	if err != nil {
		return PrepareResult{}, err
	}
	if isErr(head) {
		// A later execute of "the last prepared statement" now fails on
		// the backend too; it must not resolve to an older statement.
		s.lastPrepOK = false
		return PrepareResult{}, nil
	}
	if !isOK(head, n) || len(head) < 9 {
		return PrepareResult{}, protocolError("bad prepare response")
	}
	pr := PrepareResult{
		OK:      true,
		StmtID:  binary.LittleEndian.Uint32(head[1:5]),
		Columns: binary.LittleEndian.Uint16(head[5:7]),
		Params:  binary.LittleEndian.Uint16(head[7:9]),
	}
	s.lastPrep, s.lastPrepOK = pr.StmtID, true
	for _, cnt := range []int{int(pr.Params), int(pr.Columns)} {
		if cnt == 0 {
			continue
		}
		// int, not uint16: with 65,535 definitions a uint16 counter never
		// passes the count and the loop waits forever.
		for i := 0; i <= cnt; i++ { // definitions, then EOF
			if _, _, err := s.relayPacket(); err != nil {
				return PrepareResult{}, err
			}
		}
	}
	return pr, nil
}
