package proxy

import (
	"errors"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/relay"
)

// RelayQueryOr relays sql as RelayQuery does, with w watching the
// backend's answer (see AnswerWatcher): an ERR w retries is dropped and
// w.Redo answers instead. On an event loop the command is sent at once and
// the answer relayed as it comes; only an ERR to retry or a restore hands
// the session to its goroutine, where the verdict is carried out.
func (s *Session) RelayQueryOr(sql []byte, w AnswerWatcher) error {
	s.out = append(append(s.out[:0], mysql.COM_QUERY), sql...)
	defer s.trimOut()
	return s.exec.relayQueryOr(s, s.out, w)
}

// RelayQueryPacketOr is RelayQueryOr for a COM_QUERY packet the caller
// built (the command byte, then the text): a large rewritten text is sent
// without a copy of it.
func (s *Session) RelayQueryPacketOr(pkt []byte, w AnswerWatcher) error {
	if len(pkt) == 0 || pkt[0] != mysql.COM_QUERY {
		return errors.New("proxy: RelayQueryPacketOr needs a COM_QUERY packet")
	}
	return s.exec.relayQueryOr(s, pkt, w)
}

// RelayExecuteOr is RelayQueryOr for a COM_STMT_EXECUTE payload pkt
// (command byte first).
func (s *Session) RelayExecuteOr(pkt []byte, w AnswerWatcher) error {
	return s.exec.relayExecuteOr(s, pkt, w)
}

// RelayQueryRetry sends sql as RelayQuery does, but looks at the first
// packet of the backend's answer before relaying anything: when it is an
// ERR and retry(code, message) says so, the ERR is read and dropped
// (retried is true) and nothing reaches the client, so the caller can send
// the statement again (the server rolled the failed statement back);
// otherwise the answer is relayed as RelayQuery would. It runs only on the
// session's own goroutine (on an event loop it returns ErrWouldBlock
// before sending anything).
func (s blocking) RelayQueryRetry(sql []byte, retry func(code uint16, msg string) bool) (retried bool, err error) {
	if err := s.exec.mayWait(); err != nil {
		return false, err
	}
	s.out = append(append(s.out[:0], mysql.COM_QUERY), sql...)
	defer s.trimOut()
	return s.relayRetry(s.out, respResult, s.queryAfter(s.out), relay.RetryOnly(retry))
}

// RelayExecuteRetry sends the execute payload pkt as RelayExecute does,
// unless the backend's answer is an ERR that retry accepts, which is
// dropped (retried: the caller may execute again; the server rolled the
// statement back). Only on the session's own goroutine.
func (s blocking) RelayExecuteRetry(pkt []byte, retry func(code uint16, msg string) bool) (retried bool, err error) {
	if err := s.exec.mayWait(); err != nil {
		return false, err
	}
	return s.relayRetry(pkt, respExecute, afterAction{}, relay.RetryOnly(retry))
}

// relayRetry writes the command pkt and relays its answer (a response of
// kind) as w decides (AnswerWatcher), on the session's goroutine, then
// applies a. retried: the first packet was an ERR w retries, dropped;
// the caller answers instead (w.Redo, or sending again).
func (s *Session) relayRetry(pkt []byte, kind int, a afterAction, w AnswerWatcher) (retried bool, err error) {
	if s.fatal != nil {
		return false, s.fatal
	}
	if err := s.b.WriteCommand(pkt); err != nil {
		return false, s.setFatal(err)
	}
	if err := s.b.FlushForResponse(); err != nil {
		return false, s.setFatal(err)
	}
	v, err := relay.JudgeNext(s.b, w)
	if err != nil {
		return false, s.setFatal(err)
	}
	if retried, done, err := s.settleFirst(v, a); retried || done || err != nil {
		return retried, err
	}
	var t respTracker
	t.Start(kind, kind == respExecute && executeCursor(pkt))
	errs := s.relayedErrs
	if _, err := s.walkFrom(&t, walkRelay); err != nil {
		return false, s.setFatal(err)
	}
	if !t.OK && s.relayedErrs == errs {
		w.OnRows()
	}
	s.applyAfter(a, t.OK)
	return false, s.setFatal(s.c.Flush())
}

// settleFirst carries out v, a watcher's verdict on the answer's first
// packet (still unread; relay.Walker.Settle): a retry reads and drops the
// ERR (retried); a restore reads the packet, runs the statement (its
// answer dropped), then relays the ERR as it was or the OK with insert id
// 0, and applies a (done); a report has the relay give the OK the insert
// id v says.
func (s *Session) settleFirst(v relay.Verdict, a afterAction) (retried, done bool, err error) {
	if v.Act == relay.ActRelay {
		return false, false, nil
	}
	w := s.walker()
	st, err := w.Settle(v)
	if st.How == relay.SettleErr || st.How == relay.SettleOK {
		s.trimScratch()
		if st.RestoreErr != nil {
			failed := "the statement restoring the session after a failed statement failed"
			if st.How == relay.SettleOK {
				failed = "the statement restoring the session after a statement that wrote nothing failed"
			}
			s.log.Debug(failed, "err", st.RestoreErr)
		}
	}
	if err != nil {
		return false, st.How != relay.SettleRelay, s.setFatal(err)
	}
	switch st.How {
	case relay.SettleRetried:
		return true, false, nil
	case relay.SettleErr, relay.SettleOK:
		s.markRelayed()
		s.applyAfter(a, st.How == relay.SettleOK)
		return false, true, s.setFatal(s.c.Flush())
	}
	return false, false, nil
}
