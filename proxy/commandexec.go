package proxy

// commandExec is what differs between the two ways a session's commands
// run: on the session's own goroutine (onGoroutine), where any call may
// wait, and on an event loop (the session's lane: laneglue_linux.go, over
// package proxy/lane), where nothing may wait and a response is relayed
// as it arrives. The session holds one (Session.exec) and calls it; no
// other session code asks where it runs.
type commandExec interface {
	// mayWait is nil where a call may wait (for the backend's answer to
	// a statement, an ID source); on an event loop it is ErrWouldBlock,
	// which the caller returns before writing anything: the command then
	// runs again from the start on the session's goroutine.
	mayWait() error
	// relay sends the command pkt to the backend and relays its response
	// (of kind) to the client, then applies a. On the goroutine the
	// response has been relayed when it returns (the client leg's writer
	// may still hold its end: the caller flushes) and ok says it began
	// with OK; on a loop the command has been sent and the response is
	// relayed as it arrives (ok is false).
	relay(s *Session, pkt []byte, kind int, a afterAction) (ok bool, err error)
	// relayPrepare is relay for a COM_STMT_PREPARE, with what the
	// backend answered (on a loop: nothing yet).
	relayPrepare(s *Session, pkt []byte) (PrepareResult, error)
	// relayQueryOr is Session.RelayQueryOr; relayExecuteOr,
	// Session.RelayExecuteOr.
	relayQueryOr(s *Session, pkt []byte, w AnswerWatcher) error
	relayExecuteOr(s *Session, pkt []byte, w AnswerWatcher) error
}

// onGoroutine runs commands on the session's own goroutine, with blocking
// I/O on its legs.
type onGoroutine struct{}

func (onGoroutine) mayWait() error { return nil }

func (onGoroutine) relay(s *Session, pkt []byte, kind int, a afterAction) (bool, error) {
	ok, err := s.relayWaiting(pkt, kind)
	s.applyAfter(a, ok)
	return ok, err
}

func (onGoroutine) relayPrepare(s *Session, pkt []byte) (PrepareResult, error) {
	if s.fatal != nil {
		return PrepareResult{}, s.fatal
	}
	if err := s.b.WriteCommand(pkt); err != nil {
		return PrepareResult{}, s.setFatal(err)
	}
	if err := s.b.FlushForResponse(); err != nil {
		return PrepareResult{}, s.setFatal(err)
	}
	pr, err := s.relayPrepareResponse()
	if err != nil {
		return PrepareResult{}, s.setFatal(err)
	}
	return pr, nil
}

func (onGoroutine) relayQueryOr(s *Session, pkt []byte, w AnswerWatcher) error {
	retried, err := s.relayRetry(pkt, respResult, s.queryAfter(pkt), w)
	if err != nil || !retried {
		return err
	}
	return w.Redo(s.ctx)
}

func (onGoroutine) relayExecuteOr(s *Session, pkt []byte, w AnswerWatcher) error {
	if err := s.exec.mayWait(); err != nil {
		return err
	}
	retried, err := s.relayRetry(pkt, respExecute, afterAction{}, w)
	if err != nil || !retried {
		return err
	}
	return w.Redo(s.ctx)
}
