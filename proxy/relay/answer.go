package relay

import (
	"context"

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
//     ERR (of at most MaxWatchedErr bytes) or an OK (under 1024 bytes);
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

// RetryOnly is the watcher of RelayQueryRetry and RelayExecuteRetry: an
// ERR the function accepts is dropped (the caller sends again, not Redo).
// A func type: handing it over as an AnswerWatcher allocates nothing.
type RetryOnly func(code uint16, msg string) bool

func (r RetryOnly) OnErr(code uint16, msg string) ErrVerdict {
	return ErrVerdict{Retry: r(code, msg)}
}
func (RetryOnly) Redo(context.Context) error { return nil }
func (RetryOnly) OnOK(_, insertID uint64) OKVerdict {
	return OKVerdict{InsertID: insertID}
}
func (RetryOnly) OnRows() {}

// What a watcher's verdict on an answer's first packet asks of the relay.
const (
	ActRelay      = iota // relay the packet as it is
	ActRetry             // drop the ERR, then Redo (or the caller sends again)
	ActRestoreErr        // run SQL, then relay the ERR
	ActRestoreOK         // run SQL, then relay the OK with insert id 0
	ActReport            // relay the OK with InsertID
)

// Verdict is a watcher's verdict on its answer's first packet, taken
// where the packet arrives (an event loop, or the session's goroutine) to
// where it is carried out (package proxy's settleFirst).
type Verdict struct {
	Act      uint8
	SQL      string // ActRestoreErr, ActRestoreOK
	InsertID uint64 // ActReport
}

// Judge asks w about p, the payload of the answer's whole first packet:
// an ERR (isErr) or an OK.
func Judge(w AnswerWatcher, isErr bool, p []byte) Verdict {
	if isErr {
		e := wire.ParseErr(p)
		v := w.OnErr(e.Code, e.Message)
		switch {
		case v.Retry:
			return Verdict{Act: ActRetry}
		case v.Restore != "":
			return Verdict{Act: ActRestoreErr, SQL: v.Restore}
		}
		return Verdict{}
	}
	if len(p) < 7 || p[0] != 0x00 {
		return Verdict{}
	}
	affected, k1 := wire.LenencUint(p[1:])
	insertID, k2 := wire.LenencUint(p[1+k1:])
	if k1 == 0 || k2 == 0 {
		return Verdict{}
	}
	v := w.OnOK(affected, insertID)
	switch {
	case v.Restore != "" && len(p) >= 1+k1+k2+2: // with its status
		return Verdict{Act: ActRestoreOK, SQL: v.Restore}
	case v.InsertID != insertID:
		return Verdict{Act: ActReport, InsertID: v.InsertID}
	}
	return Verdict{}
}

// MaxWatchedErr bounds the ERR packet a watcher is asked about (MariaDB's
// are at most a few hundred bytes).
const MaxWatchedErr = 2048

// PeekFirst looks at b's next packet, the first of an answer, without
// reading it: p is its payload (n bytes) when it is an ERR (isErr) of at
// most MaxWatchedErr bytes or an OK under 1024 bytes, the ones a watcher
// is asked about; else nil. err is b's failure (b.Fail).
func PeekFirst(b *wire.Leg) (isErr bool, p []byte, n int, err error) {
	h, err := b.R.Peek(5)
	if err != nil {
		return false, nil, 0, b.Fail(err)
	}
	n = int(h[0]) | int(h[1])<<8 | int(h[2])<<16
	isErr = h[4] == 0xFF
	switch {
	case h[3] != b.Seq:
		return false, nil, 0, nil
	case isErr && n <= MaxWatchedErr, h[4] == 0x00 && n < 1024:
	default:
		return false, nil, 0, nil
	}
	full, err := b.R.Peek(4 + n)
	if err != nil {
		return false, nil, 0, b.Fail(err)
	}
	return isErr, full[4:], n, nil
}

// JudgeNext asks w about b's next packet, the first of an answer, without
// reading it (PeekFirst): the zero Verdict when it is not one a watcher
// is asked about.
func JudgeNext(b *wire.Leg, w AnswerWatcher) (Verdict, error) {
	isErr, p, _, err := PeekFirst(b)
	if err != nil || p == nil {
		return Verdict{}, err
	}
	return Judge(w, isErr, p), nil
}
