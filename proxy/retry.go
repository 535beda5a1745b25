package proxy

import (
	"bytes"
	"context"
	"errors"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/wire"
)

// AnswerWatcher is what an interceptor hands RelayQueryOr,
// RelayQueryPacketOr and RelayExecuteOr: it watches the backend's answer
// to the one statement relayed and may change what the client gets. It is
// the one seam through which an answer reaches the interceptor before the
// client: a generated key that collided with one written around the
// proxy is retried (OnErr, Redo), a statement that changed the session
// before it failed or wrote nothing has the session put back first (OnErr,
// OnOK), and an OK gets the insert id the interceptor reports (OnOK).
// Embed BaseAnswerWatcher and override what you need.
//
// Which methods run, and where:
//   - OnErr or OnOK, at most once per answer, when its first packet is an
//     ERR (of at most maxRetryErr bytes) or an OK (under 1024 bytes);
//     whichever goroutine relays the answer calls it, an event loop too,
//     so it must not block. On a loop, an ERR to retry or any restore
//     hands the session to its goroutine, which carries the verdict out
//     without asking again.
//   - Redo, only after OnErr said Retry, on the session's own goroutine
//     (it may wait), instead of relaying the ERR.
//   - OnRows, once, when the answer was a result set (RETURNING) that
//     ended without an ERR; as OnOK, on whichever goroutine relays it.
//
// Nothing is asked about an answer to any other command, nor about the
// answer's later packets.
type AnswerWatcher interface {
	// OnErr sees the answer's first packet when it is an ERR (code,
	// message) and says what to do instead of relaying it (the zero
	// ErrVerdict: relay it).
	OnErr(code uint16, msg string) ErrVerdict
	// Redo answers the client instead of a dropped ERR (OnErr's Retry),
	// typically by relaying the statement again. The server rolled the
	// failed statement back.
	Redo(ctx context.Context) error
	// OnOK sees the answer's first packet when it is an OK (rows
	// affected, the server's insert id) and says what the client gets
	// (OKVerdict{InsertID: insertID}: the OK as it is).
	OnOK(affected, insertID uint64) OKVerdict
	// OnRows is told that the answer was a result set that ended without
	// an ERR.
	OnRows()
}

// ErrVerdict is what an AnswerWatcher decides about an ERR.
type ErrVerdict struct {
	// Retry drops the ERR; Redo answers instead.
	Retry bool
	// Restore (when not Retry) is a statement of the interceptor's own to
	// run on the backend before the ERR is relayed, unchanged: the
	// statement changed the session before it failed (the filled
	// INSERT's LAST_INSERT_ID(<id>)) and this puts the session back as
	// the failure would have left it. Its answer is read and dropped (an
	// ERR of its own too). "": none.
	Restore string
}

// OKVerdict is what an AnswerWatcher decides about an OK.
type OKVerdict struct {
	// Restore is a statement of the interceptor's own to run before the
	// OK is relayed with insert id 0 (the statement wrote nothing, but
	// set something the session must not keep); its answer is dropped.
	// "": none.
	Restore string
	// InsertID is the insert id the client gets in the OK (when Restore
	// is "").
	InsertID uint64
}

// BaseAnswerWatcher relays the answer as it is; embed it and override
// what you need.
type BaseAnswerWatcher struct{}

func (BaseAnswerWatcher) OnErr(uint16, string) ErrVerdict { return ErrVerdict{} }

// Redo is never called: OnErr never says Retry.
func (BaseAnswerWatcher) Redo(context.Context) error { return nil }
func (BaseAnswerWatcher) OnOK(_, insertID uint64) OKVerdict {
	return OKVerdict{InsertID: insertID}
}
func (BaseAnswerWatcher) OnRows() {}

// retryOnly is the watcher of RelayQueryRetry and RelayExecuteRetry: an
// ERR the function accepts is dropped (the caller sends again, not Redo).
// A func type: handing it over as an AnswerWatcher allocates nothing.
type retryOnly func(code uint16, msg string) bool

func (r retryOnly) OnErr(code uint16, msg string) ErrVerdict {
	return ErrVerdict{Retry: r(code, msg)}
}
func (retryOnly) Redo(context.Context) error { return nil }
func (retryOnly) OnOK(_, insertID uint64) OKVerdict {
	return OKVerdict{InsertID: insertID}
}
func (retryOnly) OnRows() {}

// What a watcher's verdict on an answer's first packet asks of the relay.
const (
	actRelay      = iota // relay the packet as it is
	actRetry             // drop the ERR, then Redo (or the caller sends again)
	actRestoreErr        // run sql, then relay the ERR
	actRestoreOK         // run sql, then relay the OK with insert id 0
	actReport            // relay the OK with insertID
)

// firstVerdict is a watcher's verdict on its answer's first packet, taken
// where the packet arrives (an event loop, or relayRetry) to where it is
// carried out (settleFirst).
type firstVerdict struct {
	act      uint8
	sql      string // actRestoreErr, actRestoreOK
	insertID uint64 // actReport
}

// judgeFirst asks w about p, the payload of the answer's whole first
// packet: an ERR (isErr) or an OK.
func judgeFirst(w AnswerWatcher, isErr bool, p []byte) firstVerdict {
	if isErr {
		e := wire.ParseErr(p)
		v := w.OnErr(e.Code, e.Message)
		switch {
		case v.Retry:
			return firstVerdict{act: actRetry}
		case v.Restore != "":
			return firstVerdict{act: actRestoreErr, sql: v.Restore}
		}
		return firstVerdict{}
	}
	if len(p) < 7 || p[0] != 0x00 {
		return firstVerdict{}
	}
	affected, k1 := wire.LenencUint(p[1:])
	insertID, k2 := wire.LenencUint(p[1+k1:])
	if k1 == 0 || k2 == 0 {
		return firstVerdict{}
	}
	v := w.OnOK(affected, insertID)
	switch {
	case v.Restore != "" && len(p) >= 1+k1+k2+2: // with its status
		return firstVerdict{act: actRestoreOK, sql: v.Restore}
	case v.InsertID != insertID:
		return firstVerdict{act: actReport, insertID: v.InsertID}
	}
	return firstVerdict{}
}

// okWithInsertID appends to dst the OK payload p (rows affected, insert
// id, status, warnings, info; p read by judgeFirst) with insert id id.
func okWithInsertID(dst, p []byte, id uint64) []byte { return wire.OKWithInsertID(dst, p, id) }

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
	return s.relayRetry(s.out, respResult, s.queryAfter(s.out), retryOnly(retry))
}

// RelayExecuteRetry sends the execute payload pkt as RelayExecute does,
// unless the backend's answer is an ERR that retry accepts, which is
// dropped (retried: the caller may execute again; the server rolled the
// statement back). Only on the session's own goroutine.
func (s blocking) RelayExecuteRetry(pkt []byte, retry func(code uint16, msg string) bool) (retried bool, err error) {
	if err := s.exec.mayWait(); err != nil {
		return false, err
	}
	return s.relayRetry(pkt, respExecute, afterAction{}, retryOnly(retry))
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
	isErr, p, _, err := s.peekFirst()
	if err != nil {
		return false, err
	}
	var v firstVerdict
	if p != nil {
		v = judgeFirst(w, isErr, p)
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

// maxRetryErr bounds the ERR packet a watcher is asked about (MariaDB's
// are at most a few hundred bytes).
const maxRetryErr = 2048

// peekFirst looks at the backend's next packet, the first of an answer,
// without reading it: p is its payload (n bytes) when it is an ERR (isErr)
// of at most maxRetryErr bytes or an OK under 1024 bytes, the ones a
// watcher is asked about; else nil.
func (s *Session) peekFirst() (isErr bool, p []byte, n int, err error) {
	h, err := s.b.R.Peek(5)
	if err != nil {
		return false, nil, 0, s.setFatal(s.b.Fail(err))
	}
	n = int(h[0]) | int(h[1])<<8 | int(h[2])<<16
	isErr = h[4] == 0xFF
	switch {
	case h[3] != s.b.Seq:
		return false, nil, 0, nil
	case isErr && n <= maxRetryErr, h[4] == 0x00 && n < 1024:
	default:
		return false, nil, 0, nil
	}
	full, err := s.b.R.Peek(4 + n)
	if err != nil {
		return false, nil, 0, s.setFatal(s.b.Fail(err))
	}
	return isErr, full[4:], n, nil
}

// settleFirst carries out v, a watcher's verdict on the answer's first
// packet (still unread): a retry reads and drops the ERR (retried); a
// restore reads the packet, runs the statement (its answer dropped), then
// relays the ERR as it was or the OK with insert id 0, and applies a
// (done); a report has the relay give the OK the insert id v says.
func (s *Session) settleFirst(v firstVerdict, a afterAction) (retried, done bool, err error) {
	if v.act == actRelay {
		return false, false, nil
	}
	isErr, p, n, err := s.peekFirst()
	if err != nil || p == nil {
		return false, false, err
	}
	switch {
	case v.act == actRetry && isErr:
		_, _ = s.b.R.Discard(4 + n)
		s.b.Seq++
		return true, false, nil
	case v.act == actRestoreErr && isErr:
		errPkt := bytes.Clone(p)
		_, _ = s.b.R.Discard(4 + n)
		if err := s.restoreThenAnswer(v.sql, errPkt, "the statement restoring the session after a failed statement failed"); err != nil {
			return false, true, err
		}
		s.relayedErr(errPkt)
		s.markRelayed()
		s.applyAfter(a, false)
		return false, true, s.setFatal(s.c.Flush())
	case v.act == actRestoreOK && !isErr:
		ok := okWithInsertID(nil, p, 0)
		_, k1 := wire.LenencUint(p[1:])
		_, k2 := wire.LenencUint(p[1+k1:])
		s.setStatus(uint16(p[1+k1+k2]) | uint16(p[2+k1+k2])<<8)
		_, _ = s.b.R.Discard(4 + n)
		if err := s.restoreThenAnswer(v.sql, ok, "the statement restoring the session after a statement that wrote nothing failed"); err != nil {
			return false, true, err
		}
		s.markRelayed()
		s.applyAfter(a, true)
		return false, true, s.setFatal(s.c.Flush())
	case v.act == actReport && !isErr:
		s.reportOK(v.insertID)
	}
	return false, false, nil
}

// restoreThenAnswer runs sql on the backend (the answer the backend gave
// the client's statement already read), drops its answer (a failure is
// only logged, as failed), then writes answer to the client unflushed.
func (s *Session) restoreThenAnswer(sql string, answer []byte, failed string) error {
	s.b.Seq++
	if err := s.b.WriteCommand(append([]byte{mysql.COM_QUERY}, sql...)); err != nil {
		return s.setFatal(err)
	}
	if err := s.b.FlushForResponse(); err != nil {
		return s.setFatal(err)
	}
	if r := s.readBackendResult(walkDiscard); s.fatal != nil {
		return s.fatal
	} else if r.err != nil {
		s.log.Debug(failed, "err", r.err)
	}
	if err := wire.WriteHeader(s.c.W, len(answer), s.c.Seq); err != nil {
		return s.setFatal(s.c.Fail(err))
	}
	s.c.Seq++
	if _, err := s.c.W.Write(answer); err != nil {
		return s.setFatal(s.c.Fail(err))
	}
	return nil
}
