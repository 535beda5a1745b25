package proxy

import (
	"bytes"

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
	if insertOnly(pkt[1:]) {
		return afterAction{kind: afterQuery}
	}
	c := s.classOf(pkt[1:])
	a := afterAction{kind: afterQuery}
	switch {
	case c.PlainWord() == sqltext.Use:
		a.isUse = true
		a.db, _ = sqltext.UseName(skipSpace(pkt[1:])[3:])
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

// insertOnly reports a text that starts with INSERT or REPLACE, white
// space aside, and holds no ';': one statement, which changes neither the
// current database nor sql_mode, so queryAfter needs no class for it. The
// engine's rendered filled INSERT is such a text, and not the command's
// own: classifying it again cost as much as the command's classification.
func insertOnly(q []byte) bool {
	i := 0
	for i < len(q) && sqltext.IsSpace(q[i]) {
		i++
	}
	if !sqltext.HasKeyword(q[i:], "INSERT") && !sqltext.HasKeyword(q[i:], "REPLACE") {
		return false
	}
	return bytes.IndexByte(q, ';') < 0
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
