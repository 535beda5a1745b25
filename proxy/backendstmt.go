package proxy

import (
	"errors"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/wire"
)

// RelayQuery sends sql as a COM_QUERY to the backend and streams the
// response to the client. USE/SET tracking applies to sql.
func (s *Session) RelayQuery(sql []byte) error {
	s.out = append(append(s.out[:0], mysql.COM_QUERY), sql...)
	err := s.relayQuery(s.out)
	s.trimOut()
	return err
}

// RelayQueryPacket is RelayQuery for a COM_QUERY packet the caller built
// (the command byte, then the text): a large rewritten text is sent
// without a copy of it.
func (s *Session) RelayQueryPacket(pkt []byte) error {
	if len(pkt) == 0 || pkt[0] != mysql.COM_QUERY {
		return errors.New("proxy: RelayQueryPacket needs a COM_QUERY packet")
	}
	return s.relayQuery(pkt)
}

// RelayQueryInsertID relays sql as RelayQuery does, but when the answer
// is an OK with rows affected and insert id 0 (an INSERT that gave every
// key itself, into a table without AUTO_INCREMENT), the client gets
// insertID there, as MariaDB reports an AUTO_INCREMENT column's last
// explicit key. Only on the session's own goroutine (on an event loop it
// returns ErrWouldBlock before sending anything).
func (s blocking) RelayQueryInsertID(sql []byte, insertID uint64) error {
	if err := s.exec.mayWait(); err != nil {
		return err
	}
	s.okInsertID = insertID
	err := s.RelayQuery(sql)
	s.okInsertID = 0
	return err
}

// RelayQueryInsertIDs is RelayQueryInsertID for the COM_QUERY packet pkt
// (the command byte, then the text) of a multi-statement text: ids[i]
// (when not 0) is the insert id of the i-th result's OK, if it has rows
// affected and insert id 0. Only on the session's own goroutine.
func (s blocking) RelayQueryInsertIDs(pkt []byte, ids []uint64) error {
	if err := s.exec.mayWait(); err != nil {
		return err
	}
	if len(pkt) == 0 || pkt[0] != mysql.COM_QUERY {
		return errors.New("proxy: RelayQueryInsertIDs needs a COM_QUERY packet")
	}
	s.okInsertIDs = ids
	err := s.relayQuery(pkt)
	s.okInsertIDs, s.okInsertID = nil, 0
	return err
}

// RelayExecuteInsertID is RelayQueryInsertID for an execute packet.
func (s blocking) RelayExecuteInsertID(pkt []byte, insertID uint64) error {
	if err := s.exec.mayWait(); err != nil {
		return err
	}
	s.okInsertID = insertID
	err := s.RelayExecute(pkt)
	s.okInsertID = 0
	return err
}

// RelayPrepare sends sql as a COM_STMT_PREPARE and streams the prepare
// response to the client; the result says which statement id and how many
// parameters the backend gave it.
func (s blocking) RelayPrepare(sql []byte) (PrepareResult, error) {
	if err := s.exec.mayWait(); err != nil {
		return PrepareResult{}, err // the caller needs the answer now
	}
	s.out = append(append(s.out[:0], mysql.COM_STMT_PREPARE), sql...)
	pr, err := s.relayPrepare(s.out)
	s.trimOut()
	return pr, err
}

// RelayExecute sends pkt (a COM_STMT_EXECUTE payload, command byte first,
// possibly rewritten) and streams the response to the client.
func (s *Session) RelayExecute(pkt []byte) error {
	_, err := s.relay(pkt, respExecute)
	return err
}

// RelayExecuteAfter pipelines the text statement pre (e.g. SET @x=1) and
// the execute packet pkt in one write: pre's response is consumed silently
// and pkt's streamed to the client, so pre costs no extra round trip. If pre
// fails, the backend has still run the execute, with stale values: the
// client gets an ERR saying so and the session ends (the returned error is
// fatal).
func (s *Session) RelayExecuteAfter(pre, pkt []byte) error {
	if err := s.exec.mayWait(); err != nil {
		return err
	}
	if s.fatal != nil {
		return s.fatal
	}
	s.out = append(append(s.out[:0], mysql.COM_QUERY), pre...)
	if err := s.b.WriteCommand(s.out); err != nil {
		return s.setFatal(err)
	}
	preSeq := s.b.Seq
	if err := s.b.WriteCommand(pkt); err != nil {
		return s.setFatal(err)
	}
	execSeq := s.b.Seq
	s.trimOut()
	if err := s.b.FlushForResponse(); err != nil {
		return s.setFatal(err)
	}
	s.b.Seq = preSeq
	perr := s.readBackendResult(walkDiscard).err
	if s.fatal != nil {
		return s.fatal
	}
	s.b.Seq = execSeq
	if perr != nil {
		// The execute has run with whatever the variables held before, so
		// its outcome is unknown to us and must not look like a clean
		// failure: the client gets an ERR naming the problem and the
		// connection closes, as when a connection drops mid-statement.
		if s.readBackendResult(walkDiscard); s.fatal != nil {
			return s.fatal
		}
		s.log.Error("statement prepared by the proxy ran without its generated values; closing the session", "err", perr)
		s.countErr(mysql.ER_UNKNOWN_ERROR)
		_ = s.c.WritePacket(wire.ErrPacket(mysql.ER_UNKNOWN_ERROR, "HY000",
			"leafproxy: could not set the generated IDs before EXECUTE ("+perr.Error()+"); the statement may have run with stale values; closing the connection"))
		_ = s.c.Flush()
		return s.setFatal(errQuit)
	}
	if _, err := s.walk(walkRelay, executeCursor(pkt)); err != nil {
		return s.setFatal(err)
	}
	return s.setFatal(s.c.Flush())
}

func (bufs *sessionBuffers) trimOut() {
	if cap(bufs.out) > keepBuf {
		bufs.out = nil
	}
}

// readBackendResult consumes a whole response from the backend without
// relaying it. I/O and protocol failures are fatal (s.fatal set); a backend
// ERR is in the result's err.
func (s *Session) readBackendResult(mode int) walkResult {
	r, err := s.walk(mode, false)
	if err != nil {
		s.setFatal(err)
	}
	return r
}
