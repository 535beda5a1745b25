package proxy

import (
	"errors"

	"github.com/go-mysql-org/go-mysql/mysql"
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

func (bufs *sessionBuffers) trimOut() {
	if cap(bufs.out) > keepBuf {
		bufs.out = nil
	}
}

// readBackendResult consumes a whole response from the backend without
// relaying it. I/O and protocol failures are fatal (s.fatal set); a backend
// ERR is in the result's err.
func (s *Session) readBackendResult(mode int) backendResult {
	r, err := s.walk(mode, false)
	if err != nil {
		s.setFatal(err)
	}
	return backendResult{ok: r.OK, err: r.Err}
}
