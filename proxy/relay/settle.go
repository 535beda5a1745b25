package relay

import (
	"bytes"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/wire"
)

// What Settle did with the answer's first packet.
const (
	SettleRelay   = iota // nothing yet: relay the answer (an OK perhaps with the reported insert id)
	SettleRetried        // the ERR was read and dropped: the caller answers instead
	SettleErr            // restored, and the ERR relayed as it was (unflushed)
	SettleOK             // restored, and the OK relayed with insert id 0 (unflushed)
)

// Settled is what Settle did.
type Settled struct {
	How int // SettleRelay, ...
	// RestoreErr is the backend's ERR to the restoring statement (read and
	// dropped), for the log.
	RestoreErr *mysql.MyError
}

// Settle carries out v, a watcher's verdict on the answer's first packet
// (still unread): a retry reads and drops the ERR; a restore reads the
// packet, runs the statement (its answer dropped), then writes the ERR
// as it was or the OK with insert id 0 to the client, unflushed; a report
// has the walk give the OK the insert id v says.
func (w *Walker) Settle(v Verdict) (Settled, error) {
	isErr, p, n, err := PeekFirst(w.B)
	if err != nil || p == nil {
		return Settled{}, err
	}
	switch {
	case v.Act == ActRetry && isErr:
		_, _ = w.B.R.Discard(4 + n)
		w.B.Seq++
		return Settled{How: SettleRetried}, nil
	case v.Act == ActRestoreErr && isErr:
		errPkt := bytes.Clone(p)
		_, _ = w.B.R.Discard(4 + n)
		r, err := w.restoreThenAnswer(v.SQL, errPkt)
		if err != nil {
			return Settled{How: SettleErr}, err
		}
		w.Session.RelayedErr(errPkt)
		return Settled{How: SettleErr, RestoreErr: r}, nil
	case v.Act == ActRestoreOK && !isErr:
		ok := wire.OKWithInsertID(nil, p, 0)
		_, k1 := wire.LenencUint(p[1:])
		_, k2 := wire.LenencUint(p[1+k1:])
		w.Facts.SetStatus(uint16(p[1+k1+k2]) | uint16(p[2+k1+k2])<<8)
		_, _ = w.B.R.Discard(4 + n)
		r, err := w.restoreThenAnswer(v.SQL, ok)
		return Settled{How: SettleOK, RestoreErr: r}, err
	case v.Act == ActReport && !isErr:
		*w.OKID, *w.OKReport = v.InsertID, true
	}
	return Settled{}, nil
}

// restoreThenAnswer runs sql on the backend (the answer the backend gave
// the client's statement already read), drops its answer (rerr: its ERR),
// then writes answer to the client unflushed.
func (w *Walker) restoreThenAnswer(sql string, answer []byte) (rerr *mysql.MyError, err error) {
	w.B.Seq++
	if err := w.B.WriteCommand(append([]byte{mysql.COM_QUERY}, sql...)); err != nil {
		return nil, err
	}
	if err := w.B.FlushForResponse(); err != nil {
		return nil, err
	}
	var t wire.RespTracker
	t.Start(wire.RespResult, false)
	r, err := w.Walk(&t, Discard)
	if err != nil {
		return nil, err
	}
	if err := wire.WriteHeader(w.C.W, len(answer), w.C.Seq); err != nil {
		return r.Err, w.C.Fail(err)
	}
	w.C.Seq++
	if _, err := w.C.W.Write(answer); err != nil {
		return r.Err, w.C.Fail(err)
	}
	return r.Err, nil
}
