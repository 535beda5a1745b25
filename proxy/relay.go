package proxy

import (
	"fmt"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/internal/sqltext"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// response kinds (wire.RespResult, ...)
const (
	respResult    = wire.RespResult    // OK | ERR | LOCAL INFILE | result sets, repeated while MORE_RESULTS
	respExecute   = wire.RespExecute   // as respResult, and a cursor may end it after the columns
	respPrepare   = wire.RespPrepare   // OK -> params+EOF -> columns+EOF, or ERR
	respSimple    = wire.RespSimple    // one OK/EOF/ERR packet
	respRaw       = wire.RespRaw       // one packet of any shape (COM_STATISTICS)
	respFieldList = wire.RespFieldList // column definitions until EOF, or ERR
	respFetch     = wire.RespFetch     // rows until EOF, or ERR
	respNone      = wire.RespNone      // STMT_CLOSE, SEND_LONG_DATA
)

// relayQuery relays a COM_QUERY packet, tracking USE and SET statements.
func (s *Session) relayQuery(pkt []byte) error {
	return s.relayAfter(pkt, respResult, s.queryAfter(pkt))
}

// queryAfter is what the COM_QUERY pkt changes in the session's view of
// the backend once it succeeds (USE, a multi-statement text); a SET of
// sql_mode makes the mode be read again.
func (s *Session) queryAfter(pkt []byte) afterAction {
	c := s.classOf(pkt[1:])
	a := afterAction{kind: afterQuery}
	switch {
	case c.PlainWord() == sqltext.Use:
		a.isUse = true
		a.db, _ = parseUse(skipSpace(pkt[1:])[3:])
	case c.SetsSQLMode():
		// Only a SET naming sql_mode changes it (SET autocommit, SET NAMES
		// per transaction must not cost a re-read). Also SET STATEMENT
		// sql_mode=... FOR, which changes nothing for the session: a
		// needless re-read, cheap.
		s.forgetMode()
	case c.PlainWord() == sqltext.Execute:
		// EXECUTE IMMEDIATE '<SET sql_mode=...>', or EXECUTE s of a
		// statement PREPAREd from one: the proxy cannot see which.
		s.forgetMode()
	}
	a.multi = s.caps&mysql.CLIENT_MULTI_STATEMENTS != 0 && c.Multi()
	return a
}

// afterAction is what a relayed command changes in the session's view of
// the backend once its response is known. It is data, not a closure: on an
// event loop the response arrives after the command's code has returned
// (lane.finish applies it), on the session's goroutine right away.
type afterAction struct {
	kind  uint8
	isUse bool   // afterQuery: the statement was USE
	multi bool   // afterQuery: the text held more than one statement
	db    string // afterQuery: USE's database; afterInitDB: the new database
}

const (
	afterNone   = iota
	afterQuery  // track USE and multi-statement texts
	afterInitDB // COM_INIT_DB: the database on OK
	afterReset  // COM_RESET_CONNECTION: forget session state on OK
)

// applyAfter records a's effect; ok says the response began with OK.
func (s *Session) applyAfter(a afterAction, ok bool) {
	switch a.kind {
	case afterQuery:
		if a.multi {
			// Cheap and conservative: a later statement may have changed either.
			s.forgetDB()
			s.forgetMode()
		}
		if ok && a.isUse {
			if a.db != "" && !a.multi {
				s.setDB(a.db)
			} else {
				s.forgetDB()
			}
		}
	case afterInitDB:
		if ok {
			s.setDB(a.db)
		}
	case afterReset:
		if ok {
			s.backendFacts.reset()
			s.kills.ForgetAll()
			if ic := s.srv.ic; ic != nil {
				ic.SessionReset(s)
			}
		}
	}
}

// relayAfter relays pkt, then applies a (see afterAction).
func (s *Session) relayAfter(pkt []byte, kind int, a afterAction) error {
	if _, err := s.exec.relay(s, pkt, kind, a); err != nil {
		return err
	}
	return s.setFatal(s.c.Flush())
}

// setDB records the session's current database.
func (s *Session) setDB(db string) {
	s.db, s.dbOK = db, true
	s.dbShared.Store(&db)
}

// relay sends one client command to the backend and streams the response
// back, flushed once. ok reports that the response began with OK (known
// only on the session's goroutine, see commandExec).
func (s *Session) relay(pkt []byte, kind int) (bool, error) {
	ok, err := s.exec.relay(s, pkt, kind, afterAction{})
	if err != nil {
		return false, err
	}
	return ok, s.setFatal(s.c.Flush())
}

// relayWaiting sends pkt and relays its whole response, waiting for it
// (the session's goroutine), without the final flush: a small response
// stays in the client leg's buffer until the caller flushes.
func (s *Session) relayWaiting(pkt []byte, kind int) (ok bool, err error) {
	if s.fatal != nil {
		return false, s.fatal
	}
	if err := s.b.WriteCommand(pkt); err != nil {
		return false, s.setFatal(err)
	}
	return s.awaitResponse(kind, kind == respExecute && executeCursor(pkt))
}

// awaitResponse flushes the command just written and relays its whole
// response (of kind; cursor: an execute that opened a cursor), as
// relayWaiting.
func (s *Session) awaitResponse(kind int, cursor bool) (ok bool, err error) {
	flush := s.b.FlushForResponse
	if kind == respNone {
		flush = s.b.Flush
	}
	if err := flush(); err != nil {
		return false, s.setFatal(err)
	}
	var t respTracker
	t.Start(kind, cursor)
	if _, err := s.walkFrom(&t, walkRelay); err != nil {
		return false, s.setFatal(err)
	}
	return t.OK, nil
}

func (bf *backendFacts) setStatus(st uint16) {
	bf.status = st &^ mysql.SERVER_MORE_RESULTS_EXISTS
}

// relayPacket streams one logical backend packet to the client, renumbered
// for the client leg, and returns its first bytes (valid until the next
// call) and its length. Nothing beyond headLen bytes is held.
func (s *Session) relayPacket() (head []byte, total int, err error) {
	for first := true; ; first = false {
		n, err := s.b.ReadHeader()
		if err != nil {
			return nil, 0, err
		}
		if first && s.overridesOK() {
			if head, total, ok, err := s.relayOKWithInsertID(n); ok || err != nil {
				return head, total, err
			}
		}
		if first {
			p, err := s.b.R.Peek(min(n, wire.HeadLen))
			if err != nil {
				return nil, 0, s.b.Fail(err)
			}
			head = s.head[:copy(s.head[:], p)]
		}
		if err := wire.WriteHeader(s.c.W, n, s.c.Seq); err != nil {
			return nil, 0, s.c.Fail(err)
		}
		s.c.Seq++
		if err := s.b.CopyTo(s.c, n); err != nil {
			return nil, 0, err
		}
		total += n
		if n < wire.MaxPayload {
			return head, total, nil
		}
	}
}

// relayOKWithInsertID relays the response's first packet, of n bytes
// (its header read), when it is an OK with affected rows and insert id 0,
// with s.okInsertID as its insert id instead (RelayQueryInsertID), or,
// okReport set, any OK with s.okInsertID as its insert id (an
// AnswerWatcher's OKVerdict, settleFirst); ok false: it is not, and
// nothing was consumed. The override is spent either way.
func (s *Session) relayOKWithInsertID(n int) (head []byte, total int, ok bool, err error) {
	id, report := s.takeOKOverride()
	if n >= 1024 {
		return nil, 0, false, nil
	}
	p, perr := s.b.R.Peek(n)
	if perr != nil || len(p) < 7 || p[0] != 0x00 {
		return nil, 0, false, nil
	}
	affected, k1 := wire.LenencUint(p[1:])
	insertID, k2 := wire.LenencUint(p[1+k1:])
	if k1 == 0 || k2 == 0 || !report && (affected == 0 || insertID != 0) {
		return nil, 0, false, nil
	}
	out := okWithInsertID(s.okBuf[:0], p, id)
	s.okBuf = out
	_, _ = s.b.R.Discard(n)
	if err := wire.WriteHeader(s.c.W, len(out), s.c.Seq); err != nil {
		return nil, 0, true, s.c.Fail(err)
	}
	s.c.Seq++
	if _, err := s.c.W.Write(out); err != nil {
		return nil, 0, true, s.c.Fail(err)
	}
	return s.head[:copy(s.head[:], out)], len(out), true, nil
}

func protocolError(format string, a ...any) error {
	return &wire.IOError{Leg: "backend", Err: fmt.Errorf("protocol: "+format, a...)}
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

// walk follows one response to a query or execute (see respTracker);
// relaying streams packets without holding them, the other modes read them
// whole (proxy-originated statements, small). cursor: an execute that
// opened a cursor ends after the definitions.
func (s *Session) walk(mode int, cursor bool) (walkResult, error) {
	var t respTracker
	kind := respResult
	if cursor {
		kind = respExecute
	}
	t.Start(kind, cursor)
	return s.walkFrom(&t, mode)
}

// walkFrom reads the rest of the response t is tracking: all of it, or
// what an event loop left when it handed the session back mid-response.
func (s *Session) walkFrom(t *respTracker, mode int) (walkResult, error) {
	var r walkResult
	defer s.trimScratch()
	facts := wire.RespObserver(s.facts())
	for !t.Done() {
		var head []byte
		var n int
		var err error
		if mode == walkRelay {
			if t.AtFirst() {
				s.nextOKInsertID(t.Results) // RelayQueryInsertIDs
			}
			head, n, err = s.relayPacket()
		} else {
			head, err = s.b.ReadPacket(s.scratch, 1<<30)
			s.scratch, n = head, len(head)
		}
		if err != nil {
			return r, err
		}
		ev, err := t.Step(facts, head, n)
		if err != nil {
			return r, err
		}
		switch ev {
		case evErr:
			if mode != walkRelay {
				r.err = wire.ParseErr(head)
			} else {
				s.relayedErr(head)
			}
		case evRow:
			if mode == walkCollect {
				row, err := textRow(head, t.Cols())
				if err != nil {
					return r, err
				}
				r.rows = append(r.rows, row)
			}
		case evInfile:
			if mode != walkRelay {
				return r, protocolError("LOCAL INFILE request although CLIENT_LOCAL_FILES is off")
			}
			if s.infile.t != nil {
				if err := s.relayLocalFileVia(s.infile.t); err != nil {
					return r, err
				}
				if s.infile.err != nil {
					mode = walkDiscard // the client gets the transformer's error instead
				}
			} else if err := s.relayLocalFile(); err != nil {
				return r, err
			}
		}
	}
	if mode == walkRelay && t.Kind != respNone {
		s.markRelayed() // the command is timed when it ends (endCommand)
	}
	r.ok, r.affected, r.insertID, r.warnings = t.OK, t.Affected, t.InsertID, t.Warnings
	return r, nil
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
		l, n := wire.LenencUint(p[pos:])
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
// empty one, each streamed on to the backend as it comes. (A statement the
// interceptor sent with RelayQueryInfile has its file go through its
// transformer instead: infile.go.)
func (s *Session) relayLocalFile() error {
	if err := s.c.Flush(); err != nil {
		return err
	}
	for {
		n, err := s.c.ReadHeader()
		if err != nil {
			return err
		}
		s.cmdSeq = s.c.Seq // the client has sent; nothing of the answer has reached it
		if err := wire.WriteHeader(s.b.W, n, s.b.Seq); err != nil {
			return s.b.Fail(err)
		}
		s.b.Seq++
		if err := s.c.CopyTo(s.b, n); err != nil {
			return err
		}
		if n == 0 {
			break
		}
	}
	return s.b.Flush()
}

// relayPrepare relays a COM_STMT_PREPARE packet.
func (s *Session) relayPrepare(pkt []byte) (PrepareResult, error) {
	pr, err := s.exec.relayPrepare(s, pkt)
	if err != nil {
		return PrepareResult{}, err
	}
	return pr, s.setFatal(s.c.Flush())
}

// relayPrepareResponse relays a prepare's response (see respTracker).
func (s *Session) relayPrepareResponse() (PrepareResult, error) {
	var t respTracker
	t.Start(respPrepare, false)
	if _, err := s.walkFrom(&t, walkRelay); err != nil {
		return PrepareResult{}, err
	}
	return PrepareResult(t.Prep), nil
}
