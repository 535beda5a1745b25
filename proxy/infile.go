package proxy

import (
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/relay"
)

// RelayQueryInfile is RelayQuery for a statement whose LOCAL INFILE file
// passes through t on its way to the backend. It waits for the whole
// exchange, so an event loop gets ErrWouldBlock before anything is sent.
// If t fails, the client gets t's error as the statement's answer (code
// and SQLSTATE as for an Interceptor's error) in place of the backend's.
// ok reports that the client got the backend's OK, which affected rows.
func (s blocking) RelayQueryInfile(sql []byte, t InfileTransformer) (affected uint64, ok bool, err error) {
	if err := s.exec.mayWait(); err != nil {
		return 0, false, err
	}
	s.infile.begin(t)
	s.out = append(append(s.out[:0], mysql.COM_QUERY), sql...)
	r, err := s.relayWalked(s.out)
	s.trimOut()
	terr := s.infile.end()
	if err != nil {
		return 0, false, err
	}
	if terr == nil {
		return r.Affected, r.OK, nil
	}
	code, state, msg := errorFields(terr)
	s.log.Warn("LOAD DATA refused while its file streamed", "err", msg)
	return 0, false, s.writeErrFlush(code, state, msg)
}

// relayWalked relays the COM_QUERY pkt and its whole response on the
// session's goroutine, flushed, as relayQuery does there, and returns what
// the response said.
func (s *Session) relayWalked(pkt []byte) (relay.Result, error) {
	if s.fatal != nil {
		return relay.Result{}, s.fatal
	}
	a := s.queryAfter(pkt)
	if err := s.b.WriteCommand(pkt); err != nil {
		return relay.Result{}, s.setFatal(err)
	}
	if err := s.b.FlushForResponse(); err != nil {
		return relay.Result{}, s.setFatal(err)
	}
	r, err := s.walk(walkRelay, false)
	if err != nil {
		return r, s.setFatal(err)
	}
	s.applyAfter(a, r.OK)
	return r, s.setFatal(s.c.Flush())
}
