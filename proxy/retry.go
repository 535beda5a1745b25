package proxy

import (
	"bytes"
	"context"
	"errors"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// Retrier is what an interceptor hands RelayQueryOr: a statement whose
// answer may be an ERR to recover from rather than relay (a generated key
// that collided with one written around the proxy, say).
type Retrier interface {
	// Retry says whether the backend's ERR (code, message) is one to drop
	// and recover from. It must not block (an event loop may call it).
	Retry(code uint16, msg string) bool
	// Redo runs, on the session's own goroutine (it may wait), instead of
	// relaying a dropped ERR; it answers the client itself (typically by
	// relaying the statement again). The server rolled the failed
	// statement back.
	Redo(ctx context.Context) error
}

// Restorer is what a Retrier may also be: its statement changes the
// session before it can fail (the filled INSERT's LAST_INSERT_ID(<id>)),
// and an ERR it does not retry needs a statement of the interceptor's own
// first, which puts the session back as the failure would have left it.
// On an event loop such an ERR hands the session to its goroutine, as a
// retried one does; a statement that succeeds costs nothing more.
type Restorer interface {
	// Restore returns, for an ERR (code) that Retry declined, the
	// statement to run on the backend before the ERR is relayed ("":
	// none). Its answer is read and dropped (an ERR of its own too); the
	// client then gets the original ERR packet, unchanged. It must not
	// block (an event loop may call it).
	Restore(code uint16) string
}

// OKRestorer is what a Restorer may also be: an OK that says the
// statement wrote nothing (affected rows 0: every row an IGNOREd or
// unchanged duplicate) is relayed with insert id 0, after a statement of
// the interceptor's own that undoes what the statement set anyway.
type OKRestorer interface {
	// RestoreOK returns, for the OK of the statement (the answer's first
	// packet, affected rows 0), the statement to run before it is relayed
	// with insert id 0 ("": relay it as it is). It must not block.
	RestoreOK() string
}

// KeyReporter is what a Retrier may also be: a statement whose generated
// keys the interceptor reports, not the server (the key is a plain value
// in the text, not LAST_INSERT_ID(<id>)). Both methods are called as the
// answer arrives, on an event loop too: they must not block.
type KeyReporter interface {
	// ReportOK is given the statement's OK (its answer's first packet:
	// rows affected, the server's insert id) before it is relayed, and
	// returns the insert id the client gets there.
	ReportOK(affected, insertID uint64) uint64
	// ReportRows is told that the statement answered with a result set
	// (RETURNING) that ended without an error.
	ReportRows()
}

// reporterOf is r's KeyReporter, or nil.
func reporterOf(r Retrier) KeyReporter {
	x, _ := r.(KeyReporter)
	return x
}

// reportedOK: the OK payload p (rows affected, insert id, status,
// warnings, info) with the insert id rep gives, appended to dst; changed
// false when it is the one p has (or p is no OK it can read).
func reportedOK(rep KeyReporter, p, dst []byte) (out []byte, changed bool) {
	if len(p) < 7 || p[0] != 0x00 {
		return dst, false
	}
	affected, k1 := lenenc(p[1:])
	insertID, k2 := lenenc(p[1+k1:])
	if k1 == 0 || k2 == 0 {
		return dst, false
	}
	id := rep.ReportOK(affected, insertID)
	if id == insertID {
		return dst, false
	}
	out = append(dst, 0x00)
	out = mysql.AppendLengthEncodedInteger(out, affected)
	out = mysql.AppendLengthEncodedInteger(out, id)
	return append(out, p[1+k1+k2:]...), true
}

// okRestore: r is an OKRestorer with a statement to run before the OK p
// (the whole packet's payload).
func okRestore(r Retrier, p []byte) string {
	x, ok := r.(OKRestorer)
	if !ok || len(p) < 7 || p[0] != 0x00 {
		return ""
	}
	if affected, k := lenenc(p[1:]); k == 0 || affected != 0 {
		return ""
	}
	return x.RestoreOK()
}

// restorer is r's Restore, or nil.
func restorer(r Retrier) func(uint16) string {
	if x, ok := r.(Restorer); ok {
		return x.Restore
	}
	return nil
}

// RelayQueryOr relays sql as RelayQuery does, except that when the
// backend answers with an ERR that r.Retry accepts, the ERR is dropped and
// r.Redo answers instead. On an event loop the command is sent at once and
// the answer relayed as it comes; only an ERR as its first packet hands the
// session to its goroutine, where the decision and Redo are made.
func (s *Session) RelayQueryOr(sql []byte, r Retrier) error {
	s.out = append(append(s.out[:0], mysql.COM_QUERY), sql...)
	defer s.trimOut()
	return s.exec.relayQueryOr(s, s.out, r)
}

// RelayQueryPacketOr is RelayQueryOr for a COM_QUERY packet the caller
// built (the command byte, then the text): a large rewritten text is sent
// without a copy of it.
func (s *Session) RelayQueryPacketOr(pkt []byte, r Retrier) error {
	if len(pkt) == 0 || pkt[0] != mysql.COM_QUERY {
		return errors.New("proxy: RelayQueryPacketOr needs a COM_QUERY packet")
	}
	return s.exec.relayQueryOr(s, pkt, r)
}

// RelayExecuteOr is RelayQueryOr for a COM_STMT_EXECUTE payload pkt
// (command byte first).
func (s *Session) RelayExecuteOr(pkt []byte, r Retrier) error {
	return s.exec.relayExecuteOr(s, pkt, r)
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
	return s.relayRetry(s.out, respResult, s.queryAfter(s.out), retry, nil, nil)
}

// RelayExecuteRetry sends the execute payload pkt as RelayExecute does,
// unless the backend's answer is an ERR that retry accepts, which is
// dropped (retried: the caller may execute again; the server rolled the
// statement back). Only on the session's own goroutine.
func (s blocking) RelayExecuteRetry(pkt []byte, retry func(code uint16, msg string) bool) (retried bool, err error) {
	if err := s.exec.mayWait(); err != nil {
		return false, err
	}
	return s.relayRetry(pkt, respExecute, afterAction{}, retry, nil, nil)
}

// relayRetry writes the command pkt, drops its answer if that is an ERR
// retry accepts, and otherwise relays it (a response of kind), then
// applies a; an ERR that restore (if not nil) answers with a statement has
// that statement run before it is relayed (Restorer), and so has an OK
// that ok (if not nil) answers with one (OKRestorer).
func (s *Session) relayRetry(pkt []byte, kind int, a afterAction, retry func(code uint16, msg string) bool, restore func(uint16) string, ok Retrier) (bool, error) {
	if s.fatal != nil {
		return false, s.fatal
	}
	if err := s.b.writeCommand(pkt); err != nil {
		return false, s.setFatal(err)
	}
	if err := s.b.flushForResponse(); err != nil {
		return false, s.setFatal(err)
	}
	if retried, err := s.dropRetryable(retry); err != nil || retried {
		return retried, err
	}
	if restore != nil {
		if done, err := s.restoreBeforeErr(restore, a); done || err != nil {
			return false, err
		}
	}
	if ok != nil {
		if done, err := s.restoreBeforeOK(ok, a); done || err != nil {
			return false, err
		}
	}
	var t respTracker
	t.start(kind, kind == respExecute && executeCursor(pkt))
	rep := reporterOf(ok)
	s.okReport = rep
	errs := s.relayedErrs
	if _, err := s.walkFrom(&t, walkRelay); err != nil {
		return false, s.setFatal(err)
	}
	s.okReport = nil
	if rep != nil && !t.ok && s.relayedErrs == errs {
		rep.ReportRows()
	}
	s.applyAfter(a, t.ok)
	return false, s.setFatal(s.c.flush())
}

// maxRetryErr bounds the ERR packet dropRetryable looks at (MariaDB's are
// at most a few hundred bytes).
const maxRetryErr = 2048

// dropRetryable reads the backend's next packet if it is an ERR that
// retry accepts; anything else stays unread.
func (s *Session) dropRetryable(retry func(code uint16, msg string) bool) (bool, error) {
	h, err := s.b.r.Peek(5)
	if err != nil {
		return false, s.setFatal(s.b.fail(err))
	}
	n := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
	if h[4] != 0xFF || h[3] != s.b.seq || n > maxRetryErr {
		return false, nil
	}
	p, err := s.b.r.Peek(4 + n)
	if err != nil {
		return false, s.setFatal(s.b.fail(err))
	}
	e := parseErr(p[4:])
	if !retry(e.Code, e.Message) {
		return false, nil
	}
	_, _ = s.b.r.Discard(4 + n)
	s.b.seq++
	return true, nil
}

// restoreBeforeErr: when the backend's next packet is an ERR (the whole
// answer) for which restore names a statement, it reads the ERR, runs that
// statement (its answer dropped), then relays the ERR as it was and
// applies a (done). Anything else stays unread (not done).
func (s *Session) restoreBeforeErr(restore func(uint16) string, a afterAction) (done bool, err error) {
	h, err := s.b.r.Peek(5)
	if err != nil {
		return false, s.setFatal(s.b.fail(err))
	}
	n := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
	if h[4] != 0xFF || h[3] != s.b.seq || n > maxRetryErr {
		return false, nil
	}
	p, err := s.b.r.Peek(4 + n)
	if err != nil {
		return false, s.setFatal(s.b.fail(err))
	}
	sql := restore(parseErr(p[4:]).Code)
	if sql == "" {
		return false, nil
	}
	errPkt := bytes.Clone(p[4:])
	_, _ = s.b.r.Discard(4 + n)
	if err := s.restoreThenAnswer(sql, errPkt, "the statement restoring the session after a failed statement failed"); err != nil {
		return true, err
	}
	s.relayedErr(errPkt)
	s.relayed = true
	s.applyAfter(a, false)
	return true, s.setFatal(s.c.flush())
}

// restoreBeforeOK: when the backend's next packet is an OK (the whole
// answer: one statement) for which r names a statement (okRestore), it
// reads the OK, runs that statement (its answer dropped), then relays the
// OK with insert id 0 and applies a (done). Anything else stays unread.
func (s *Session) restoreBeforeOK(r Retrier, a afterAction) (done bool, err error) {
	h, err := s.b.r.Peek(5)
	if err != nil {
		return false, s.setFatal(s.b.fail(err))
	}
	n := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
	if h[4] != 0x00 || h[3] != s.b.seq || n >= 1024 {
		return false, nil
	}
	p, err := s.b.r.Peek(4 + n)
	if err != nil {
		return false, s.setFatal(s.b.fail(err))
	}
	sql := okRestore(r, p[4:])
	if sql == "" {
		return false, nil
	}
	body := p[4:]
	affected, k1 := lenenc(body[1:])
	_, k2 := lenenc(body[1+k1:])
	if k2 == 0 || len(body) < 1+k1+k2+2 {
		return false, nil
	}
	ok := append([]byte{0x00}, mysql.AppendLengthEncodedInteger(nil, affected)...)
	ok = append(ok, 0) // insert id 0
	ok = append(ok, body[1+k1+k2:]...)
	s.setStatus(uint16(body[1+k1+k2]) | uint16(body[2+k1+k2])<<8)
	_, _ = s.b.r.Discard(4 + n)
	if err := s.restoreThenAnswer(sql, ok, "the statement restoring the session after a statement that wrote nothing failed"); err != nil {
		return true, err
	}
	s.relayed = true
	s.applyAfter(a, true)
	return true, s.setFatal(s.c.flush())
}

// restoreThenAnswer runs sql on the backend (the answer the backend gave
// the client's statement already read), drops its answer (a failure is
// only logged, as failed), then writes answer to the client unflushed.
func (s *Session) restoreThenAnswer(sql string, answer []byte, failed string) error {
	s.b.seq++
	if err := s.b.writeCommand(append([]byte{mysql.COM_QUERY}, sql...)); err != nil {
		return s.setFatal(err)
	}
	if err := s.b.flushForResponse(); err != nil {
		return s.setFatal(err)
	}
	if r := s.readBackendResult(walkDiscard); s.fatal != nil {
		return s.fatal
	} else if r.err != nil {
		s.log.Debug(failed, "err", r.err)
	}
	if err := writeHeader(s.c.w, len(answer), s.c.seq); err != nil {
		return s.setFatal(s.c.fail(err))
	}
	s.c.seq++
	if _, err := s.c.w.Write(answer); err != nil {
		return s.setFatal(s.c.fail(err))
	}
	return nil
}
